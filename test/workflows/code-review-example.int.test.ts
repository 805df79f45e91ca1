/**
 * The code-review example workflow: the coder's first version fails the linter (a real
 * child process, its output streamed into its turn), the reviewer sends it back, the second
 * passes and is approved.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { codeReview } from '../../examples/code-review/index.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { followThread } from '../../src/workflows/thread-stream.js';
import { WorkflowEngine } from '../../src/workflows/workflow-engine.js';
import { quietRuntime } from '../support/runtime.js';

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});

describe('the code-review example', () => {
  it('goes coder → linter → reviewer twice, the linter’s findings sending the first version back', async () => {
    const { workflow, engines } = codeReview({ tokenDelayMs: 0 });
    const rt = quietRuntime({ engines: [...engines] });
    runtimes.push(rt);
    const engine = new WorkflowEngine(rt, [workflow]);
    const started = await engine.trigger('code-review', 'Write add(a, b) in JavaScript');
    const linterTokens: string[] = [];
    for await (const f of followThread(engine, started.thread_id)) {
      if (f.kind === 'turn_event' && f.role === 'linter' && f.event.type === 'token') {
        linterTokens.push(f.event.t);
      }
    }
    const t = await engine.wait(started.thread_id);
    expect(t.status).toBe('completed');
    expect(t.turns.map((x) => x.role)).toEqual([
      'coder',
      'linter',
      'reviewer',
      'coder',
      'linter',
      'reviewer',
    ]);
    expect(t.turns[1]?.output).toEqual({ ok: false, problems: ['use const or let, not var'] });
    expect(t.turns[2]?.output).toMatchObject({ approved: false });
    expect(t.turns[4]?.output).toEqual({ ok: true, problems: [] });
    expect(t.turns[5]?.output).toMatchObject({ approved: true });
    // The linter's output streamed line by line from its process.
    expect(linterTokens.join('')).toContain('checked');
    await engine.close();
  });
});
