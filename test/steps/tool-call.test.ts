/**
 * A tool call's contract (issue 45): refused before any step — a malformed call, an unknown
 * tool, one the context may not call — it rejects with the typed error, as a delegation
 * does; once its step began, every ending is a status. An `llm_call` hands the model's
 * refused calls back to it as statuses.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ChatMessage } from '../../src/engines/chat-request.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { InvalidParamsError } from '../../src/errors/invalid-params-error.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import { PermissionDeniedError } from '../../src/errors/permission-denied-error.js';
import type { Runtime, RuntimeOptions } from '../../src/runtime/runtime.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { quietRuntime } from '../support/runtime.js';

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.close()));
});

function runtime(options: RuntimeOptions = {}): { rt: Runtime; calls: string[] } {
  const calls: string[] = [];
  const tool = (name: string) =>
    defineTool({
      name,
      description: `${name}s two numbers`,
      input: z.strictObject({ a: z.number(), b: z.number() }),
      handler: ({ a, b }) => {
        calls.push(name);
        return { sum: a + b };
      },
    });
  const rt = quietRuntime({ tools: [tool('add'), tool('secret')], ...options });
  runtimes.push(rt);
  return { rt, calls };
}

const rejection = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => null,
    (e: unknown) => e,
  );

describe('runtime.callTool, refused before any step', () => {
  it('rejects a name that is not a string with INVALID_PARAMS naming it', async () => {
    const { rt, calls } = runtime();
    const err = await rejection(rt.callTool(42 as never, { a: 1, b: 2 }, rt.createContext()));
    expect(err).toBeInstanceOf(InvalidParamsError);
    expect(err).toMatchObject({ code: 'INVALID_PARAMS', details: { param: 'name' } });
    expect(calls).toEqual([]);
  });

  it('rejects a context that is not one with INVALID_PARAMS naming ctx', async () => {
    const { rt, calls } = runtime();
    for (const ctx of [undefined, { userId: 'ann' }]) {
      await expect(rt.callTool('add', { a: 1, b: 2 }, ctx as never)).rejects.toMatchObject({
        code: 'INVALID_PARAMS',
        details: { param: 'ctx' },
      });
    }
    expect(calls).toEqual([]);
  });

  it('rejects an unknown tool and a forbidden one with their typed errors, storing no run', async () => {
    const { rt, calls } = runtime();
    const runId = `run_${randomUUID()}`;
    const ctx = rt.createContext({ runId, permissions: { allowedTools: ['add'] } });

    const unknown = await rejection(rt.callTool('ad', { a: 1, b: 2 }, ctx));
    const forbidden = await rejection(rt.callTool('secret', { a: 1, b: 2 }, ctx));

    expect(unknown).toBeInstanceOf(NotFoundError);
    expect(unknown).toMatchObject({ code: 'NOT_FOUND', details: { kind: 'tool', id: 'ad' } });
    expect(forbidden).toBeInstanceOf(PermissionDeniedError);
    expect(forbidden).toMatchObject({ code: 'POLICY_DENIED' });
    expect(calls).toEqual([]);
    expect(await rt.getRun(runId)).toBeNull();
  });

  it('resolves, once its step began, with the status of how it ended: arguments that break the schema are error SCHEMA_VIOLATION on a stored step', async () => {
    const { rt, calls } = runtime();
    const r = await rt.callTool('add', { a: 1, b: 'two' }, rt.createContext());
    expect(r).toMatchObject({ status: 'error', output: null, error: { code: 'SCHEMA_VIOLATION' } });
    expect(r.stepId).toEqual(expect.any(String));
    expect((await rt.getStep(r.stepId ?? ''))?.status).toBe('failed');
    expect(calls).toEqual([]);
  });
});

describe("llm_call: the model's tool calls", () => {
  it('hands an unknown tool and a forbidden one back to the model as not_found and permission_denied, runs the rest, and answers', async () => {
    const seen: ChatMessage[][] = [];
    const engine = createScriptedEngine({
      tokenDelayMs: 0,
      script: (request) => {
        seen.push([...request.messages]);
        if (request.messages.some((m) => m.role === 'tool')) return 'All done.';
        return {
          text: 'Let me see.',
          toolCalls: [
            { name: 'ghost', arguments: {} },
            { name: 'secret', arguments: { a: 1, b: 2 } },
            { name: 'add', arguments: { a: 2, b: 3 } },
          ],
        };
      },
    });
    const { rt, calls } = runtime({ engines: [engine] });
    const ctx = rt.createContext({ permissions: { allowedTools: ['add'] } });

    const r = await rt.llmCall(
      { messages: [{ role: 'user', content: 'add 2 and 3' }], tools: ['add'] },
      ctx,
    );

    expect(r.status).toBe('succeeded');
    expect(r.output?.text).toBe('Let me see.All done.');
    expect(r.output?.tool_runs.map((t) => [t.tool, t.status, t.error?.code ?? null])).toEqual([
      ['ghost', 'not_found', 'NOT_FOUND'],
      ['secret', 'permission_denied', 'POLICY_DENIED'],
      ['add', 'success', null],
    ]);
    expect(calls).toEqual(['add']);
    // What the model read back for the unknown tool in its second round.
    const answers = (seen[1] ?? []).filter((m) => m.role === 'tool').map((m) => m.content);
    expect(JSON.parse(answers[0] ?? 'null')).toMatchObject({
      error: { code: 'NOT_FOUND', message: 'tool "ghost" not found' },
    });
  });
});
