import { describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../src/engines/chat-request.js';
import { modelHash, paramsHash, promptHash } from '../../src/engines/request-hash.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';

const engine = createScriptedEngine({ tokenDelayMs: 0 });
const base: ChatRequest = {
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Café\r\nin Berlin' },
  ],
  params: { max_tokens: 20, temperature: 0.5, stop: ['\n', 'END'] },
  tools: [
    { name: 'b', parameters: { type: 'object' } },
    { name: 'a', parameters: { type: 'object', properties: { x: { type: 'number' } } } },
  ],
  seed: 1,
};

describe('NERVE-4012: prompts and params are normalized and hashed', () => {
  it('are sha256 hex digests', () => {
    expect(promptHash(base)).toMatch(/^[0-9a-f]{64}$/);
    expect(paramsHash(base, engine)).toMatch(/^[0-9a-f]{64}$/);
    expect(modelHash('openai', 'gpt-4o')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('the prompt hash ignores line endings and Unicode composition, not content', () => {
    const decomposed: ChatRequest = {
      ...base,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Cafe\u0301\nin Berlin' },
      ],
    };
    expect(promptHash(decomposed)).toBe(promptHash(base));
    expect(
      promptHash({ ...base, messages: [{ role: 'user', content: 'Café\r\nin Berlin' }] }),
    ).not.toBe(promptHash(base));
    expect(
      promptHash({
        ...base,
        messages: [
          { role: 'user', content: 'Be brief.' },
          { role: 'user', content: 'Café\r\nin Berlin' },
        ],
      }),
    ).not.toBe(promptHash(base));
  });

  it('tool-call arguments hash by their JSON value, not their spacing', () => {
    const withCall = (args: string): ChatRequest => ({
      messages: [
        { role: 'assistant', content: '', tool_calls: [{ id: 'c1', name: 'a', arguments: args }] },
      ],
    });
    expect(promptHash(withCall('{"x": 1, "y": 2}'))).toBe(promptHash(withCall('{"y":2,"x":1}')));
    expect(promptHash(withCall('{"x": 1}'))).not.toBe(promptHash(withCall('{"x": 2}')));
  });

  it('the params hash fills in the engine defaults and ignores the order of tools and stops', () => {
    const reordered: ChatRequest = {
      ...base,
      params: { temperature: 0.5, stop: ['END', '\n', 'END'], max_tokens: 20 },
      tools: [...(base.tools ?? [])].reverse(),
    };
    expect(paramsHash(reordered, engine)).toBe(paramsHash(base, engine));
    const implicit: ChatRequest = { messages: base.messages };
    const explicit: ChatRequest = {
      messages: base.messages,
      model: engine.defaultModel,
      params: { max_tokens: engine.defaultMaxTokens },
    };
    expect(paramsHash(implicit, engine)).toBe(paramsHash(explicit, engine));
  });

  it('every parameter that decides the answer changes the params hash; the seed and prompt do not', () => {
    const hash = paramsHash(base, engine);
    const p = base.params ?? {};
    expect(paramsHash({ ...base, params: { ...p, temperature: 0.6 } }, engine)).not.toBe(hash);
    expect(paramsHash({ ...base, params: { ...p, max_tokens: 21 } }, engine)).not.toBe(hash);
    expect(paramsHash({ ...base, params: { ...p, top_p: 0.9 } }, engine)).not.toBe(hash);
    expect(paramsHash({ ...base, model: 'other' }, engine)).not.toBe(hash);
    expect(paramsHash({ ...base, tools: base.tools?.slice(1) ?? [] }, engine)).not.toBe(hash);
    expect(paramsHash({ ...base, seed: 2 }, engine)).toBe(hash);
    expect(paramsHash({ ...base, messages: [{ role: 'user', content: 'x' }] }, engine)).toBe(hash);
  });

  it('the model hash names the engine and the model', () => {
    expect(modelHash('openai', 'gpt-4o')).not.toBe(modelHash('vllm', 'gpt-4o'));
    expect(modelHash('openai', 'gpt-4o')).not.toBe(modelHash('openai', 'gpt-4o-mini'));
  });
});
