// The no-op behaviour of bench:container: a container agent's handler, run in a container
// by container placement and in a plain child process by the pipe peer (pipe-peer.ts).
export function noop() {
  return 1;
}
