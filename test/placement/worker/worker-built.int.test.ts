import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const BUILT_RUNTIME = fileURLToPath(
  new URL('../../../dist/src/runtime/runtime.js', import.meta.url),
);
const PLAIN_AGENTS = fileURLToPath(new URL('../../fixtures/plain-agents.mjs', import.meta.url));

function run(
  command: string,
  args: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    delete env['NODE_OPTIONS'];
    const child = spawn(command, [...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => {
      resolve({ code, stdout, stderr });
    });
  });
}

describe('worker placement from compiled JavaScript (dist/, no TypeScript loader)', () => {
  beforeAll(async () => {
    if (existsSync(BUILT_RUNTIME)) return;
    const build = await run('npm', ['run', 'build']);
    expect(build.code, `npm run build failed:\n${build.stdout}\n${build.stderr}`).toBe(0);
  }, 120_000);

  it('runs a JavaScript agent module on a worker thread of the built pool, whatever the host’s options', async () => {
    const script = `
      import { createRuntime } from './dist/src/runtime/runtime.js';
      import { defineAgent } from './dist/src/actors/define-agent.js';
      import { createLogger } from './dist/src/observability/logger.js';
      const hello = defineAgent({
        name: 'hello', placement: 'worker', module: ${JSON.stringify(PLAIN_AGENTS)}, export: 'hello',
      });
      const rt = createRuntime({ agents: [hello], logger: createLogger({ level: 'silent' }) });
      const r = await rt.invoke('hello', 'compiled');
      console.log(JSON.stringify({ status: r.status, output: r.output, error: r.error?.message }));
      await rt.close();
    `;
    // --expose-gc: a host option threads cannot take must not stop the pool.
    const exit = await run('node', ['--expose-gc', '--input-type=module', '--eval', script]);
    expect(exit.stderr).toBe('');
    expect(exit.code).toBe(0);
    expect(JSON.parse(exit.stdout)).toEqual({
      status: 'success',
      output: { text: 'hello compiled', depth: 1, tsx: false },
    });
  });
});
