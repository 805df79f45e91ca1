/**
 * @module Threads listed from the store's indexes of runs (`RunStore.pageRuns`): by their
 * workflow's entry, their user and — a thread's status being its facts' — the run statuses
 * a thread of those statuses can have. Each workflow is read a page at a time, newest first,
 * until it gives `limit` threads or has no more; the newest `limit` of them all are the
 * answer. What is read grows with the page, not with how many runs the store holds.
 */
import type { Runtime } from '../runtime/runtime.js';
import type { RunRecord, RunStatus } from '../store/records.js';
import {
  THREAD_FACT,
  threadView,
  WORKFLOW_ENTRY,
  type ThreadStatus,
  type ThreadView,
} from './thread-records.js';

/** What a thread listing is asked. */
export interface ThreadQuery {
  /** Only threads of this workflow. */
  readonly workflow?: string;
  readonly status?: readonly ThreadStatus[];
  readonly limit?: number;
  /** Only threads of this user (`null`: of nobody); absent, every user's. */
  readonly userId?: string | null;
  /** Only threads created before this one (its id: the last of the page before). */
  readonly before?: string;
}

/** Pages are read this many runs at a time when no `limit` bounds them. */
const PAGE = 100;

/**
 * The run statuses a thread of `status` may have: a live thread's run is live; an ended
 * one's has ended as it did, or is about to (its run is ended after its last fact).
 */
function runStatusesOf(status: readonly ThreadStatus[]): RunStatus[] {
  const live: RunStatus[] = ['running', 'waiting', 'cancelling'];
  const out = new Set<RunStatus>();
  for (const s of status) {
    if (s === 'queued' || s === 'started') for (const r of live) out.add(r);
    else {
      for (const r of live) out.add(r);
      out.add(s === 'completed' ? 'completed' : s === 'killed' ? 'cancelled' : 'failed');
    }
  }
  return [...out];
}

/** The thread of `run`, read back. */
async function viewOf(runtime: Runtime, run: RunRecord): Promise<ThreadView> {
  const [facts, steps] = await Promise.all([
    runtime.listFacts(run.run_id, { type: THREAD_FACT }),
    runtime.listSteps(run.run_id),
  ]);
  return threadView(run, facts, steps);
}

/** Threads of `workflows` (names), newest first; see the module. */
export async function listThreads(
  runtime: Runtime,
  workflows: readonly string[],
  query: ThreadQuery,
): Promise<ThreadView[]> {
  const limit = query.limit ?? Infinity;
  const runStatus = query.status ? runStatusesOf(query.status) : undefined;
  const names = query.workflow === undefined ? workflows : [query.workflow];
  const found = await Promise.all(
    names.map(async (name) => {
      const out: ThreadView[] = [];
      let before = query.before;
      for (;;) {
        const size = Math.min(PAGE, limit - out.length);
        const runs = await runtime.store.pageRuns({
          entry: `${WORKFLOW_ENTRY}${name}`,
          limit: size,
          ...(runStatus ? { status: runStatus } : {}),
          ...(query.userId === undefined ? {} : { userId: query.userId }),
          ...(before === undefined ? {} : { before }),
        });
        for (const t of await Promise.all(runs.map((r) => viewOf(runtime, r)))) {
          if (!query.status || query.status.includes(t.status)) out.push(t);
        }
        if (runs.length < size || out.length >= limit) return out.slice(0, limit);
        before = runs.at(-1)?.run_id;
      }
    }),
  );
  return found
    .flat()
    .sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0))
    .slice(0, limit);
}

/**
 * The runs of live threads (`running` or `waiting`) of `workflows`, oldest first: what a
 * recovery looks at, read from the index by entry and status — not every run there is.
 */
export async function liveThreadRuns(
  runtime: Runtime,
  workflows: readonly string[],
): Promise<RunRecord[]> {
  const out: RunRecord[] = [];
  for (const name of workflows) {
    let before: string | undefined;
    for (;;) {
      const runs = await runtime.store.pageRuns({
        entry: `${WORKFLOW_ENTRY}${name}`,
        status: ['running', 'waiting'],
        limit: PAGE,
        ...(before === undefined ? {} : { before }),
      });
      out.push(...runs);
      if (runs.length < PAGE) break;
      before = runs.at(-1)?.run_id;
    }
  }
  return out.sort((a, b) =>
    a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0,
  );
}
