/**
 * @module bench:engine — tokens per second through axon's OpenAI binding against a bare
 * `openai` SDK streaming loop, both reading the same local OpenAI-compatible server (the
 * scripted engine, no delay, in its own process), interleaved in one process.
 * `ratios.vs_openai_sdk` = our tokens/s ÷ the SDK loop's (target ≥ 0.9).
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import { createOpenAIEngine } from '../src/engines/openai-engine.js';
import type { ChatRequest } from '../src/engines/chat-request.js';
import { interleave, report } from './harness.js';

const tokensPerCall = Number(process.env['AXON_BENCH_TOKENS'] ?? '2000');
const rounds = Number(process.env['AXON_BENCH_ROUNDS'] ?? '6');
const roundMs = Number(process.env['AXON_BENCH_ROUND_MS'] ?? '1500');

const server = spawn(
  process.execPath,
  ['--import', 'tsx', new URL('./openai-server.ts', import.meta.url).pathname],
  {
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
const baseURL = await new Promise<string>((resolve, reject) => {
  server.once('error', reject);
  createInterface({ input: server.stdout }).once('line', resolve);
});

const request: ChatRequest = {
  messages: [{ role: 'user', content: 'Stream as fast as you can.' }],
  params: { max_tokens: tokensPerCall },
  seed: 1,
};
const engine = createOpenAIEngine({ baseURL, model: 'bench-model', maxRetries: 0 });
const client = new OpenAI({ baseURL, apiKey: 'no-key', maxRetries: 0 });

async function viaAxon(): Promise<void> {
  let n = 0;
  for await (const token of engine.stream(request)) if (token) n++;
  if (n !== tokensPerCall) throw new Error(`axon streamed ${n} tokens, expected ${tokensPerCall}`);
}

/** The loop a user would write with the SDK: stream with usage, count content deltas. */
async function viaSdk(): Promise<void> {
  const stream = await client.chat.completions.create({
    model: 'bench-model',
    messages: [{ role: 'user', content: 'Stream as fast as you can.' }],
    stream: true,
    stream_options: { include_usage: true },
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- what the binding sends too
    max_tokens: tokensPerCall,
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    seed: 1,
  });
  let n = 0;
  for await (const chunk of stream) if (chunk.choices[0]?.delta.content) n++;
  if (n !== tokensPerCall)
    throw new Error(`the SDK streamed ${n} tokens, expected ${tokensPerCall}`);
}

try {
  const stats = await interleave(
    [
      { name: 'axon', run: viaAxon },
      { name: 'openai-sdk', run: viaSdk },
    ],
    { rounds, roundMs, warmupOps: 5 },
  );
  const axon = (stats.find((s) => s.name === 'axon')?.median ?? 0) * tokensPerCall;
  const sdk = (stats.find((s) => s.name === 'openai-sdk')?.median ?? 0) * tokensPerCall;
  report({
    bench: 'engine',
    metrics: {
      tokens_per_call: tokensPerCall,
      axon_tokens_per_s: Math.round(axon),
      sdk_tokens_per_s: Math.round(sdk),
    },
    ratios: { vs_openai_sdk: Number((axon / sdk).toFixed(2)) },
  });
} finally {
  server.kill('SIGTERM');
}
