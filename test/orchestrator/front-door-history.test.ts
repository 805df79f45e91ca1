/**
 * The front door's `history` option (issue 48, the OpenAI API's model `axon`): the
 * conversation a caller holds is the handler's history instead of what memory recalls, the
 * exchange is still remembered, and a history of the wrong shape is refused.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/actors/define-agent.js';
import type { ChatMessage } from '../../src/engines/chat-request.js';
import { createOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { createRuleRouter } from '../../src/orchestrator/rule-router.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { quietRuntime } from '../support/runtime.js';

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});

/** Each history the agent was given. */
const given: (readonly ChatMessage[] | undefined)[] = [];
const helper = defineAgent({
  name: 'helper',
  description: 'helps',
  handler: (input) => {
    given.push(input.history);
    return `re: ${input.message}`;
  },
});

function door(): ReturnType<typeof createOrchestrator> {
  const runtime = quietRuntime({ agents: [helper] });
  runtimes.push(runtime);
  return createOrchestrator({
    runtime,
    router: createRuleRouter({ rules: [], defaultHandler: 'helper' }),
  });
}

describe('orchestrator: the history option', () => {
  it('is the handler’s history instead of memory’s; the exchange is still remembered', async () => {
    given.length = 0;
    const d = door();
    const context = { userId: 'ann', sessionId: 's1' };
    await d.handle('first', { context });
    const second = await d.handle('second', { context });
    // Without the option: memory's conversation.
    expect(given[1]).toEqual([
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 're: first' },
    ]);
    expect(second.response.text).toBe('re: second');
    const history: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'elsewhere' },
    ];
    const third = await d.handle('third', { context, history });
    expect(given[2]).toEqual(history);
    expect(third.recalled?.conversation).toHaveLength(4);
    // Streamed the same.
    const chunks = [];
    for await (const chunk of d.stream('fourth', { context, history: [] })) chunks.push(chunk);
    expect(chunks.at(-1)?.response?.text).toBe('re: fourth');
    expect(given[3]).toEqual([]);
    const fifth = await d.handle('fifth', { context });
    expect(fifth.recalled?.conversation.map((m) => m.content)).toContain('third');
  });

  it('refuses a history that is not chat messages with a TypeError naming the item', async () => {
    const d = door();
    const bad = [{ role: 'tool', content: 'x' }] as unknown as ChatMessage[];
    await expect(d.handle('hi', { history: bad })).rejects.toThrow(
      /orchestrator: history\[0\] must be/,
    );
    await expect(
      d.handle('hi', { history: 'no' as unknown as ChatMessage[] }),
    ).rejects.toBeInstanceOf(TypeError);
  });
});
