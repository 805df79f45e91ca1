/**
 * @module Record and replay (NERVE-4021, NERVE-4022): the engine and tool calls of a step
 * submitted to a run, numbered per actor path, stored in `record` mode and served from the
 * recorded run in `replay` and `strict_replay` modes. The calls themselves are made (or not)
 * by `engine-call.ts` and `tool-call.ts`; this file decides and keeps the books.
 */
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { canonicalHash } from '../context/canonical-json.js';
import type { CallFacts } from '../context/call-facts.js';
import type { Clock } from '../context/clock.js';
import type { ExecContext } from '../context/exec-context.js';
import type { ChatRequest, ChatToolCall, Engine } from '../engines/chat-request.js';
import type { ChatResult } from '../engines/chat-tokens.js';
import { paramsHash, promptHash } from '../engines/request-hash.js';
import { BudgetExceededError } from '../errors/budget-exceeded-error.js';
import { CancelledError } from '../errors/cancelled-error.js';
import { fromErrorPayload } from '../errors/remote-error.js';
import { ReplayMismatchError } from '../errors/replay-mismatch-error.js';
import { toErrorPayload, type ErrorPayload } from '../errors/to-error-payload.js';
import type {
  CallRecording,
  FlowRecord,
  PlacementDecision,
  RecordedCallKind,
  RecordedInputs,
  RecordingKey,
  RunMode,
  RunRecord,
} from '../store/records.js';
import type { RunStore } from '../store/run-store.js';
import { compileJsonSchema } from '../tools/json-schema.js';

/** A submitted step as an approval sees it (`approvals.ts`). */
export interface SuspendableStep {
  readonly stepId: string;
  readonly ctx: ExecContext;
  /** True while the step takes events. */
  isOpen(): boolean;
  /** Emits a `narration` on the step. */
  narrate(text: string): void;
  /** The step's lifecycle, as XState's persisted snapshot. */
  persistedSnapshot(): unknown;
}

/** What an engine call's recording holds as its output. */
export interface RecordedEngineOutput {
  /** The token stream, as it was streamed. */
  readonly tokens: readonly string[];
  readonly tool_calls: readonly ChatToolCall[];
  readonly finish_reason: string | null;
  readonly model: string;
  readonly tokens_in: number;
  readonly tokens_out: number;
  readonly cost_usd: number;
  readonly facts: CallFacts | null;
  /** Set when the call failed: the replay fails the same way, after the same tokens. */
  readonly error: ErrorPayload | null;
}

/** What a tool call's recording holds as its output. */
export interface RecordedToolOutput {
  readonly value: unknown;
  readonly error: ErrorPayload | null;
}

/** Compiled tool declarations of flows, by flow hash and tool (a flow never changes). */
const declaredTools = new Map<string, ValidateFunction>();
/**
 * The tool declarations of flows read lately, per store, by flow id: a flow never changes
 * once stored, so a run's tool calls need not read it each time. (Per store: ids from a
 * seeded id source repeat across stores.)
 */
const flowTools = new WeakMap<RunStore, Map<string, Pick<FlowRecord, 'hash' | 'tools'>>>();
/** Flows (and compiled declarations) kept; past it the oldest go. */
const KEPT_FLOWS = 512;

/** Sets `key` in `map`, the oldest entry going once there are `KEPT_FLOWS`. */
function keep<V>(map: Map<string, V>, key: string, value: V): void {
  if (map.size >= KEPT_FLOWS) map.delete(map.keys().next().value as string);
  map.set(key, value);
}

/** The order in which `strict_replay` compares an engine call's inputs (NERVE-4022). */
const ENGINE_FIELDS = ['engine', 'model', 'seed', 'prompt_hash', 'params_hash', 'replica'] as const;
const TOOL_FIELDS = ['tool', 'args_hash'] as const;

/**
 * The calls of one step submitted to a run, and of every step below it: they are numbered
 * per actor path in the order they are made (the call sequence), and recorded or replayed
 * according to the run's mode. Calls made concurrently by one actor are numbered in the
 * order they start, which a replay must repeat to match.
 */
export class RunCalls {
  readonly runId: string;
  readonly mode: RunMode;
  /** The run's seed: every engine call of the run that names none gets it. */
  readonly seed: number | null;
  /** The recorded run this one replays; `null` in `record` mode. */
  readonly replayOf: string | null;
  /**
   * The client token of the submitted step: what a replay matches its calls by. A step
   * submitted without one is not recorded (a replay could not find it).
   */
  readonly clientToken: string | null;
  /** The replica engine calls report (NERVE-4022 compares it). */
  readonly replica: string | null;
  /** The run's own policy (API.md), which narrows the runtime's. */
  readonly policy: Readonly<Record<string, unknown>>;
  /** The run's `fs_policy` (API.md), which binds its FS broker; `null` for none. */
  readonly fsPolicy: Readonly<Record<string, unknown>> | null;
  /**
   * True when the submitted step runs again to go on after an approval: the calls it made
   * before it was suspended are served from this run's own recording, not made again.
   */
  readonly resumed: boolean;
  /**
   * Where the run's steps are placed, and why (from its `pool_policy`); `null` leaves it to
   * the step runner's default.
   */
  readonly placement: PlacementDecision | null;
  /** The submitted step, once it runs: where an approval suspends it. */
  root: SuspendableStep | null = null;
  readonly #store: RunStore;
  readonly #clock: Clock;
  readonly #counters = new Map<string, number>();
  readonly #flowId: string | null;
  #flow: Promise<FlowRecord | null> | null = null;

  constructor(
    store: RunStore,
    clock: Clock,
    run: Pick<
      RunRecord,
      'run_id' | 'flow_id' | 'mode' | 'seed' | 'replay_of' | 'policy' | 'fs_policy'
    >,
    clientToken: string | null,
    replica: string | null = null,
    resumed = false,
    placement: PlacementDecision | null = null,
  ) {
    this.#store = store;
    this.#clock = clock;
    this.runId = run.run_id;
    this.mode = run.mode;
    this.seed = run.seed;
    this.replayOf = run.replay_of;
    this.clientToken = clientToken;
    this.replica = replica;
    this.policy = run.policy;
    this.fsPolicy = run.fs_policy;
    this.resumed = resumed;
    this.placement = placement;
    this.#flowId = run.flow_id;
  }

  /**
   * The run's flow's declaration of tool `name` (its `tools[].parameters`), compiled; `null`
   * when the run has no flow or the flow declares no such tool. A tool call of the run is
   * checked against it as well as against the registered tool.
   */
  async declaredTool(name: string): Promise<ValidateFunction | null> {
    const flowId = this.#flowId;
    if (flowId === null) return null;
    let kept = flowTools.get(this.#store);
    if (!kept) {
      kept = new Map();
      flowTools.set(this.#store, kept);
    }
    let flow = kept.get(flowId);
    if (!flow) {
      const read = await (this.#flow ??= this.#store.getFlow(flowId));
      if (!read) return null;
      flow = { hash: read.hash, tools: read.tools };
      keep(kept, flowId, flow);
    }
    const declared = flow.tools.find((t) => t.name === name);
    if (!declared) return null;
    const key = `${flow.hash}\u0000${name}`;
    let validate = declaredTools.get(key);
    if (!validate) {
      validate = compileJsonSchema(`the flow's tool ${name}`, declared.parameters);
      keep(declaredTools, key, validate);
    }
    return validate;
  }

  /** True in `replay` and `strict_replay` mode: calls are served, never made. */
  get replaying(): boolean {
    return this.mode !== 'record';
  }

  /** True in `record` mode for a step with a client token: its calls are stored. */
  get recording(): boolean {
    return this.mode === 'record' && this.clientToken !== null;
  }

  /**
   * The id of the approval the next call of the actor at `path` that needs one asks for: the
   * same when the step runs again after the decision, which is how it finds the decision.
   * `null` without a client token (such a step cannot wait for an approval).
   */
  nextApprovalId(path: readonly string[]): string | null {
    return this.#derivedId('approval', 'apr', path);
  }

  /**
   * The id of the next fact the actor at `path` emits: the same for the same fact of the
   * same submitted step, so a step run again after a restart does not store its facts twice
   * (facts are idempotent). `null` without a client token (a random id is used then).
   */
  nextFactId(path: readonly string[]): string | null {
    return this.#derivedId('fact', 'fact', path);
  }

  /** The next of the ids of `kind` the actor at `path` takes, derived from where it sits. */
  #derivedId(kind: 'fact' | 'approval', prefix: string, path: readonly string[]): string | null {
    if (this.clientToken === null) return null;
    const below = path.slice(1);
    const at = `${kind}\u0000${below.join('\u0001')}`;
    const n = (this.#counters.get(at) ?? 0) + 1;
    this.#counters.set(at, n);
    // Facts hash without their kind, as they always have: their ids stay the same.
    const hash = canonicalHash(
      kind === 'fact'
        ? { run: this.runId, token: this.clientToken, path: below, n }
        : { kind, run: this.runId, token: this.clientToken, path: below, n },
    );
    return `${prefix}_${hash.slice(0, 32)}`;
  }

  /**
   * In a resumed step (see {@link resumed}), the recording this run made of the call at
   * `key` before the step was suspended; `null` for a call it had not made, and always
   * outside a resumed step.
   */
  async own(key: RecordingKey): Promise<CallRecording | null> {
    return this.resumed ? this.#store.getRecording(this.runId, key) : null;
  }

  /**
   * The next call of the actor at `path`. Keys hold the path below the submitted step (whose
   * own name — an `llm_call`'s engine, say — may be what a replay changes): the step itself
   * is `[]`, an agent it delegates to `['calendar']`.
   */
  next(path: readonly string[]): RecordingKey {
    const below = path.slice(1);
    const at = below.join('\u0001');
    const seq = (this.#counters.get(at) ?? 0) + 1;
    this.#counters.set(at, seq);
    return { client_token: this.clientToken ?? '', actor_path: below, seq };
  }

  /** Stores a call made in `record` mode. */
  async record(
    key: RecordingKey,
    kind: RecordedCallKind,
    name: string,
    inputs: RecordedInputs,
    output: RecordedEngineOutput | RecordedToolOutput,
  ): Promise<void> {
    await this.#store.putRecording({
      run_id: this.runId,
      client_token: key.client_token,
      actor_path: key.actor_path,
      seq: key.seq,
      kind,
      name,
      inputs,
      output,
      ts: this.#clock.now(),
    });
  }

  /**
   * The recording of the call at `key` in the recorded run, checked: its kind, and in
   * `strict_replay` every determinism input, in a fixed order (NERVE-4022). Throws
   * {@link ReplayMismatchError} naming the first field that differs, or `recording` when the
   * recorded run made no such call.
   */
  async recorded(
    key: RecordingKey,
    kind: RecordedCallKind,
    inputs: () => RecordedInputs,
  ): Promise<CallRecording> {
    try {
      return await this.#recorded(key, kind, inputs);
    } catch (err) {
      // In strict_replay a difference anywhere in the step's tree ends the submitted step
      // with it, whatever the caller makes of its failed call (NERVE-4022): a handler that
      // caught it would otherwise end with an output the recording never had.
      if (this.mode === 'strict_replay' && err instanceof ReplayMismatchError) {
        this.root?.ctx.cancel(err);
      }
      throw err;
    }
  }

  /**
   * In `strict_replay`, refuses a submitted step that made fewer calls than the recorded
   * step did: its token streams could not be the recorded ones (NERVE-4021). Call it when
   * the step's work is done.
   */
  async replayedInFull(): Promise<void> {
    if (this.mode !== 'strict_replay' || this.clientToken === null) return;
    const recorded = await this.#store.listRecordings(this.replayOf ?? '');
    for (const rec of recorded) {
      if (rec.client_token !== this.clientToken) continue;
      const made = this.#counters.get(rec.actor_path.join('\u0001')) ?? 0;
      if (rec.seq > made) {
        const below = rec.actor_path.join('/');
        throw new ReplayMismatchError(
          'recording',
          `call ${rec.seq} of ${below ? `"${below}" in ` : ''}the step with client token "${this.clientToken}" was recorded but not made (${made} made)`,
          { expected: rec.seq, actual: made },
        );
      }
    }
  }

  async #recorded(
    key: RecordingKey,
    kind: RecordedCallKind,
    inputs: () => RecordedInputs,
  ): Promise<CallRecording> {
    const below = key.actor_path.join('/');
    const where = `call ${key.seq} of ${below ? `"${below}" in ` : ''}the step with client token "${key.client_token}"`;
    const rec = await this.#store.getRecording(this.replayOf ?? '', key);
    if (!rec) {
      throw new ReplayMismatchError(
        'recording',
        `run ${this.replayOf ?? '?'} has no recording of ${where}`,
      );
    }
    if (rec.kind !== kind) {
      throw new ReplayMismatchError('kind', `${where} was a ${rec.kind} call, now a ${kind} call`, {
        expected: rec.kind,
        actual: kind,
      });
    }
    if (this.mode === 'strict_replay') {
      const now = inputs();
      for (const field of kind === 'engine' ? ENGINE_FIELDS : TOOL_FIELDS) {
        const expected = rec.inputs[field] ?? null;
        const actual = now[field] ?? null;
        if (expected !== actual) {
          throw new ReplayMismatchError(
            field,
            `${where} was recorded with ${field} ${JSON.stringify(expected)}, now ${JSON.stringify(actual)}`,
            { expected, actual },
          );
        }
      }
    }
    return rec;
  }
}

const scopes = new WeakMap<ExecContext, RunCalls>();

/** Makes `calls` the books of every call made under `ctx` (the submitted step's context). */
export function attachRunCalls(ctx: ExecContext, calls: RunCalls): void {
  scopes.set(ctx, calls);
}

/** The books of the calls made under `ctx`, from it or its nearest ancestor; `null` outside a run's submitted step. */
export function runCallsOf(ctx: ExecContext): RunCalls | null {
  for (let c: ExecContext | null = ctx; c !== null; c = c.parent) {
    const calls = scopes.get(c);
    if (calls) return calls;
  }
  return null;
}

/**
 * An engine call's determinism inputs (NERVE-4022). `facts`, when the call was made, already
 * hold its hashes (`chatTokens` computed them): they are not computed again.
 */
export function engineInputs(
  engine: Engine,
  request: ChatRequest,
  replica: string | null,
  facts: CallFacts | null = null,
): RecordedInputs {
  return {
    engine: engine.name,
    model: request.model ?? engine.defaultModel,
    seed: request.seed ?? null,
    prompt_hash: facts?.promptHash ?? promptHash(request),
    params_hash: facts?.paramsHash ?? paramsHash(request, engine),
    replica,
  };
}

/** A tool call's determinism inputs. */
export function toolInputs(tool: string, args: unknown): RecordedInputs {
  return { tool, args_hash: canonicalHash(args ?? null) };
}

/** The output an engine call's recording keeps. */
export function engineOutput(
  tokens: readonly string[],
  result: ChatResult | null,
  error: unknown,
): RecordedEngineOutput {
  return {
    tokens,
    tool_calls: result?.toolCalls ?? [],
    finish_reason: result?.finishReason ?? null,
    model: result?.model ?? '',
    tokens_in: result?.tokensIn ?? 0,
    tokens_out: result?.tokensOut ?? tokens.length,
    cost_usd: result?.costUsd ?? 0,
    facts: result?.facts ?? null,
    error: error === null ? null : toErrorPayload(error),
  };
}

/**
 * Whether a failed call is part of the recording: a failure of the engine or tool, or a
 * budget refusal, is (the replay must fail alike); the caller's own cancel is not.
 */
export function recordsFailure(err: unknown, ctx: ExecContext): boolean {
  if (err instanceof BudgetExceededError) return true;
  return !(err instanceof CancelledError || ctx.isCancelled());
}

/**
 * Runs a tool call's work under `ctx`'s books: made and recorded in `record` mode, served
 * from the recording (the tool not called) in the replay modes and, in a step resumed after
 * an approval, when the step made it before; made as is outside a run's submitted step.
 */
export async function bookedToolCall(
  ctx: ExecContext,
  tool: string,
  args: unknown,
  work: () => Promise<unknown>,
): Promise<unknown> {
  const calls = runCallsOf(ctx);
  if (!calls || !(calls.replaying || calls.recording)) return work();
  const key = calls.next(ctx.path);
  const served = calls.replaying
    ? await calls.recorded(key, 'tool', () => toolInputs(tool, args))
    : calls.resumed
      ? await calls.own(key)
      : null;
  if (served) {
    const out = served.output as RecordedToolOutput;
    if (out.error) throw fromErrorPayload(out.error);
    return out.value;
  }
  let value: unknown;
  try {
    value = await work();
  } catch (err) {
    if (recordsFailure(err, ctx)) {
      await calls.record(key, 'tool', tool, toolInputs(tool, args), {
        value: null,
        error: toErrorPayload(err),
      });
    }
    throw err;
  }
  await calls.record(key, 'tool', tool, toolInputs(tool, args), { value, error: null });
  return value;
}
