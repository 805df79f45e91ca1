/**
 * @module The code-review example's linter: a real command-line program (`node -e` on this
 * source), run per turn by a CLI adapter. It reads the thread (its prompt) on stdin, takes
 * the last code block the coder wrote, prints how many lines it checked, then what it found
 * as JSON: `{ "ok": boolean, "problems": [string] }`. Kept as source text rather than a file
 * beside this module so that it runs the same from the repository (tsx) and from the
 * compiled package (`dist/`, which holds only compiled TypeScript).
 */

/** The linter's source, for `node -e`. */
export const LINT_PROGRAM = `'use strict';
let text = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => (text += chunk));
process.stdin.on('end', () => {
  const blocks = [...text.matchAll(/\`\`\`[a-z]*\\n([\\s\\S]*?)\`\`\`/g)].map((m) => m[1]);
  const code = blocks.at(-1) ?? '';
  const problems = [];
  if (code.trim() === '') problems.push('no code block to lint');
  if (/\\bvar\\b/.test(code)) problems.push('use const or let, not var');
  if (/==[^=]/.test(code.replace(/===/g, ''))) problems.push('use === instead of ==');
  process.stdout.write(\`checked \${code.split('\\n').filter(Boolean).length} lines\\n\`);
  process.stdout.write(\`\${JSON.stringify({ ok: problems.length === 0, problems })}\\n\`);
});
`;
