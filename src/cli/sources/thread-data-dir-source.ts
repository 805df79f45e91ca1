/**
 * @module The {@link ThreadSource} of a data dir: a runtime and a `WorkflowEngine` built as
 * `axon serve` builds them (`serve-config.ts`, `served-workflows.ts`) over the SQLite store in
 * the data dir. Reads need the store to be there; `trigger` creates it, recovers what a
 * stopped process left (`engine.recover()`), and runs the thread in this process — the way to
 * try a workflow with no server. Gotcha: a server using the same data dir would have its
 * threads taken over; with a server running, give `--url`.
 */
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { ConflictError } from '../../errors/conflict-error.js';
import { NotFoundError } from '../../errors/not-found-error.js';
import { QueueFullError } from '../../errors/queue-full-error.js';
import { createLogger } from '../../observability/logger.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { ThreadView } from '../../workflows/thread-records.js';
import { followThread } from '../../workflows/thread-stream.js';
import { describeWorkflow } from '../../workflows/workflow-definition.js';
import { WorkflowEngine } from '../../workflows/workflow-engine.js';
import { CliError } from '../cli-error.js';
import { ServeConfigError } from '../serve/config-problems.js';
import { serveRuntime } from '../serve/serve-command.js';
import { loadServeConfig, STORE_FILE, type ServeConfig } from '../serve/serve-config.js';
import { servedWorkflows, type ServedWorkflows } from '../serve/served-workflows.js';
import type {
  ThreadInfo,
  ThreadProgress,
  ThreadQuery,
  ThreadSource,
  WorkflowSummary,
} from './thread-source.js';

/** Options of {@link openThreadDataDirSource}. */
export interface ThreadDataDirSourceOptions {
  /** The data dir, as given (relative to `cwd`). */
  readonly dir: string;
  /** The `axon.yaml` whose `workflows:` to add (`--config`); else `./axon.yaml` if there is one. */
  readonly config?: string | undefined;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Aborting it kills a thread this source runs. */
  readonly signal?: AbortSignal | undefined;
  /** Delay per scripted token of the example (default `AXON_SCRIPTED_TOKEN_MS`, else 5 ms). */
  readonly tokenDelayMs?: number | undefined;
}

/** A thread as the API shows it: without its owner. */
function info(t: ThreadView): ThreadInfo {
  const { user_id: _owner, ...body } = t;
  return body;
}

/** The engine's errors as the CLI's. */
function cliErrorOf(err: unknown): unknown {
  if (err instanceof NotFoundError) return new CliError('NOT_FOUND', err.message, { cause: err });
  if (err instanceof ConflictError || err instanceof QueueFullError) {
    return new CliError('REQUEST_FAILED', err.message, { cause: err });
  }
  return err;
}

/**
 * The source of the data dir `options.dir`. `CliError` `USAGE` for a config file that cannot
 * be served (as `axon serve` refuses it); the store is opened on first use.
 */
export function openThreadDataDirSource(options: ThreadDataDirSourceOptions): ThreadSource {
  const { cwd } = options;
  const dir = resolve(cwd, options.dir);
  const rel = relative(cwd, dir);
  const where = rel === '' ? '.' : rel.startsWith('..') ? dir : rel;
  const description = `data dir ${where}`;
  let config: ServeConfig;
  try {
    config = loadServeConfig({
      flags: { dataDir: dir, ...(options.config === undefined ? {} : { config: options.config }) },
      env: options.env,
      cwd,
    });
  } catch (err) {
    if (err instanceof ServeConfigError) throw new CliError('USAGE', err.message, { cause: err });
    throw err;
  }
  const envDelay = options.env['AXON_SCRIPTED_TOKEN_MS'];
  const delay =
    options.tokenDelayMs ??
    (envDelay !== undefined && /^\d+$/.test(envDelay) ? Number(envDelay) : undefined);
  const served: ServedWorkflows = servedWorkflows(
    config.workflows,
    delay === undefined ? {} : { tokenDelayMs: delay },
  );
  const file = join(dir, STORE_FILE);
  const hasStore = (): boolean => existsSync(file);
  let opened: Promise<{ runtime: Runtime; engine: WorkflowEngine }> | null = null;

  /** The runtime and engine; `create` makes the data dir, else a missing one is `UNREACHABLE`. */
  function open(create: boolean): Promise<{ runtime: Runtime; engine: WorkflowEngine }> {
    if (opened) return opened;
    if (create) {
      mkdirSync(dir, { recursive: true });
    } else if (!existsSync(dir) || !statSync(dir).isDirectory()) {
      throw new CliError(
        'UNREACHABLE',
        `no data dir ${where} (give the --data-dir axon serve uses, or --url of a server)`,
      );
    } else if (!hasStore()) {
      throw new CliError(
        'UNREACHABLE',
        `${where} holds no ${STORE_FILE}: no thread has run there (axon workflow trigger runs one)`,
      );
    }
    opened = (async () => {
      const runtime = await serveRuntime(config, createLogger(), served.engines);
      try {
        return { runtime, engine: new WorkflowEngine(runtime, served.workflows) };
      } catch (err) {
        await runtime.close();
        // A role placed on a fleet pool, with no fleet here (no `redis:` in the config).
        if (err instanceof TypeError) throw new CliError('USAGE', err.message, { cause: err });
        throw err;
      }
    })();
    return opened;
  }

  async function counts(name: string): Promise<{ running: number; queued: number }> {
    if (!hasStore()) return { running: 0, queued: 0 };
    const { engine } = await open(false);
    const live = await engine.threads({ workflow: name, status: ['queued', 'started'] });
    return {
      running: live.filter((t) => t.status === 'started').length,
      queued: live.filter((t) => t.status === 'queued').length,
    };
  }

  async function summary(name: string): Promise<WorkflowSummary> {
    const w = served.workflows.find((x) => x.name === name);
    if (!w) {
      const known = served.workflows.map((x) => x.name).join(', ');
      throw new CliError(
        'NOT_FOUND',
        `no workflow "${name}" in ${description} (there are: ${known})`,
      );
    }
    // The engine's description of it, with the threads the store holds live.
    return { ...describeWorkflow(w), ...(await counts(name)) };
  }

  async function thread(id: string): Promise<ThreadInfo> {
    const { engine } = await open(false);
    const t = await engine.thread(id);
    if (!t) throw new CliError('NOT_FOUND', `no thread "${id}" in ${description}`);
    return info(t);
  }

  return {
    description,
    listWorkflows: () => Promise.all(served.workflows.map((w) => summary(w.name))),
    getWorkflow: summary,
    async listThreads(query: ThreadQuery): Promise<ThreadInfo[]> {
      const { engine } = await open(false);
      const all = await engine.threads({
        ...(query.workflow === undefined ? {} : { workflow: query.workflow }),
        ...(query.status === undefined ? {} : { status: query.status }),
        limit: query.limit,
      });
      return all.map(info);
    },
    getThread: thread,
    async trigger(name: string, input: string): Promise<ThreadInfo> {
      await summary(name);
      const { runtime, engine } = await open(true);
      // As `axon serve` starts: what a stopped process left is picked up first — threads by
      // the engine, under their leases (a live server on this data dir keeps its own).
      await runtime.resumeRuns({ except: (run) => engine.drives(run) });
      await engine.recover();
      try {
        return info(await engine.trigger(name, input));
      } catch (err) {
        throw cliErrorOf(err);
      }
    },
    async follow(id: string, onProgress: (p: ThreadProgress) => void): Promise<ThreadInfo> {
      const { engine } = await open(false);
      const stop = (): void => {
        void engine.kill(id).catch(() => undefined);
      };
      options.signal?.addEventListener('abort', stop, { once: true });
      try {
        for await (const f of followThread(engine, id)) {
          if (f.kind === 'turn_event') {
            onProgress({ turn: f.turn, role: f.role, type: f.event.type });
          }
        }
        return info(await engine.wait(id));
      } finally {
        options.signal?.removeEventListener('abort', stop);
      }
    },
    async kill(id: string): Promise<ThreadInfo> {
      const { engine } = await open(false);
      try {
        return info(await engine.kill(id));
      } catch (err) {
        throw cliErrorOf(err);
      }
    },
    async close(): Promise<void> {
      const o = opened;
      opened = null;
      if (!o) return;
      const { runtime, engine } = await o;
      await engine.close();
      await runtime.close();
    },
  };
}
