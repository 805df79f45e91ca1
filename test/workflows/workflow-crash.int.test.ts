/**
 * A thread outlives its process: a process running a thread is killed (SIGKILL) during turn
 * 2; a new runtime on the same SQLite file finds the thread — left to the dead process until
 * its lease (kept in the file) runs out, then taken — marks it crashed and resumes it from
 * its last finished turn (turn 1 is not asked again) — or, when the workflow does not allow
 * it, leaves it crashed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { THREAD_FACT } from '../../src/workflows/thread-records.js';
import { WorkflowEngine } from '../../src/workflows/workflow-engine.js';
import { CRASH_LEASE_MS, crashSetup } from '../fixtures/workflow-thread.js';
import type { ThreadView } from '../../src/workflows/thread-records.js';

/** Waits (polling the store) until thread `id` has ended: its view. */
/**
 * The thread once its status is none of `passing` (by default the live ones; a thread that
 * resumes passes through `crashed` too).
 */
async function ended(
  engine: WorkflowEngine,
  id: string,
  passing: readonly string[] = ['queued', 'started'],
): Promise<ThreadView> {
  for (let i = 0; i < 400; i++) {
    const t = await engine.thread(id);
    if (t && !passing.includes(t.status)) return t;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`thread ${id} did not end`);
}

const dir = mkdtempSync(join(tmpdir(), 'axon-wf-crash-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});
const fixture = fileURLToPath(new URL('../fixtures/workflow-thread.ts', import.meta.url));

/** Starts the fixture and kills it once turn 2 has begun; the thread's id. */
function runAndKill(db: string, resume: 'yes' | 'no'): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, db, resume], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      // TURN 1 is printed when turn 1 is known (started): kill once turn 2 has started.
      if (/^TURN 2$/m.test(out)) child.kill('SIGKILL');
    });
    child.on('exit', (code, signal) => {
      const id = /^THREAD (\S+)$/m.exec(out)?.[1];
      if (signal !== 'SIGKILL' || !id)
        reject(new Error(`the thread process ended ${code ?? signal}: ${err}`));
      else resolve(id);
    });
  });
}

const calls = (db: string): string[] => readFileSync(`${db}.calls`, 'utf8').trim().split('\n');

describe('a thread after its process was killed', () => {
  it('is found, marked crashed and resumed from its last finished turn', async () => {
    const db = join(dir, 'resume.db');
    const id = await runAndKill(db, 'yes');
    expect(calls(db)).toEqual(['coder 1', 'reviewer 2']);
    const { rt, workflow } = crashSetup(db, true, 0);
    const engine = new WorkflowEngine(rt, [workflow], { leaseMs: CRASH_LEASE_MS });
    try {
      const before = await engine.thread(id);
      expect(before?.status).toBe('started');
      // The killed process's lease is in the file: the thread is its until the lease runs
      // out; the engine looks again every lease time and then takes it.
      const recovered = await engine.recover();
      expect(recovered).toEqual({ resumed: [], crashed: [], requeued: [], elsewhere: [id] });
      const t = await ended(engine, id, ['queued', 'started', 'crashed']);
      expect(t.status).toBe('completed');
      expect(t.turns.map((x) => x.role)).toEqual(['coder', 'reviewer', 'coder', 'reviewer']);
      // Turn 1 stood; turn 2 ran again from its start; 3 and 4 ran once.
      expect(calls(db)).toEqual(['coder 1', 'reviewer 2', 'reviewer 2', 'coder 3', 'reviewer 4']);
      const lifecycle = (await rt.listFacts(id, { type: THREAD_FACT })).map(
        (f) => (f.data as { status: string }).status,
      );
      expect(lifecycle).toEqual(['queued', 'started', 'crashed', 'started', 'completed']);
    } finally {
      await engine.close();
      await rt.close();
    }
  });

  it('is left crashed when its workflow does not resume', async () => {
    const db = join(dir, 'no-resume.db');
    const id = await runAndKill(db, 'no');
    const { rt, workflow } = crashSetup(db, false, 0);
    const engine = new WorkflowEngine(rt, [workflow], { leaseMs: CRASH_LEASE_MS });
    try {
      // Past the dead process's lease: taken at once, and left crashed.
      await new Promise((resolve) => setTimeout(resolve, CRASH_LEASE_MS));
      expect(await engine.recover()).toEqual({
        resumed: [],
        crashed: [id],
        requeued: [],
        elsewhere: [],
      });
      const t = await ended(engine, id);
      expect(t).toMatchObject({ status: 'crashed', end_reason: 'crashed' });
      expect((await rt.getRun(id))?.status).toBe('failed');
    } finally {
      await engine.close();
      await rt.close();
    }
  });
});
