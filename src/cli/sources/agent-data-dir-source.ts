/**
 * @module The {@link AgentSource} of a data dir: the SQLite store `axon serve --data-dir <dir>`
 * keeps. Reading (actors, their wakes and messages, schedules) opens the store and nothing
 * else, and may be done while a server runs there. Sending runs the actor **in this process**,
 * on a runtime built as `axon serve` builds it (`serveRuntime`, with the configuration file and
 * the durable agents it registers, `notebook` and `follow-up`) — which also picks up what a
 * stopped server left (its live actors, their fired wakes, due schedules) while it runs. So
 * sending, and pausing, resuming or deleting a schedule, are refused on a data dir a running
 * `axon serve` holds (`server.json`): they go through its `--url`.
 */
import { loadDurableAgents } from '../serve/served-durable.js';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { isoTime } from '../../context/clock.js';
import type { DurableAgentDefinition } from '../../actors/durable-agent.js';
import { viewActor, type ActorView } from '../../durable/actor-view.js';
import { AxonError } from '../../errors/axon-error.js';
import { NotFoundError } from '../../errors/not-found-error.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { StepEnding } from '../../runs/submitted-step.js';
import type { ActorStatus, ScheduleRecord, WakeRecord } from '../../store/actor-records.js';
import { actorIdOf } from '../../store/actor-records.js';
import type { ActorStore } from '../../store/actor-store.js';
import { STEP_ENDED, type StepRecord } from '../../store/records.js';
import type { RunStore } from '../../store/run-store.js';
import { sqliteStore } from '../../store/sqlite/sqlite-store.js';
import { CliError } from '../cli-error.js';
import type { CliStream } from '../cli-io.js';
import { serverOn } from '../serve/data-dir-lock.js';
import { STORE_FILE } from '../serve/serve-config.js';
import type {
  AgentAddress,
  AgentDetail,
  AgentInfo,
  AgentQuery,
  AgentSource,
  AgentStatusName,
  MessageEnd,
  MessageInfo,
  ScheduleInfo,
  SentMessage,
  WakeInfo,
} from './agent-source.js';

/** Options of {@link openAgentDataDirSource}. */
export interface AgentDataDirSourceOptions {
  /** The data dir, as given (relative to `cwd`). */
  readonly dir: string;
  /** With `send`: the `axon.yaml` of its runtime (`--config`); else `./axon.yaml` if there is one. */
  readonly config?: string | undefined;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Where the runtime of `send` logs (at `AXON_LOG_LEVEL`). */
  readonly stderr: CliStream;
  /** Aborting it stops waiting for the messages sent to be handled. */
  readonly signal?: AbortSignal | undefined;
}

/** Whose actors a data dir's command addresses by default: a server without keys' caller. */
const KEYLESS_USER = 'anonymous';
/** How often `close` looks whether a message sent here has been handled (or waits), ms. */
const HANDOFF_POLL_MS = 20;

/** Where each status on the wire is in the store (no actor is awake in this process). */
const STORED: Readonly<Record<Exclude<AgentStatusName, 'awake'>, ActorStatus>> = {
  asleep: 'idle',
  busy: 'live',
  waiting: 'waiting',
};

/** An actor as the API's Agent body has it, its fields in that order. */
function agentInfo(view: ActorView, userId: string | null): AgentInfo {
  return {
    name: view.name,
    key: view.key,
    user_id: userId,
    version: view.version,
    status: view.status,
    state: view.state,
    mailbox_depth: view.mailbox_depth,
    next_timer_at: view.next_timer_at,
    run_id: view.run_id,
    created_at: view.created_at,
    updated_at: view.updated_at,
  };
}

/** `ms` as an ISO time, or `null`. */
const iso = (ms: number | null): string | null => (ms === null ? null : isoTime(ms));

function wakeInfo(w: WakeRecord): WakeInfo {
  return {
    wake_id: w.wake_id,
    kind: w.kind,
    status: w.status,
    due_at: iso(w.due_at),
    event: w.event,
    name: w.name,
    match: w.match,
    every_ms: w.every_ms,
    step_id: w.step_id,
    message: w.message,
  };
}

function messageInfo(s: StepRecord): MessageInfo {
  return {
    message_id: s.step_id,
    status: s.status,
    created_at: s.created_at,
    started_at: s.started_at,
    ended_at: s.ended_at,
    input: s.input,
    output: s.output,
    error: s.error && { code: s.error.code, message: s.error.message },
  };
}

/** A Schedule body (API.md), as the server's `scheduleView` shows it. */
function scheduleInfo(s: ScheduleRecord): ScheduleInfo {
  return {
    schedule_id: s.schedule_id,
    agent: s.agent,
    key: s.key,
    message: s.message,
    cron: s.cron,
    timezone: s.timezone,
    overlap: s.overlap,
    catchup: s.catchup,
    status: s.status,
    next_at: iso(s.next_at),
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}

function endOf(e: StepEnding): MessageEnd {
  return {
    status: e.status,
    output: e.output,
    error: e.error && { code: e.error.code, message: e.error.message },
  };
}

/**
 * The source of the data dir `options.dir`. Nothing is opened until a method is called: a
 * missing data dir (or store) is `UNREACHABLE` when read, made when a message is sent.
 */
export function openAgentDataDirSource(options: AgentDataDirSourceOptions): AgentSource {
  const { cwd } = options;
  const dir = resolve(cwd, options.dir);
  const rel = relative(cwd, dir);
  const where = rel === '' ? '.' : rel.startsWith('..') ? dir : rel;
  const description = `data dir ${where}`;
  const file = join(dir, STORE_FILE);
  let reader: RunStore | null = null;
  let runtime: Promise<Runtime> | null = null;
  let served: readonly DurableAgentDefinition[] = [];
  /** Messages sent here, to be handled (or waiting) before the runtime closes. */
  const sent: { readonly stepId: string; readonly actorId: string }[] = [];

  /** `UNREACHABLE` unless the data dir holds a store. */
  function checkThere(): void {
    if (!existsSync(dir) || !statSync(dir).isDirectory()) {
      throw new CliError(
        'UNREACHABLE',
        `no data dir ${where} (give the --data-dir axon serve uses, or --url of a server)`,
      );
    }
    if (!existsSync(file)) {
      throw new CliError(
        'UNREACHABLE',
        `${where} holds no ${STORE_FILE}: axon serve has not used it as its data dir`,
      );
    }
  }

  /** The store to read: the runtime's if one is open, else one opened to read. */
  async function store(): Promise<RunStore> {
    if (runtime) return (await runtime).store;
    if (reader) return reader;
    checkThere();
    try {
      // No checkpointer thread: this connection only reads.
      reader = sqliteStore(file, { checkpointIntervalMs: 0 });
    } catch (err) {
      throw new CliError('UNREACHABLE', `cannot open ${join(where, STORE_FILE)}: ${String(err)}`, {
        cause: err,
      });
    }
    return reader;
  }

  async function actors(): Promise<ActorStore> {
    const found = (await store()).actors;
    if (!found) throw new CliError('UNREACHABLE', `the store of ${description} keeps no actors`);
    return found;
  }

  /** Refuses to write a data dir a running server holds; `action` names what to do there. */
  function refuseServed(action: string): void {
    const server = serverOn(dir);
    if (server === null) return;
    throw new CliError(
      'USAGE',
      `axon serve (pid ${server.pid}) is running on the data dir ${where}: ${action} through it with --url ${server.url} (or stop it first)`,
    );
  }

  /**
   * The runtime that writes: with `agents`, as `axon serve` builds it, its durable agents
   * registered (they take up what a stopped server left); without, the store alone (schedules).
   */
  function writer(agents: boolean): Promise<Runtime> {
    if (runtime) return runtime;
    runtime = (async () => {
      await reader?.close();
      reader = null;
      mkdirSync(dir, { recursive: true });
      const { createCliLogger } = await import('../cli-logger.js');
      let logger;
      try {
        logger = createCliLogger(options.stderr, options.env);
      } catch (err) {
        if (err instanceof RangeError) throw new CliError('USAGE', err.message, { cause: err });
        throw err;
      }
      if (!agents) {
        const { createRuntime } = await import('../../runtime/runtime.js');
        return createRuntime({ store: sqliteStore(file), logger });
      }
      const [{ loadServeConfig }, { ServeConfigError }, { serveRuntime }, examples] =
        await Promise.all([
          import('../serve/serve-config.js'),
          import('../serve/config-problems.js'),
          import('../serve/serve-command.js'),
          import('../../../examples/durable-agents/index.js'),
        ]);
      let config;
      try {
        config = loadServeConfig({
          flags: {
            dataDir: dir,
            ...(options.config === undefined ? {} : { config: options.config }),
          },
          env: options.env,
          cwd,
        });
      } catch (err) {
        if (err instanceof ServeConfigError)
          throw new CliError('USAGE', err.message, { cause: err });
        throw err;
      }
      if (config.redis || config.postgres) {
        throw new CliError(
          'USAGE',
          `the configuration keeps axon serve's store in ${config.postgres ? 'PostgreSQL' : 'Redis'}, not in ${description}: send through that server with --url`,
        );
      }
      let made: Runtime;
      try {
        made = await serveRuntime(config, logger);
      } catch (err) {
        // An option the engines, the memory or createRuntime refuse, as `axon serve` says it.
        if (err instanceof AxonError || err instanceof RangeError || err instanceof TypeError) {
          throw new CliError('USAGE', err.message, { cause: err });
        }
        throw err;
      }
      // What `axon serve` registers (serve-command.ts): API.md's example durable agents and
      // those of the file's `durable_agents:`.
      try {
        served = [
          ...examples.EXAMPLE_DURABLE_AGENTS,
          ...(await loadDurableAgents(config.durableAgents)),
        ];
      } catch (err) {
        await made.close();
        if (err instanceof ServeConfigError)
          throw new CliError('USAGE', err.message, { cause: err });
        throw err;
      }
      for (const agent of served) made.registerAgent(agent);
      return made;
    })();
    return runtime;
  }

  /** The names of the durable agents `axon serve` registers. */
  async function servedNames(): Promise<string> {
    if (served.length === 0) {
      served = (await import('../../../examples/durable-agents/index.js')).EXAMPLE_DURABLE_AGENTS;
    }
    return served.map((d) => d.name).join(', ');
  }

  /** The durable agents' errors as the CLI's. */
  async function cliErrorOf(err: unknown, name: string): Promise<unknown> {
    if (err instanceof NotFoundError && err.kind === 'agent') {
      const names = await servedNames();
      return new CliError(
        'NOT_FOUND',
        `no durable agent "${name}" in ${description} (axon serve runs ${names})`,
        { cause: err },
      );
    }
    if (err instanceof AxonError) {
      return new CliError('REQUEST_FAILED', `refused, ${err.code}: ${err.message}`, {
        cause: err,
      });
    }
    return err;
  }

  /** Whether message `stepId` is done with here: ended, waiting, or queued behind a wait. */
  async function handedOff(on: RunStore, stepId: string, actorId: string): Promise<boolean> {
    const s = await on.getStep(stepId);
    if (!s || STEP_ENDED.has(s.status) || s.status === 'waiting') return true;
    if (s.status !== 'queued') return false;
    return (await on.actors?.getActor(actorId))?.status === 'waiting';
  }

  async function setSchedule(id: string, action: 'pause' | 'resume'): Promise<ScheduleInfo> {
    refuseServed(`${action} schedules`);
    checkThere();
    const schedules = (await writer(false)).durable.schedules;
    try {
      return scheduleInfo(await (action === 'pause' ? schedules.pause(id) : schedules.resume(id)));
    } catch (err) {
      throw noSchedule(err, id);
    }
  }

  const noSchedule = (err: unknown, id: string): unknown =>
    err instanceof NotFoundError
      ? new CliError('NOT_FOUND', `no schedule "${id}" in ${description}`, { cause: err })
      : err;

  return {
    description,
    flags: `--data-dir ${where}`,
    async listAgents(query: AgentQuery): Promise<AgentInfo[]> {
      if (query.status?.includes('awake')) {
        throw new CliError(
          'USAGE',
          '--status awake: only a server knows which of its actors are awake in it (give its --url); on a data dir an idle actor is asleep',
        );
      }
      const actorStore = await actors();
      const wanted = query.status as readonly Exclude<AgentStatusName, 'awake'>[] | undefined;
      const records = await actorStore.pageActors({
        ...(query.userId === undefined ? {} : { userId: query.userId }),
        ...(query.name === undefined ? {} : { name: query.name }),
        ...(query.keyPrefix === undefined ? {} : { keyPrefix: query.keyPrefix }),
        ...(wanted === undefined ? {} : { status: wanted.map((s) => STORED[s]) }),
        limit: query.limit,
      });
      const out: AgentInfo[] = [];
      for (const r of records) {
        const view = await viewActor(actorStore, r.actor_id, undefined);
        if (view) out.push(agentInfo(view, r.user_id));
      }
      return out;
    },
    async getAgent(address: AgentAddress, messages: number): Promise<AgentDetail> {
      const actorStore = await actors();
      const userId = address.userId ?? KEYLESS_USER;
      const actorId = actorIdOf(userId, address.name, address.key);
      const view = await viewActor(actorStore, actorId, undefined);
      if (!view) {
        const names = await servedNames();
        if (!served.some((d) => d.name === address.name)) {
          throw new CliError(
            'NOT_FOUND',
            `no durable agent "${address.name}" in ${description} (axon serve runs ${names})`,
          );
        }
        const user = address.userId === undefined ? '' : ` of user ${userId}`;
        throw new CliError(
          'NOT_FOUND',
          `no actor ${address.name}/${address.key}${user} in ${description}: it has had no message (axon agents list shows the actors there)`,
        );
      }
      const steps = await (await store()).listSteps(view.run_id);
      const top = steps.filter((s) => s.parent_step_id === null).map(messageInfo);
      return {
        agent: agentInfo(view, userId),
        wakes: (await actorStore.actorWakes(actorId)).map(wakeInfo),
        messages: top.slice(-messages),
        message_count: top.length,
      };
    },
    async send(address: AgentAddress, message: unknown, clientToken?: string) {
      refuseServed('send');
      const made = await writer(true);
      const to = {
        name: address.name,
        key: address.key,
        userId: address.userId ?? KEYLESS_USER,
      };
      let answer: Awaited<ReturnType<Runtime['durable']['sendAndWait']>>;
      try {
        answer = await made.durable.sendAndWait(
          to,
          message,
          clientToken === undefined ? {} : { clientToken },
        );
      } catch (err) {
        throw await cliErrorOf(err, address.name);
      }
      const { receipt } = answer;
      // Waited for or not, its end is watched: never a rejection nobody hears.
      const ending = answer.ended.then(endOf);
      ending.catch(() => undefined);
      sent.push({ stepId: receipt.step_id, actorId: actorIdOf(to.userId, to.name, to.key) });
      const result: SentMessage = {
        receipt: {
          message_id: receipt.message_id,
          step_id: receipt.step_id,
          run_id: receipt.run_id,
          status: receipt.status,
          created: receipt.created,
        },
        ended: () => ending,
      };
      return result;
    },
    async listSchedules(): Promise<ScheduleInfo[]> {
      return (await (await actors()).listSchedules()).map(scheduleInfo);
    },
    pauseSchedule: (id) => setSchedule(id, 'pause'),
    resumeSchedule: (id) => setSchedule(id, 'resume'),
    async deleteSchedule(id: string): Promise<void> {
      refuseServed('delete schedules');
      checkThere();
      try {
        await (await writer(false)).durable.schedules.delete(id);
      } catch (err) {
        throw noSchedule(err, id);
      }
    },
    async close(): Promise<void> {
      const open = runtime;
      runtime = null;
      if (open) {
        const made = await open.catch(() => null);
        if (made) {
          // The messages sent here are handled here, up to their end or their first wait.
          for (const m of sent) {
            while (
              !options.signal?.aborted &&
              !(await handedOff(made.store, m.stepId, m.actorId))
            ) {
              await new Promise((r) => setTimeout(r, HANDOFF_POLL_MS));
            }
          }
          await made.close();
        }
      }
      const r = reader;
      reader = null;
      await r?.close();
    },
  };
}
