/**
 * @module One MCP tool call, once its step exists (docs/mcp.md, "Runs and steps"): the step's
 * log followed to its end, each token sent on as a progress notification, the client's
 * cancellation (`notifications/cancelled`) turned into the step's cancel, and the step's end
 * as the call's result — `isError` when the step failed, so the model reads why. A step that
 * is suspended (a durable agent's sleep or event wait, an approval) ends the call with a
 * result saying it waits: it goes on by itself, its end in the store.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ConflictError } from '../../errors/conflict-error.js';
import type { Logger } from '../../observability/logger.js';
import type { Runtime } from '../../runtime/runtime.js';
import { STEP_ENDED } from '../../store/records.js';

/** How often a call looks whether its step has been suspended, ms. */
const WAITING_POLL_MS = 200;

/** The `_meta` key of a result: the step the call was. */
export const STEP_META = 'axon/step';

/** What a call's step is, for its result's `_meta`. */
export interface CallStep {
  readonly stepId: string;
  readonly runId: string;
  /** The message id, for a durable agent's message. */
  readonly messageId?: string;
}

/** What the call needs from the MCP request. */
export interface CallChannel {
  /** The request's cancellation (the SDK aborts it on `notifications/cancelled`). */
  readonly signal: AbortSignal;
  /** Sends one progress notification; `null` when the client asked for none. */
  readonly progress: ((progress: number, message: string) => Promise<void>) | null;
}

type Outcome =
  | { readonly kind: 'end'; readonly output: unknown }
  | { readonly kind: 'error'; readonly code: string; readonly message: string }
  | { readonly kind: 'waiting' };

/**
 * Follows step `step.stepId` to its end and resolves the call's result. Never rejects for
 * what the step did; a cancel is asked for as soon as the channel's signal aborts (and again
 * when a step that was queued starts).
 */
export async function followCall(
  runtime: Runtime,
  step: CallStep,
  channel: CallChannel,
  logger: Logger,
): Promise<CallToolResult> {
  const { stepId } = step;
  const follow = new AbortController();
  // Set by the callbacks below, read by the loop: an object, not `let`s the compiler narrows.
  const state: {
    cancelWanted: boolean;
    waiting: boolean;
    ended: boolean;
    timer: ReturnType<typeof setTimeout> | null;
  } = { cancelWanted: false, waiting: false, ended: false, timer: null };

  const cancel = (): void => {
    runtime.cancelStep(stepId).catch((err: unknown) => {
      // Queued (a durable agent's message behind others): cancelled once it starts, below.
      // Ended already: nothing to cancel.
      if (!(err instanceof ConflictError)) {
        logger.warn({ err, step_id: stepId }, 'an MCP cancellation could not cancel its step');
      }
    });
  };
  const onAbort = (): void => {
    state.cancelWanted = true;
    cancel();
  };
  if (channel.signal.aborted) onAbort();
  else channel.signal.addEventListener('abort', onAbort, { once: true });

  // A suspended step writes nothing to its log: its record says so.
  const look = (): void => {
    state.timer = setTimeout(() => {
      runtime
        .getStep(stepId)
        .then((record) => {
          if (state.ended) return;
          if (record?.status === 'waiting') {
            state.waiting = true;
            follow.abort();
          } else look();
        })
        .catch((err: unknown) => {
          logger.warn({ err, step_id: stepId }, 'an MCP call could not read its step');
          if (!state.ended) look();
        });
    }, WAITING_POLL_MS);
  };
  look();

  let outcome: Outcome | null = null;
  let tokens = 0;
  try {
    for await (const ev of runtime.followStep(stepId, { signal: follow.signal })) {
      if (ev.type === 'started') {
        if (state.cancelWanted) cancel();
      } else if (ev.type === 'token') {
        tokens += 1;
        if (channel.progress !== null && !channel.signal.aborted) {
          await channel.progress(tokens, ev.t).catch((err: unknown) => {
            logger.debug({ err, step_id: stepId }, 'a progress notification was not sent');
          });
        }
      } else if (ev.type === 'end') {
        outcome = { kind: 'end', output: ev.output };
      } else if (ev.type === 'error') {
        outcome = { kind: 'error', code: ev.code, message: ev.message };
      }
    }
  } finally {
    state.ended = true;
    if (state.timer !== null) clearTimeout(state.timer);
    channel.signal.removeEventListener('abort', onAbort);
  }
  if (outcome === null && !state.waiting) outcome = await recordedEnd(runtime, stepId);
  return resultOf(outcome ?? { kind: 'waiting' }, step);
}

/**
 * The end of step `stepId` as its record holds it: for a follow that ended on the record's
 * end with neither `end` nor `error` read (seen on SQLite under load, the record ended
 * before the log's last event could be read).
 */
async function recordedEnd(runtime: Runtime, stepId: string): Promise<Outcome> {
  const record = await runtime.getStep(stepId);
  if (record?.status === 'succeeded') return { kind: 'end', output: record.output };
  if (record !== null && STEP_ENDED.has(record.status)) {
    return {
      kind: 'error',
      code: record.error?.code ?? 'INTERNAL',
      message: record.error?.message ?? `step ${stepId} ended ${record.status}`,
    };
  }
  return { kind: 'error', code: 'INTERNAL', message: `the log of step ${stepId} ended early` };
}

/** A value as a text block's text: a string as it is, anything else as JSON. */
function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  return value === undefined ? '' : JSON.stringify(value);
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The call's result for its step's outcome. */
function resultOf(outcome: Outcome, step: CallStep): CallToolResult {
  const ids = {
    step_id: step.stepId,
    run_id: step.runId,
    ...(step.messageId === undefined ? {} : { message_id: step.messageId }),
  };
  switch (outcome.kind) {
    case 'end':
      return {
        content: [{ type: 'text', text: textOf(outcome.output) }],
        ...(isRecord(outcome.output) ? { structuredContent: outcome.output } : {}),
        _meta: { [STEP_META]: { ...ids, status: 'succeeded' } },
      };
    case 'error':
      return {
        isError: true,
        content: [{ type: 'text', text: `${outcome.code}: ${outcome.message}` }],
        _meta: {
          [STEP_META]: {
            ...ids,
            status: outcome.code === 'CANCELLED' ? 'cancelled' : 'failed',
            error: { code: outcome.code, message: outcome.message },
          },
        },
      };
    case 'waiting':
      return {
        content: [
          {
            type: 'text',
            text: `step ${step.stepId} is waiting (a durable sleep, an event or an approval); it goes on by itself, and its end is kept in the store`,
          },
        ],
        _meta: { [STEP_META]: { ...ids, status: 'waiting' } },
      };
  }
}
