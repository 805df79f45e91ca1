/**
 * Workflows declared in `axon.yaml`: parsed from real YAML, run (an engine role and a role
 * over a real command), and refused with every problem named by its path.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { LINT_PROGRAM } from '../../examples/code-review/lint-program.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { WorkflowConfigError, workflowsFromConfig } from '../../src/workflows/workflow-config.js';
import { WorkflowEngine } from '../../src/workflows/workflow-engine.js';
import { quietRuntime } from '../support/runtime.js';

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});

const yaml = `
workflows:
  review:
    description: a coder, a linter and a reviewer
    max_rounds: 8
    concurrency: { max: 2, overflow: drop }
    roles:
      coder: { engine: scripted, prompt: "You write code." }
      linter: { command: ${JSON.stringify(process.execPath)}, args: [-e, ${JSON.stringify(LINT_PROGRAM)}] }
      reviewer: { engine: scripted, prompt: "You review." }
    moderator:
      order: [coder, linter, reviewer]
      end_when: { role: reviewer, contains: APPROVED }
`;

describe('workflows in axon.yaml', () => {
  it('runs a declared workflow: the roles in order until the end text, a command role a real process', async () => {
    const [workflow] = workflowsFromConfig((parse(yaml) as { workflows: unknown }).workflows);
    expect(workflow).toMatchObject({
      name: 'review',
      maxRounds: 8,
      concurrency: { max: 2, overflow: 'drop', maxQueue: 100 },
    });
    const rt = quietRuntime({
      engines: [
        createScriptedEngine({
          tokenDelayMs: 0,
          script: (r) =>
            (r.messages.find((m) => m.role === 'system')?.content ?? '').startsWith('You write')
              ? '```js\nconst x = 1;\n```'
              : 'APPROVED',
        }),
      ],
    });
    runtimes.push(rt);
    const engine = new WorkflowEngine(rt, workflow ? [workflow] : []);
    const t = await engine.wait((await engine.trigger('review', 'x')).thread_id);
    expect(t.status).toBe('completed');
    expect(t.end_reason).toBe('end');
    expect(t.turns.map((x) => x.role)).toEqual(['coder', 'linter', 'reviewer']);
    expect(t.turns[1]?.raw).toContain('{"ok":true,"problems":[]}');
    await engine.close();
  });

  it('refuses a declaration it cannot run, naming each problem by its path', () => {
    const bad = {
      review: {
        roles: { coder: { engine: 'scripted', prompt: 'p' }, Bad: { agent: 'x' } },
        moderator: { order: ['coder', 'tester'], end_when: { role: 'nobody', contains: 'x' } },
      },
    };
    expect(() => workflowsFromConfig(bad)).toThrow(WorkflowConfigError);
    expect(() => workflowsFromConfig(bad)).toThrow(/review\.roles\.Bad/);
    const unknownRoles = {
      review: {
        roles: { coder: { engine: 'scripted', prompt: 'p' } },
        moderator: { order: ['coder', 'tester'], end_when: { role: 'nobody', contains: 'x' } },
      },
    };
    let error: unknown;
    try {
      workflowsFromConfig(unknownRoles);
    } catch (err) {
      error = err;
    }
    expect((error as WorkflowConfigError).issues).toEqual([
      { path: 'review.moderator.order.1', message: 'no role "tester"' },
      { path: 'review.moderator.end_when.role', message: 'no role "nobody"' },
    ]);
    expect(() =>
      workflowsFromConfig({
        w: {
          roles: { a: { engine: 'e', prompt: 'p', colour: 'red' } },
          moderator: { order: ['a'] },
        },
      }),
    ).toThrow(/colour/);
  });

  it('takes a role placement: inline, or a fleet pool; not worker, which needs a workflow in code', () => {
    const [w] = workflowsFromConfig({
      r: {
        roles: {
          a: { engine: 'scripted', prompt: 'p', placement: { pool: 'gpu' } },
          b: { command: 'node', placement: 'inline' },
          c: { agent: 'x' },
        },
        moderator: { order: ['a', 'b', 'c'] },
      },
    });
    expect(w?.roles['a']?.placement).toEqual({ pool: 'gpu' });
    expect(w?.roles['b']?.placement).toBe('inline');
    expect(w?.roles['c']?.placement).toBeUndefined();
    const worker = {
      r: {
        roles: { a: { engine: 'scripted', prompt: 'p', placement: 'worker' } },
        moderator: { order: ['a'] },
      },
    };
    expect(() => workflowsFromConfig(worker)).toThrow(
      /r\.roles\.a\.placement: placement is "inline" or \{ pool: <pool id> \} \("worker" needs a workflow declared in code/,
    );
    const badPool = {
      r: { roles: { a: { agent: 'x', placement: { pool: 'a b' } } }, moderator: { order: ['a'] } },
    };
    expect(() => workflowsFromConfig(badPool)).toThrow(/r\.roles\.a\.placement\.pool/);
  });
});
