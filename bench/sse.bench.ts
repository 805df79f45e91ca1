/**
 * @module bench:sse — `axon serve`'s SSE streams: `createServer` over a runtime with the
 * in-memory store (port 0) in this process, read by clients in a child process
 * (`sse-clients.ts`) so that their work does not count as this process's event-loop lag.
 *
 * Many clients: `AXON_BENCH_CLIENTS` (1 000) clients, each with a run of its own, each
 * submitting an `llm_call` step of `AXON_BENCH_TOKENS` (1 000) tokens on a scripted engine
 * with `AXON_BENCH_TOKEN_MS` (5, the scripted engine's default) before each token, and
 * following that step's stream on a connection of its own; when a step ends its client
 * submits the next. They arrive `AXON_BENCH_OPENING` (50) at a time. Steps are long so
 * that the clients stream at once: with 200-token steps on this bench's 2-core machine the
 * server accepted the next stream's connection seconds after its step was submitted (a
 * busy libuv loop accepts one connection per turn), by when the step had ended, so each
 * stream was its log replayed at once and ~0 of them were open at a time. The event-loop lag of this process is sampled
 * (`perf_hooks.monitorEventLoopDelay`, 10 ms resolution; each sample less that
 * resolution, so an idle loop lags 0) for `AXON_BENCH_WINDOW_MS` (10 000) from the moment
 * every client has had its first token → `metrics.loop_lag_p99_ms_1000_clients` (target
 * < 50); with it, the tokens/s all the clients received together and their share of what
 * the engines would have sent unhindered (`delivered_share_1000_clients`: the lag alone
 * does not show a server that keeps its loop turning by serving its clients late), the
 * streams open on average, this process's CPU time per token, and the lag over the
 * session (the clients' arrival too).
 *
 * When not every client has had a token `AXON_BENCH_RAMP_LIMIT_MS` (120 000) after the
 * first submission, the window opens anyway; `clients_streaming` says how many had, and a
 * lag under the target is then not reported (`null`: it is not that of 1 000 streams).
 *
 * One connection: an `llm_call` of `AXON_BENCH_ONE_TOKENS` (200 000) tokens on a scripted
 * engine with no delay, followed by one client; the tokens it received (every one, in
 * order) ÷ the time from the submission to the `end` frame, median of `AXON_BENCH_ROUNDS`
 * (5) rounds after a warm-up round, a fresh server each (after a 1 000-token step) →
 * `metrics.tokens_per_s_one_connection` (target ≥ 200 000). The same through a
 * worker-placed agent streaming the same engine (bench:stream's) →
 * `tokens_per_s_one_connection_worker`.
 */
import { fork } from 'node:child_process';
import { monitorEventLoopDelay, performance, type IntervalHistogram } from 'node:perf_hooks';
import { defineAgent } from '../src/actors/define-agent.js';
import { createScriptedEngine } from '../src/engines/scripted-engine.js';
import { createLogger } from '../src/observability/logger.js';
import { createRuntime } from '../src/runtime/runtime.js';
import { createServer, type AxonServer } from '../src/server/create-server.js';
import { report } from './harness.js';
import type { ClientCommand, ClientMessage, ClientPhase } from './sse-clients.js';

const clients = Number(process.env['AXON_BENCH_CLIENTS'] ?? '1000');
const tokensPerStep = Number(process.env['AXON_BENCH_TOKENS'] ?? '1000');
const tokenMs = Number(process.env['AXON_BENCH_TOKEN_MS'] ?? '5');
const opening = Number(process.env['AXON_BENCH_OPENING'] ?? '50');
const windowMs = Number(process.env['AXON_BENCH_WINDOW_MS'] ?? '10000');
const rampLimitMs = Number(process.env['AXON_BENCH_RAMP_LIMIT_MS'] ?? '120000');
const oneTokens = Number(process.env['AXON_BENCH_ONE_TOKENS'] ?? '200000');
const rounds = Number(process.env['AXON_BENCH_ROUNDS'] ?? '5');
/** The lag sampler's period, ms; subtracted from each sample. */
const RESOLUTION_MS = 10;

/** bench:stream's agent: the scripted engine with no delay, in a worker thread. */
const workerEngine = defineAgent({
  name: 'engine',
  placement: 'worker',
  module: new URL('./stream-worker.ts', import.meta.url).href,
  export: 'scriptedStream',
  timeoutMs: 600_000,
});

/**
 * A server over a fresh runtime (in-memory store) with the engines `paced` (a delay per
 * token) and `fast` (none), and the worker-placed agent `engine`.
 */
function startServer(): Promise<AxonServer> {
  const runtime = createRuntime({
    logger: createLogger({ level: 'warn' }),
    engines: [
      createScriptedEngine({ name: 'paced', tokenDelayMs: tokenMs }),
      createScriptedEngine({ name: 'fast', tokenDelayMs: 0 }),
    ],
    agents: [workerEngine],
    workers: { minThreads: 1, maxThreads: 1 },
  });
  // Every client is the one keyless user: the stream bounds are opened to the bench's count.
  return createServer(runtime, {
    port: 0,
    maxStreams: clients + 16,
    maxStreamsPerUser: clients + 16,
  });
}

/** The submission of the one-connection step, inline (`llm_call`) or worker-placed. */
function oneStep(kind: 'inline' | 'worker', tokens: number): Record<string, unknown> {
  return kind === 'inline'
    ? {
        type: 'llm_call',
        client_token: 'one',
        input: {
          engine: 'fast',
          messages: [{ role: 'user', content: 'stream' }],
          params: { max_tokens: tokens },
        },
      }
    : {
        type: 'agent',
        client_token: 'one',
        input: { agent: 'engine', message: 'stream', args: { n: tokens } },
      };
}

/** Tokens/s to one connection, median of `rounds` after a warm-up, and the first-token ms. */
async function oneConnection(kind: 'inline' | 'worker'): Promise<{
  rates: number[];
  perS: number;
  firstTokenMs: number;
  clientCpu: number;
  serverCpu: number;
}> {
  const rates: number[] = [];
  const firstToken: number[] = [];
  const clientCpu: number[] = [];
  const serverCpu: number[] = [];
  for (let r = 0; r <= rounds; r++) {
    const s = await startServer();
    // The worker thread started and its modules loaded before the step measured.
    await ask({ type: 'one', url: s.url, tokens: 1_000, step: oneStep(kind, 1_000) });
    const cpu = process.cpuUsage();
    const one = await ask({
      type: 'one',
      url: s.url,
      tokens: oneTokens,
      step: oneStep(kind, oneTokens),
    });
    const used = process.cpuUsage(cpu);
    await s.close();
    if (one.type !== 'one-done') throw new Error(`unexpected answer ${one.type}`);
    if (r === 0) continue; // warm-up
    rates.push(oneTokens / (one.ms / 1000));
    firstToken.push(one.firstTokenMs);
    clientCpu.push(one.clientCpuMs / one.ms);
    serverCpu.push((used.user + used.system) / 1000 / one.ms);
  }
  return {
    rates,
    perS: median(rates),
    firstTokenMs: median(firstToken),
    clientCpu: median(clientCpu),
    serverCpu: median(serverCpu),
  };
}

const child = fork(new URL('./sse-clients.ts', import.meta.url).pathname, [], {
  execArgv: ['--import', 'tsx'],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});

/** Sends `command` to the clients and resolves their answer; `onPhase` hears the phases. */
function ask(
  command: ClientCommand,
  onPhase: (phase: ClientPhase) => void = () => undefined,
): Promise<ClientMessage> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: ClientMessage): void => {
      if (message.type === 'phase') {
        onPhase(message.phase);
        return;
      }
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (message.type === 'failed') reject(new Error(`the clients failed: ${message.message}`));
      else resolve(message);
    };
    const onExit = (code: number | null): void => {
      reject(new Error(`the clients' process exited (${String(code)})`));
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
    child.send(command);
  });
}

/** The lag at percentile `p` (or the largest), ms, less the sampler's period. */
function lag(h: IntervalHistogram, p: number | 'max'): number {
  if (h.count === 0) return Number.NaN;
  const ns = p === 'max' ? h.max : h.percentile(p);
  return Number(Math.max(0, ns / 1e6 - RESOLUTION_MS).toFixed(2));
}

const fixed = (v: number, digits = 1): number => Number(v.toFixed(digits));
const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

try {
  // Many clients.
  const server = await startServer();
  const session = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  const window = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  let elu = performance.eventLoopUtilization();
  let windowElu = Number.NaN;
  // CPU time, which unlike the loop's utilization does not count time the process waited
  // for a core that other processes held.
  let cpu = process.cpuUsage();
  let windowCpuMs = Number.NaN;
  const many = await ask(
    {
      type: 'many',
      url: server.url,
      clients,
      tokens: tokensPerStep,
      engine: 'paced',
      opening,
      windowMs,
      rampLimitMs,
    },
    (phase) => {
      if (phase === 'started') {
        session.enable();
      } else if (phase === 'all-live') {
        window.enable();
        elu = performance.eventLoopUtilization();
        cpu = process.cpuUsage();
      } else {
        window.disable();
        session.disable();
        windowElu = performance.eventLoopUtilization(elu).utilization;
        const used = process.cpuUsage(cpu);
        windowCpuMs = (used.user + used.system) / 1000;
      }
    },
  );
  if (many.type !== 'many-done') throw new Error(`unexpected answer ${many.type}`);
  const heapMb = process.memoryUsage().heapUsed / 1048576;
  if (many.errors > 0) {
    process.stderr.write(
      `sse: ${many.errors} failures on the wire, the first: ${many.firstError}\n`,
    );
  }
  // Not every client streaming when the window opened (the ramp's limit came first): the
  // lag is not that of 1 000 streams, and only a lag past the target says something.
  const lagP99 = lag(window, 99);
  const lagOfAll = many.clientsStreaming === clients || !(lagP99 < 50) ? lagP99 : Number.NaN;
  await server.close();

  // One connection.
  const inline = await oneConnection('inline');
  const worker = await oneConnection('worker');

  report({
    bench: 'sse',
    metrics: {
      clients,
      tokens_per_step: tokensPerStep,
      token_delay_ms: tokenMs,
      clients_streaming: many.clientsStreaming,
      streams_open_avg: Math.round(many.streamsOpenAvg),
      wire_errors: many.errors,
      loop_lag_p99_ms_1000_clients: lagOfAll,
      loop_lag_p50_ms_1000_clients: lag(window, 50),
      loop_lag_max_ms_1000_clients: lag(window, 'max'),
      loop_utilization_1000_clients: fixed(windowElu, 3),
      tokens_per_s_1000_clients: Math.round(many.windowTokens / (many.windowMs / 1000)),
      // What the clients received of what their engines would have sent unhindered.
      delivered_share_1000_clients:
        tokenMs > 0
          ? fixed(many.windowTokens / (many.windowMs / 1000) / ((clients * 1000) / tokenMs), 3)
          : Number.NaN,
      server_cpu_us_per_token: fixed((windowCpuMs * 1000) / many.windowTokens),
      window_ms: many.windowMs,
      ramp_ms: Math.round(many.rampMs),
      loop_lag_p99_ms_session: lag(session, 99),
      loop_lag_max_ms_session: lag(session, 'max'),
      streams_ended: many.streamsEnded,
      tokens_received: many.tokens,
      first_token_p50_ms: fixed(many.firstTokenP50Ms),
      first_token_p99_ms: fixed(many.firstTokenP99Ms),
      submit_p50_ms: fixed(many.submitP50Ms),
      submit_p99_ms: fixed(many.submitP99Ms),
      open_p50_ms: fixed(many.openP50Ms),
      server_heap_mb: fixed(heapMb),
      one_connection_tokens: oneTokens,
      tokens_per_s_one_connection: Math.round(inline.perS),
      one_connection_first_token_ms: fixed(inline.firstTokenMs),
      one_connection_server_cpu_share: fixed(inline.serverCpu, 2),
      one_connection_client_cpu_share: fixed(inline.clientCpu, 2),
      tokens_per_s_one_connection_worker: Math.round(worker.perS),
      one_connection_worker_first_token_ms: fixed(worker.firstTokenMs),
    },
    ratios: {},
  });
  const each = (rates: readonly number[]): string =>
    rates.map((r) => Math.round(r).toLocaleString('en-US')).join(' / ');
  process.stdout.write(`  one connection, each round: llm_call ${each(inline.rates)} tokens/s\n`);
  process.stdout.write(
    `  one connection, each round: worker agent ${each(worker.rates)} tokens/s\n`,
  );
} finally {
  child.kill('SIGTERM');
}
