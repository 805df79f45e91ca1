/**
 * @module The {@link RunSource} of a data dir: the SQLite store `axon serve --data-dir <dir>`
 * keeps (`<dir>/axon.db`), opened for reading. It needs no server and sees every user's runs
 * (whoever can read the file can read them all). It may be read while a server writes it
 * (WAL mode: a reader does not block the writer).
 */
import { existsSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { RunRecord, StepRecord } from '../../store/records.js';
import { sqliteStore, type SqliteRunStore } from '../../store/sqlite/sqlite-store.js';
import { CliError } from '../cli-error.js';
import type { RunInfo, RunQuery, RunSource, StepInfo } from './run-source.js';
import { STORE_FILE } from '../serve/serve-config.js';

/** Options of {@link openDataDirSource}. */
export interface DataDirSourceOptions {
  /** The data dir, as given (relative to `cwd`). */
  readonly dir: string;
  /** Default `process.cwd()`. */
  readonly cwd?: string;
}

/** The run fields the CLI shows, from a stored run. */
export function runInfoOf(r: RunRecord): RunInfo {
  return {
    run_id: r.run_id,
    entry: r.entry,
    flow_id: r.flow_id,
    status: r.status,
    mode: r.mode,
    created_at: r.created_at,
    ended_at: r.ended_at,
    budget_usage: r.budget_usage,
  };
}

/** The step fields the CLI shows, from a stored step. */
export function stepInfoOf(s: StepRecord): StepInfo {
  return {
    step_id: s.step_id,
    run_id: s.run_id,
    parent_step_id: s.parent_step_id,
    type: s.type,
    name: s.name,
    status: s.status,
    budget_usage: s.budget_usage,
    created_at: s.created_at,
    started_at: s.started_at,
    ended_at: s.ended_at,
    error: s.error && { code: s.error.code, message: s.error.message },
  };
}

/** `dir` as the user would type it: relative to `cwd` when inside it. */
function shown(dir: string, cwd: string): string {
  const rel = relative(cwd, dir);
  return rel === '' ? '.' : rel.startsWith('..') ? dir : rel;
}

/**
 * Opens the store in `options.dir`. Throws `CliError` `UNREACHABLE` when the folder or its
 * `axon.db` is missing (nothing is created) or the file cannot be opened.
 *
 * @example
 * const source = openDataDirSource({ dir: './.axon' });
 * try { console.log(await source.listRuns({ limit: 10 })); } finally { await source.close(); }
 */
export function openDataDirSource(options: DataDirSourceOptions): RunSource {
  const cwd = options.cwd ?? process.cwd();
  const dir = resolve(cwd, options.dir);
  const where = shown(dir, cwd);
  const description = `data dir ${where}`;
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new CliError(
      'UNREACHABLE',
      `no data dir ${where} (give the --data-dir axon serve uses, or --url of a server)`,
    );
  }
  const file = join(dir, STORE_FILE);
  if (!existsSync(file)) {
    throw new CliError(
      'UNREACHABLE',
      `${where} holds no ${STORE_FILE}: axon serve has not used it as its data dir`,
    );
  }
  let store: SqliteRunStore;
  try {
    // No checkpointer thread: this connection only reads.
    store = sqliteStore(file, { checkpointIntervalMs: 0 });
  } catch (err) {
    throw new CliError(
      'UNREACHABLE',
      `cannot open ${shown(file, cwd)}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  return {
    description,
    async listRuns(query: RunQuery): Promise<RunInfo[]> {
      const runs = await store.pageRuns({
        limit: query.limit,
        ...(query.status ? { status: query.status } : {}),
        ...(query.entry === undefined ? {} : { entry: query.entry }),
      });
      return runs.map(runInfoOf);
    },
    async getRun(runId: string): Promise<RunInfo> {
      const run = await store.getRun(runId);
      if (!run) throw new CliError('NOT_FOUND', `no run "${runId}" in ${description}`);
      return runInfoOf(run);
    },
    async listSteps(runId: string): Promise<StepInfo[]> {
      return (await store.listSteps(runId)).map(stepInfoOf);
    },
    close: () => store.close(),
  };
}
