/**
 * @module Where `axon workflow` and `axon thread` read and drive workflows and threads: a
 * running server (`--url`, `thread-server-source.ts`) or the data dir a server keeps
 * (`--data-dir`, `thread-data-dir-source.ts`, which runs a thread in-process). Both give the
 * same bodies — docs/http-api.md's Workflow and Thread — so a command is written once.
 */
import type { ThreadStatus, ThreadView } from '../../workflows/thread-records.js';
import type { WorkflowInfo } from '../../workflows/workflow-engine.js';

/** Thread statuses (docs/workflows.md). */
export { THREAD_STATUSES } from '../../workflows/thread-records.js';

/** A thread as both sources give it: the API's body (its owner is not shown). */
export type ThreadInfo = Omit<ThreadView, 'user_id'>;

/** A workflow as both sources give it, with its threads running and waiting. */
export type WorkflowSummary = WorkflowInfo;

/** Which threads to list. */
export interface ThreadQuery {
  readonly workflow?: string | undefined;
  readonly status?: readonly ThreadStatus[] | undefined;
  readonly limit: number;
}

/** What a thread's stream says while it runs: an event of turn `turn` of role `role`. */
export interface ThreadProgress {
  readonly turn: number;
  readonly role: string;
  /** The step event's type: `token`, `step_end`, … */
  readonly type: string;
}

/**
 * Workflows and threads, read from a server or a data dir. Failures are `CliError`s:
 * `NOT_FOUND` for an unknown workflow or thread, `UNREACHABLE` when the source cannot be
 * read, `REQUEST_FAILED` when the request is refused (a thread that has ended, a full queue).
 */
export interface ThreadSource {
  /** Where it reads, for messages: `http://127.0.0.1:7070`, `data dir .axon`. */
  readonly description: string;
  listWorkflows(): Promise<WorkflowSummary[]>;
  /** A workflow; `NOT_FOUND` for an unknown name. */
  getWorkflow(name: string): Promise<WorkflowSummary>;
  /** Threads, newest first. */
  listThreads(query: ThreadQuery): Promise<ThreadInfo[]>;
  /** A thread; `NOT_FOUND` when there is none with this id. */
  getThread(threadId: string): Promise<ThreadInfo>;
  /** Starts a thread of workflow `name` on `input`; resolves it as stored. */
  trigger(name: string, input: string): Promise<ThreadInfo>;
  /** Follows thread `threadId` to its end, telling `onProgress` each event; resolves the ended thread. */
  follow(threadId: string, onProgress: (p: ThreadProgress) => void): Promise<ThreadInfo>;
  /** Kills thread `threadId`; `REQUEST_FAILED` for one that has ended. */
  kill(threadId: string): Promise<ThreadInfo>;
  /** Releases the source; safe to call twice. */
  close(): Promise<void>;
}
