import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import { StepLifecycle } from '../../src/actors/step-lifecycle.js';
import { ConflictError } from '../../src/errors/conflict-error.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import type { FactRecord, StepRecord } from '../../src/store/records.js';
import { sqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { emptyProvenance, type BudgetUsage, type StepEvent } from '../../src/streams/events.js';
import { quietRuntime } from '../support/runtime.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-resume-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const fixture = fileURLToPath(new URL('../fixtures/resumable-run.ts', import.meta.url));

interface RunDump {
  readonly run_id: string;
  /** The checkpoint the resume rebuilt interrupted steps from (resume phase). */
  readonly checkpoint_id: string | null;
  readonly status: string;
  readonly budget_usage: BudgetUsage;
  readonly facts: FactRecord[];
  readonly steps: StepRecord[];
}

/** Runs the fixture to its end; its last line, parsed. */
function runToEnd(db: string, phase: string, budget = ''): Promise<RunDump> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, db, phase, budget], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`${phase} exited ${code}: ${err}`));
      else resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as RunDump);
    });
  });
}

/** Starts the fixture and kills it (SIGKILL) once step `b` is waiting mid-run. */
function runAndKill(db: string, budget = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, db, 'start', budget], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('B-WAITING')) child.kill('SIGKILL');
    });
    child.on('exit', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`start ended ${code ?? signal}: ${err}`));
      else resolve((JSON.parse(out.split('\n')[0] ?? '{}') as { run_id: string }).run_id);
    });
  });
}

const shape = (facts: FactRecord[]): unknown[] => facts.map((f) => [f.type, f.data]);

describe('a run resumed after its process was killed (NERVE-4005)', () => {
  it('keeps finished steps, runs the interrupted one again, and ends with the facts of an uninterrupted run', async () => {
    const whole = await runToEnd(join(dir, 'whole.db'), 'whole');
    expect(whole.status).toBe('completed');

    const db = join(dir, 'killed.db');
    const runId = await runAndKill(db);
    // What the killed process left: a finished, a checkpoint, and b still running.
    const left = sqliteStore(db);
    const before = await left.listSteps(runId);
    expect(before.map((s) => [s.client_token, s.status])).toEqual([
      ['a', 'succeeded'],
      ['cp', 'succeeded'],
      ['b', 'running'],
    ]);
    // b's claim was acknowledged, so it is durable; of its events, a prefix is (the store
    // commits a turn of the event loop at a time, and the kill may land inside one).
    const bBefore = await left.readEvents(before[2]?.step_id ?? '');
    expect(() => StepLifecycle.fromLog('b', bBefore)).not.toThrow();
    // The second checkpoint was taken with b live: it holds b's actor snapshot.
    const checkpoints = await left.listCheckpoints(runId);
    expect(checkpoints.map((c) => c.label)).toEqual(['after a', 'b live']);
    const bId = before[2]?.step_id ?? '';
    expect(Object.keys(checkpoints[1]?.snapshots ?? {})).toEqual([bId]);
    expect(checkpoints[1]?.log_offsets[bId]).toBeGreaterThan(0);
    await left.close();

    const resumed = await runToEnd(db, 'resume');
    expect(resumed).toMatchObject({ run_id: runId, status: 'completed' });
    expect(resumed.checkpoint_id).toBe(checkpoints[1]?.checkpoint_id);

    // The same facts as the uninterrupted run: b's first fact is not there twice.
    expect(shape(resumed.facts)).toEqual(shape(whole.facts));
    expect(shape(resumed.facts)).toEqual([
      ['milestone', { step: 'a' }],
      ['milestone', { step: 'b', n: 1 }],
      ['milestone', { step: 'b', n: 2, text: expect.any(String) as string }],
      ['milestone', { step: 'c' }],
    ]);

    // a ran once, in the first process; b twice; c once, in the second.
    const calls = readFileSync(`${db}.calls`, 'utf8').trim().split('\n');
    expect(calls).toEqual([
      'start collector a',
      'start slow b',
      'resume slow b',
      'resume collector c',
    ]);

    const steps = resumed.steps;
    const interrupted = steps.find((s) => s.step_id === before[2]?.step_id);
    expect(interrupted).toMatchObject({
      status: 'failed',
      client_token: null,
      error: { code: 'WORKER_RESET', retriable: true, details: { client_token: 'b' } },
    });
    expect(steps.find((s) => s.client_token === 'b')).toMatchObject({
      status: 'succeeded',
      output: whole.steps.find((s) => s.client_token === 'b')?.output,
    });
    expect(steps.find((s) => s.client_token === 'a')).toEqual(before[0]);

    // What b had spent when it was killed (6 tokens out, kept current in its record) counts
    // against the run as well as what its second run spent (POLICY-3000), and the step run
    // again has the budgets it was submitted with.
    expect(before[2]?.budget_usage.tokens_out).toBe(6);
    expect(resumed.budget_usage.tokens_out).toBe(whole.budget_usage.tokens_out + 6);
    expect(steps.find((s) => s.client_token === 'b')?.budgets).toEqual({ max_tokens_out: 10 });

    // The interrupted step's log is closed in order (STREAM-2001): its last event is the error.
    const store = sqliteStore(db);
    const log = await store.readEvents(interrupted?.step_id ?? '');
    expect(log.slice(0, bBefore.length)).toEqual(bBefore);
    expect(log.slice(bBefore.length).map((e) => [e.type, e.seq])).toEqual([
      ['error', bBefore.length + 1],
    ]);
    expect(() => StepLifecycle.fromLog('check', log)).not.toThrow();
    await store.close();
  }, 120_000);

  it('counts what the interrupted step spent against the run: its second run does not fit what is left', async () => {
    // The run may spend 15 tokens out: a spent 5, b 6 before the kill, so 4 are left.
    const db = join(dir, 'tight.db');
    const runId = await runAndKill(db, 'tight');
    const resumed = await runToEnd(db, 'resume', 'tight');
    expect(resumed).toMatchObject({ run_id: runId, status: 'completed' });
    const byToken = (token: string): StepRecord | undefined =>
      resumed.steps.find((s) => s.client_token === token);
    // b again asks for 6 and c for 5: both refused before any token.
    for (const token of ['b', 'c']) {
      expect(byToken(token)).toMatchObject({
        status: 'failed',
        error: { code: 'BUDGET_EXCEEDED' },
        budget_usage: { tokens_out: 0 },
      });
    }
    expect(resumed.budget_usage.tokens_out).toBe(11);
    // Neither reached the engine: no token in their logs.
    const store = sqliteStore(db);
    for (const token of ['b', 'c']) {
      const log = await store.readEvents(byToken(token)?.step_id ?? '');
      expect(log.filter((e) => e.type === 'token')).toEqual([]);
    }
    await store.close();
  }, 120_000);
});

describe('resumeRun', () => {
  it('refuses a run that is not running, a run it is running itself, and an unknown run', async () => {
    let release: () => void = () => undefined;
    const waiting = defineAgent({
      name: 'waiting',
      handler: () =>
        new Promise<string>((resolve) => {
          release = () => {
            resolve('done');
          };
        }),
    });
    const rt = quietRuntime({ agents: [waiting] });
    const { flow } = await rt.createFlow({ name: 'f' });
    const run = await rt.createRun(flow.flow_id);
    const step = await rt.submitStep(run.run_id, {
      type: 'agent',
      client_token: 'w',
      input: { agent: 'waiting', message: 'x' },
    });
    await expect(rt.resumeRun(run.run_id)).rejects.toBeInstanceOf(ConflictError);
    release();
    await step.done;
    await rt.completeRun(run.run_id);
    await expect(rt.resumeRun(run.run_id)).rejects.toThrow(/is completed/);
    await expect(rt.resumeRun('run_missing')).rejects.toBeInstanceOf(NotFoundError);
    await rt.close();
  });

  it('rebuilds a step from a checkpoint snapshot and the log after it', () => {
    const base = { step_id: 's', ts: 0 };
    const events: StepEvent[] = [
      {
        ...base,
        seq: 1,
        type: 'started',
        provenance: emptyProvenance(),
      },
      { ...base, seq: 2, type: 'token', t: 'a', i: 0 },
      { ...base, seq: 3, type: 'token', t: 'b', i: 1 },
    ];
    const atTwo = StepLifecycle.fromLog('s', events.slice(0, 2));
    const resumed = StepLifecycle.fromLog('s', events, atTwo.toXState());
    expect(resumed.getSnapshot()).toMatchObject({
      value: 'running',
      context: { seq: 3, tokenIndex: 2 },
    });
    // A log the machine would not have written is refused, naming where.
    expect(() => StepLifecycle.fromLog('s', events.slice(1))).toThrow(/at seq 2 \(token\)/);
  });
});
