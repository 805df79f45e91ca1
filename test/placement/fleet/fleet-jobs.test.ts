import { describe, expect, it } from 'vitest';
import { ZodError } from 'zod';
import { checkStepJob, stepJobId, stepJobOf } from '../../../src/placement/fleet/fleet-jobs.js';

const job = {
  step_id: 'step-1',
  run_id: 'run-1',
  pool_id: 'cpu',
  body: { type: 'gate_eval', input: { fact_type: 'x' } },
  traceparent: null,
  queued_at: 1,
};

describe('a step job, checked where it enters', () => {
  it('refuses data that is not a step job, naming the field', () => {
    const bad = checkStepJob({ ...job, pool_id: '' });
    expect(bad.success).toBe(false);
    expect(() => stepJobOf({ ...job, extra: 1 })).toThrow(ZodError);
    expect(() => stepJobOf(null)).toThrow(ZodError);
  });

  it('a job a worker checked is not parsed again by runtime.takeStep (the same object), one it did not is', () => {
    const checked = checkStepJob(job);
    if (!checked.success) throw new Error('the job was refused');
    expect(checked.data).toEqual(job);
    expect(stepJobOf(checked.data)).toBe(checked.data);
    // Unchecked: zod's copy, itself checked from then on.
    const fresh = stepJobOf(job);
    expect(fresh).not.toBe(job);
    expect(fresh).toEqual(job);
    expect(stepJobOf(fresh)).toBe(fresh);
  });

  it('one job id per (run, client token); the step id without a token', () => {
    expect(stepJobId('r', 't', 's')).toBe(stepJobId('r', 't', 'other'));
    expect(stepJobId('r', 't', 's')).not.toBe(stepJobId('r2', 't', 's'));
    expect(stepJobId('r', null, 's')).toBe('s');
  });
});
