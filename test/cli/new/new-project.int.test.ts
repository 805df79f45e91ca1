/**
 * `axon new` end to end (issue 48): a generated project, installed against this checkout
 * packed as npm packs it, passes its own tests and serves. One project for every `it`, in
 * order: install the tarball → `axon generate` an agent, a tool and a workflow with the
 * installed CLI → `npm run typecheck` → `npm test` → `npm start` serves the project's agent
 * over the HTTP API (API.md: a flow, a run, an `agent` step) → `axon list`.
 *
 * The package is built apart from the checkout's dist/ (other tests rebuild that one), into
 * the folder npm packs: `tsc -p tsconfig.build.json` and the two bundles of `npm run build`.
 * `npm install` reads npm's cache first (`--prefer-offline`); the registry is asked only for
 * what the cache lacks. better-sqlite3's install script (which the project's `allowScripts`
 * lets npm run) finds its binding as a local prebuild made from the one this checkout built —
 * as it would download one from GitHub — instead of compiling SQLite for minutes; a version or
 * Node ABI the checkout's does not match is compiled.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject } from '../../../src/cli/new/new-project.js';
import { bundleContainerProgram } from '../../../src/placement/container/container-bundle.js';
import { writeUiBundle } from '../../../src/server/ui/ui-bundle.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const MINUTE = 60_000;

/** How a command ended. */
interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * The environment of the project's commands: this one without vitest's and axon's test
 * variables (the project's own vitest must not think it runs inside this one).
 */
function projectEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(VITEST|AXON_|NODE_OPTIONS$|NODE_ENV$|TEST$)/.test(key)) continue;
    env[key] = value;
  }
  return { ...env, NO_COLOR: '1', ...extra };
}

/**
 * The process groups still running: each command's, and `npm start`'s. A step that fails or
 * times out leaves them; `afterAll` ends them before it removes the folder they work in.
 */
const running = new Set<ChildProcess>();

/** Starts `command args` in `cwd` as its own process group (npm, its shells, node-gyp, serve). */
function start(command: string, args: readonly string[], cwd: string, env = projectEnv()) {
  const child = spawn(command, args, {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  running.add(child);
  child.once('close', () => running.delete(child));
  return child;
}

/** Ends `child`'s process group with `signal` and resolves when its pipes have closed. */
async function stop(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  // Until 'close', some process of the group may still hold its pipes, though npm has exited.
  if (child.pid === undefined || !running.has(child)) return;
  const closed = new Promise((resolve) => child.once('close', resolve));
  try {
    process.kill(-child.pid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
  await closed;
}

/** Runs `command args` in `cwd` to its end. */
function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env = projectEnv(),
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = start(command, args, cwd, env);
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

/**
 * Writes into `dir` this checkout's better-sqlite3 binding as prebuild-install names a prebuild
 * (`better-sqlite3-v12.11.1-node-v115-linux-x64.tar.gz`, holding build/Release/) and returns
 * the variable that points its install script there.
 */
async function localPrebuild(dir: string): Promise<NodeJS.ProcessEnv> {
  const from = join(ROOT, 'node_modules', 'better-sqlite3');
  const { version } = JSON.parse(readFileSync(join(from, 'package.json'), 'utf8')) as {
    version: string;
  };
  mkdirSync(dir, { recursive: true });
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  const tar = await run(
    'tar',
    ['-czf', join(dir, name), '-C', from, 'build/Release/better_sqlite3.node'],
    ROOT,
  );
  expect(tar.code, told('tar', tar)).toBe(0);
  return { npm_config_better_sqlite3_local_prebuilds: dir };
}

/** `what` failed: its output, for the assertion's message. */
const told = (what: string, ran: Ran): string =>
  `${what} exited ${String(ran.code)}:\n${ran.stdout}\n${ran.stderr}`;

let work: string;
let project: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'axon-new-e2e-'));
  const stage = join(work, 'package');
  const tsc = await run(
    'npx',
    [
      'tsc',
      '-p',
      'tsconfig.build.json',
      '--outDir',
      join(stage, 'dist'),
      '--tsBuildInfoFile',
      join(work, 'tsbuildinfo'),
    ],
    ROOT,
  );
  expect(tsc.code, told('tsc', tsc)).toBe(0);
  await bundleContainerProgram(`${join(stage, 'dist')}/`);
  await writeUiBundle(join(stage, 'dist', 'ui'));
  cpSync(join(ROOT, 'package.json'), join(stage, 'package.json'));
  cpSync(join(ROOT, 'bin'), join(stage, 'bin'), { recursive: true });
  const pack = await run(
    'npm',
    ['pack', stage, '--ignore-scripts', '--pack-destination', work, '--json'],
    work,
  );
  expect(pack.code, told('npm pack', pack)).toBe(0);
  const [packed] = JSON.parse(pack.stdout) as { filename: string }[];
  const tarball = join(work, packed?.filename ?? '');

  // axon new, as the CLI runs it (the installed CLI does the rest).
  const written: string[] = [];
  const made = newProject(
    { name: 'my-service', cwd: work },
    {
      stdout: { write: (t: string) => written.push(t) },
      stderr: { write: (t: string) => written.push(t) },
    },
  );
  expect(made, written.join('')).toBe(0);
  project = join(work, 'my-service');
  const install = await run(
    'npm',
    ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund'],
    project,
    projectEnv(await localPrebuild(join(work, 'prebuilds'))),
  );
  expect(install.code, told('npm install', install)).toBe(0);
}, 20 * MINUTE);

afterAll(async () => {
  await Promise.all([...running].map((child) => stop(child, 'SIGKILL')));
  rmSync(work, { recursive: true, force: true });
}, MINUTE);

describe('a project made by axon new, installed against this checkout', () => {
  it(
    'depends on the packed axon, and its installed axon generate adds an agent, a tool and a workflow; the project typechecks',
    async () => {
      const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as {
        dependencies: Record<string, string>;
      };
      expect(pkg.dependencies['axon']).toMatch(/^file:.*axon-\d+\.\d+\.\d+\.tgz$/);
      for (const [kind, name] of [
        ['agent', 'triage'],
        ['tool', 'word-count'],
        ['workflow', 'review'],
      ] as const) {
        const generated = await run('npx', ['axon', 'generate', kind, name], project);
        expect(generated.code, told(`axon generate ${kind}`, generated)).toBe(0);
      }
      const typecheck = await run('npm', ['run', 'typecheck'], project);
      expect(typecheck.code, told('npm run typecheck', typecheck)).toBe(0);
    },
    5 * MINUTE,
  );

  it(
    "npm test passes: the project's tests and the generated ones, on the scripted engine",
    async () => {
      const tested = await run('npm', ['test'], project);
      expect(tested.code, told('npm test', tested)).toBe(0);
      // assistant (3), triage (1), word-count (2), review (1).
      expect(tested.stdout).toMatch(/Test Files\s+4 passed \(4\)/);
      expect(tested.stdout).toMatch(/Tests\s+7 passed \(7\)/);
    },
    5 * MINUTE,
  );

  it(
    'npm start builds and serves: its agent, asked through the HTTP API, answers from its tool and its delegate',
    async () => {
      // Its own process group: npm, the shell and axon serve stop together.
      const server = start('npm', ['start'], project, projectEnv({ AXON_PORT: '0' }));
      let out = '';
      server.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
      server.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
      // 'close': npm has exited and every process of the group holding its pipes too.
      const exited = new Promise<number | null>((resolve) => server.once('close', resolve));
      const url = await new Promise<string>((resolve, reject) => {
        const check = (): void => {
          const m = /listening on (http:\/\/\S+)/.exec(out);
          if (m?.[1]) resolve(m[1]);
        };
        server.stdout.on('data', check);
        void exited.then((code) => {
          reject(new Error(`npm start exited (${String(code)}) before it served:\n${out}`));
        });
      });
      expect(out).toContain('axon serve: workflows: review, code-review');

      const post = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
        const res = await fetch(`${url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        expect(res.status, `POST ${path}`).toBeLessThan(300);
        return (await res.json()) as Record<string, unknown>;
      };
      const ask = async (agent: string, message: string): Promise<Record<string, unknown>> => {
        const { flow_id } = await post('/v1/flows', { name: agent });
        const { run_id } = await post(`/v1/flows/${String(flow_id)}/runs`, {});
        const { step_id } = await post(`/v1/runs/${String(run_id)}/steps`, {
          type: 'agent',
          client_token: 'q1',
          input: { agent, message },
        });
        for (;;) {
          const step = (await (await fetch(`${url}/v1/steps/${String(step_id)}`)).json()) as Record<
            string,
            unknown
          >;
          if (step['status'] !== 'queued' && step['status'] !== 'running') return step;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      };

      const answered = await ask('assistant', 'How do budgets work?');
      expect(answered['status']).toBe('succeeded');
      const output = answered['output'] as { answer: unknown; sources: unknown };
      // The tool found the note on budgets; the researcher wrote from it with the scripted engine.
      expect(output.sources).toEqual(['budgets']);
      expect(typeof output.answer).toBe('string');
      expect((output.answer as string).split(' ').length).toBeGreaterThan(5);

      const generated = await ask('triage', 'Is it done?');
      expect(generated['status']).toBe('succeeded');
      expect(typeof generated['output']).toBe('string');

      const workflows = await (await fetch(`${url}/v1/workflows`)).text();
      expect(workflows).toContain('"review"');

      await stop(server, 'SIGTERM');
      expect(out).toContain('axon serve: stopped');
    },
    5 * MINUTE,
  );

  it(
    "axon list prints the project's agents, tools and workflows with their lines, beside the examples'",
    async () => {
      const listed = await run('npx', ['axon', 'list'], project);
      expect(listed.code, told('axon list', listed)).toBe(0);
      for (const row of [
        /^agent +assistant +axon\.yaml line 11 +Answers a question/m,
        /^agent +researcher +axon\.yaml line 12 /m,
        /^agent +triage +axon\.yaml line 13 /m,
        /^tool +search_notes +axon\.yaml line 15 /m,
        /^tool +word_count +axon\.yaml line 16 /m,
        /^workflow +review +axon\.yaml line 18 /m,
        /^agent +planner +examples\/trip-planner /m,
        /^example +trip-planner +examples\/trip-planner /m,
      ]) {
        expect(listed.stdout).toMatch(row);
      }
    },
    2 * MINUTE,
  );
});
