/**
 * @module The worker-placed behaviour of bench:stream: the scripted engine with no delay,
 * its tokens streamed as the agent's.
 */
import type { AgentGeneratorHandler } from '../src/actors/agent-runtime.js';
import { createScriptedEngine } from '../src/engines/scripted-engine.js';

const engine = createScriptedEngine({ tokenDelayMs: 0 });

/** Streams `args.n` tokens of the scripted engine. */
export const scriptedStream: AgentGeneratorHandler = async function* (input, ctx) {
  const n = Number(input.args?.['n'] ?? 1_000);
  const tokens = engine.stream(
    { messages: [{ role: 'user', content: input.message }], params: { max_tokens: n }, seed: 7 },
    { signal: ctx.signal },
  );
  for await (const token of tokens) yield token;
};
