// The no-op behaviours of bench:container: a container agent's handler, and the program a
// `process` placement's subprocess agent runs per invocation (it answers one JSON value).
import process from 'node:process';

export function noop() {
  return 1;
}

if (process.argv[2] === '--subprocess') {
  process.stdin.resume();
  process.stdin.on('end', () => {
    process.stdout.write('1');
  });
}
