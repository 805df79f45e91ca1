/**
 * Workflows on a fleet of processes (issue 21: "a role may carry placement, so a fleet runs
 * workflows too"): `axon serve --redis` runs the config's workflow, its inline role's turns
 * in the API process and its `{ pool: cpu }` role's on the `axon worker --pool cpu`
 * replicas, which registered the workflow's agents from the same config. A replica killed
 * with SIGKILL during a pool turn leaves it to the other replica, and the thread completes.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { FAST_REPLICA_FLAGS, useTestFleet, type WorkerProcess } from '../support/fleet.js';
import { parseSse } from '../support/server.js';

const fleet = useTestFleet(
  'fleet-workflows',
  [
    'workflows:',
    '  triage:',
    '    max_rounds: 4',
    '    roles:',
    '      writer: { engine: scripted, prompt: "You write.", max_tokens: 8 }',
    '      judge: { engine: scripted, prompt: "You judge.", max_tokens: 60, placement: { pool: cpu } }',
    '    moderator: { order: [writer, judge] }',
    '',
  ].join('\n'),
);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = (file: string, args: string[]) =>
  promisify(execFile)(file, args, { cwd: ROOT, env: { ...process.env, NODE_OPTIONS: '' } });
const FAST = FAST_REPLICA_FLAGS;

interface Thread {
  thread_id: string;
  status: string;
  end_reason: string | null;
  turns: { n: number; role: string; step_id: string; status: string }[];
}
interface Step {
  placement: string;
  placement_decision: { pool_id: string } | null;
}

async function json(url: string, init?: RequestInit): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, init);
  return { status: res.status, body: await res.json() };
}

/** The replica that started step `stepId` (its `started` frame). */
async function replicaOf(url: string, stepId: string): Promise<string | undefined> {
  const text = await (await fetch(`${url}/v1/steps/${stepId}/stream`)).text();
  const started = parseSse(text).frames.find((f) => f.event === 'started');
  return (started?.data as { replica_id?: string } | undefined)?.replica_id;
}

describe('workflows on a fleet of processes', () => {
  it("runs the inline role's turns in the API process and the pool role's on its replicas; a replica killed mid-turn leaves the turn to another", async () => {
    const env = { AXON_SCRIPTED_TOKEN_MS: '25' };
    const api = await fleet.api(env);
    const workers: WorkerProcess[] = [
      await fleet.worker('cpu', ['cpu'], FAST, env),
      await fleet.worker('cpu', ['cpu'], FAST, env),
    ];
    const listed = (await json(`${api.url}/v1/workflows`)).body as {
      name: string;
      roles: unknown[];
    }[];
    expect(listed.find((w) => w.name === 'triage')?.roles).toEqual([
      { name: 'writer', kind: 'engine', placement: 'inline' },
      { name: 'judge', kind: 'engine', placement: 'pool:cpu' },
    ]);
    const made = await json(`${api.url}/v1/workflows/triage/threads`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Is the build green?' }),
    });
    expect(made.status).toBe(201);
    const id = (made.body as Thread).thread_id;
    // Once the first judge turn streams, the replica running it is killed.
    let killed: WorkerProcess | null = null;
    const stream = await fetch(`${api.url}/v1/threads/${id}/stream`);
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      const frames = parseSse(text).frames;
      const judgeTokens = frames.filter(
        (f) => f.event === 'token' && (f.id ?? '').startsWith('2.'),
      );
      if (killed === null && judgeTokens.length >= 3) {
        const t = (await json(`${api.url}/v1/threads/${id}`)).body as Thread;
        const replica = await replicaOf(api.url, t.turns[1]?.step_id ?? '');
        killed = workers.find((w) => w.replicaId === replica) ?? null;
        expect(killed).not.toBeNull();
        killed?.child.kill('SIGKILL');
      }
    }
    expect(killed).not.toBeNull();
    const t = (await json(`${api.url}/v1/threads/${id}`)).body as Thread;
    expect(t.status).toBe('completed');
    expect(t.end_reason).toBe('max_rounds');
    expect(t.turns.map((x) => [x.role, x.status])).toEqual([
      ['writer', 'succeeded'],
      ['judge', 'succeeded'],
      ['writer', 'succeeded'],
      ['judge', 'succeeded'],
    ]);
    for (const turn of t.turns) {
      const step = (await json(`${api.url}/v1/steps/${turn.step_id}`)).body as Step;
      if (turn.role === 'writer') {
        expect(step.placement).toBe('inline');
        expect(workers.map((w) => w.replicaId)).not.toContain(
          await replicaOf(api.url, turn.step_id),
        );
      } else {
        expect(step.placement).toBe('pool');
        expect(step.placement_decision?.pool_id).toBe('cpu');
      }
    }
    // The second judge turn ran on the replica left.
    const survivor = workers.find((w) => w !== killed);
    expect(await replicaOf(api.url, t.turns[3]?.step_id ?? '')).toBe(survivor?.replicaId);
    // The operator sees where each role runs.
    const { stdout } = await run(process.execPath, [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'workflow',
      'status',
      'triage',
      '--url',
      api.url,
    ]);
    expect(stdout).toContain('  roles        writer (engine), judge (engine, pool:cpu)\n');
  });
});
