import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRole } from '../../src/adapters/create-role.js';
import { extract, jsonCandidates, mergeExtractConfig } from '../../src/adapters/extract.js';
import { createContext } from '../../src/context/create-context.js';
import type { ChatRequest, Engine } from '../../src/engines/chat-request.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { ExtractError } from '../../src/errors/extract-error.js';

const meta = z.object({ done: z.boolean(), files: z.array(z.string()) });

/** A scripted engine that answers `answer` and keeps every request it got. */
function correcting(answer: string): { engine: Engine; requests: ChatRequest[] } {
  const requests: ChatRequest[] = [];
  const engine = createScriptedEngine({
    tokenDelayMs: 0,
    script: (req) => {
      requests.push(req);
      return answer;
    },
  });
  return { engine, requests };
}

describe('the extract layer (seed 001)', () => {
  it('reads JSON given plainly, in a fenced code block, or inside prose', async () => {
    const value = { done: true, files: ['a.ts'] };
    expect(await extract(JSON.stringify(value), meta)).toEqual(value);
    expect(
      await extract(`Here you go:\n\`\`\`json\n${JSON.stringify(value)}\n\`\`\`\nBye.`, meta),
    ).toEqual(value);
    expect(await extract(`Result: ${JSON.stringify(value)} (all good)`, meta)).toEqual(value);
  });

  it('prefers a fenced block that matches over one that does not', () => {
    const raw = '```\n{"x":1}\n```\n```json\n{"done":false,"files":[]}\n```';
    expect(jsonCandidates(raw)).toContain('{"done":false,"files":[]}');
  });

  it('on a mismatch asks the engine once, with the error fed back, and uses its answer', async () => {
    const { engine, requests } = correcting('{"done": true, "files": ["README.md"]}');
    const out = await extract('{"done": "yes"}', meta, { engine });

    expect(out).toEqual({ done: true, files: ['README.md'] });
    expect(requests).toHaveLength(1);
    const sent = requests[0]?.messages.map((m) => m.content).join('\n') ?? '';
    expect(sent).toContain('{"done": "yes"}');
    expect(sent).toMatch(/done: .*boolean/i);
    expect(sent).toContain('"files"');
  });

  it('throws ExtractError with both attempts when the corrected answer fails too', async () => {
    const { engine, requests } = correcting('still not json');
    let caught: unknown;
    try {
      await extract('nothing useful here', meta, { engine });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ExtractError);
    const attempts = (caught as ExtractError).attempts;
    expect(attempts.map((a) => a.raw)).toEqual(['nothing useful here', 'still not json']);
    expect(attempts[0]?.error).toMatch(/no JSON found/);
    expect((caught as ExtractError).code).toBe('SCHEMA_VIOLATION');
    expect(requests).toHaveLength(1);
  });

  it('without an engine, fails after one attempt, listing the schema paths', async () => {
    const err = await extract('{"done": true, "files": [1]}', meta).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExtractError);
    expect((err as ExtractError).attempts).toHaveLength(1);
    expect((err as ExtractError).attempts[0]?.issues.map((i) => i.path)).toEqual([['files', 0]]);
  });

  it('charges the correcting call to the context budget when given one', async () => {
    const { engine } = correcting('{"done": true, "files": []}');
    const ctx = createContext({ budgets: { maxTokensOut: 1000 } });
    await extract('{}', meta, { engine, ctx, maxTokens: 50 });
    expect(ctx.ledger.committed.tokensOut).toBeGreaterThan(0);
    expect(ctx.lastCall?.engine).toBe('scripted');
  });

  it('merges settings in two levels: the role over the global', () => {
    const a = createScriptedEngine({ tokenDelayMs: 0 });
    const b = createScriptedEngine({ tokenDelayMs: 0, name: 'b' });
    expect(
      mergeExtractConfig({ engine: a, model: 'm1', temperature: 0.5 }, { model: 'm2' }),
    ).toEqual({
      engine: a,
      model: 'm2',
      temperature: 0.5,
    });
    expect(mergeExtractConfig({ engine: a }, { engine: b }).engine).toBe(b);
    expect(mergeExtractConfig(undefined, {})).toEqual({});
  });
});

describe('createRole', () => {
  it('runs the adapter with its prompt on the thread and extracts the meta', async () => {
    const seen: string[] = [];
    const role = createRole(
      (thread, systemPrompt) => {
        seen.push(systemPrompt, thread.start);
        return Promise.resolve('Done.\n```json\n{"done": true, "files": ["x.ts"]}\n```');
      },
      'You are the coder.',
      meta,
      { model: 'role-model' },
      { model: 'global-model', temperature: 0 },
    );
    const out = await role.run({ threadId: 't', start: 'write x.ts', steps: [] });
    expect(out.meta).toEqual({ done: true, files: ['x.ts'] });
    expect(out.raw).toContain('Done.');
    expect(seen).toEqual(['You are the coder.', 'write x.ts']);
    expect(role.extractConfig).toEqual({ model: 'role-model', temperature: 0 });
  });

  it("charges a role's correcting call to the context it runs under; past its budget nothing is sent", async () => {
    const { engine, requests } = correcting('{"done": false, "files": ["a"]}');
    const role = createRole(() => Promise.resolve('not json'), 'You code.', meta, {
      engine,
      maxTokens: 20,
    });
    const ctx = createContext({ budgets: { maxTokensOut: 100 } });
    const out = await role.run({ threadId: 't', start: 'go', steps: [] }, { ctx });
    expect(out.meta).toEqual({ done: false, files: ['a'] });
    expect(ctx.ledger.committed.tokensOut).toBeGreaterThan(0);
    const poor = createContext({ budgets: { maxTokensOut: 5 } });
    const err = await role
      .run({ threadId: 't', start: 'go', steps: [] }, { ctx: poor })
      .catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('BUDGET_EXCEEDED');
    expect(requests).toHaveLength(1);
  });
});
