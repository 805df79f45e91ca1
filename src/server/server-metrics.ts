/**
 * @module `GET /metrics` (API.md): the server's figures in Prometheus text, with prom-client,
 * on a registry of its own (never prom-client's global one, which the embedding service may
 * use): steps by type and status, steps in flight, SSE clients, SSE streams refused past the
 * server's bounds, the worker queue's depth, SSE frames dropped under pressure, each fleet pool's jobs by state, circuit breaker states, requests by route and status,
 * and Node's process figures.
 */
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { BreakerState } from '../supervisors/circuit-breaker.js';
import type { PoolInfo } from '../placement/pool-info.js';
import type { QueueFigures } from '../placement/fleet/fleet-registry.js';

/** What the figures read at scrape time. */
export interface MetricsSource {
  listPools(): readonly PoolInfo[];
  /** Each fleet pool's queue figures (none without a fleet). */
  poolQueues(): readonly { readonly pool_id: string; readonly figures: QueueFigures }[];
  breakerStates(): readonly { readonly target: string; readonly state: BreakerState }[];
}

const BREAKER_VALUE: Readonly<Record<BreakerState, number>> = {
  closed: 0,
  half_open: 1,
  open: 2,
};

/** The server's metrics; see the module. */
export class ServerMetrics {
  readonly registry = new Registry();
  readonly steps: Counter<'type' | 'status'>;
  readonly sseClients: Gauge;
  readonly sseRefused: Counter<'limit'>;
  readonly dropped: Counter<'type'>;
  readonly requests: Counter<'method' | 'route' | 'status'>;

  constructor(source: MetricsSource) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'axon_' });
    this.steps = new Counter({
      name: 'axon_steps_total',
      help: 'Steps submitted over HTTP that ended, by type and status',
      labelNames: ['type', 'status'],
      registers,
    });
    this.sseClients = new Gauge({
      name: 'axon_sse_clients',
      help: 'SSE streams open now',
      registers,
    });
    this.sseRefused = new Counter({
      name: 'axon_sse_refused_total',
      help: 'SSE streams refused with 429, by the bound they met: streams (all) or streams_per_user',
      labelNames: ['limit'],
      registers,
    });
    this.dropped = new Counter({
      name: 'axon_sse_dropped_events_total',
      help: 'metrics and narration frames dropped while a client was behind',
      labelNames: ['type'],
      registers,
    });
    this.requests = new Counter({
      name: 'axon_http_requests_total',
      help: 'HTTP requests by method, route and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    const load = (what: 'steps_in_flight' | 'queue_depth' | 'worker_threads') => (): number =>
      source
        .listPools()
        .flatMap((p) => p.replicas)
        .reduce((n, r) => n + (r.load[what] ?? 0), 0);
    new Gauge({
      name: 'axon_steps_in_flight',
      help: 'Steps running now',
      registers,
      collect() {
        this.set(load('steps_in_flight')());
      },
    });
    new Gauge({
      name: 'axon_queue_depth',
      help: 'Worker-placed steps waiting for a thread',
      registers,
      collect() {
        this.set(load('queue_depth')());
      },
    });
    new Gauge({
      name: 'axon_worker_threads',
      help: 'Worker threads running now',
      registers,
      collect() {
        this.set(load('worker_threads')());
      },
    });
    new Gauge({
      name: 'axon_pool_jobs',
      help: 'Steps of each fleet pool by state: waiting and active now, completed and stalled ever',
      labelNames: ['pool', 'state'],
      registers,
      collect() {
        this.reset();
        for (const { pool_id: pool, figures } of source.poolQueues()) {
          for (const state of ['waiting', 'active', 'completed', 'stalled'] as const) {
            this.set({ pool, state }, figures[state]);
          }
        }
      },
    });
    new Gauge({
      name: 'axon_breaker_state',
      help: 'Circuit breaker state by target: 0 closed, 1 half open, 2 open',
      labelNames: ['target'],
      registers,
      collect() {
        this.reset();
        for (const b of source.breakerStates())
          this.set({ target: b.target }, BREAKER_VALUE[b.state]);
      },
    });
  }

  /** The Prometheus text of every figure. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
