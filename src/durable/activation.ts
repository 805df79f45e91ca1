/**
 * @module An awake actor (issue 46): its record in memory and the loop that handles its
 * messages one at a time, in the order they were accepted — each a step of the actor's run,
 * run through the runtime's submission machinery (its budgets, policy, record / replay, trace)
 * with the message's end and the actor's next state in one store write. A message that waits
 * (a sleep, an event) leaves the actor `waiting`, and the activation goes from memory.
 */
import { isoTime } from '../context/clock.js';
import type { DurableAgentDefinition } from '../actors/durable-agent.js';
import { StepLifecycle } from '../actors/step-lifecycle.js';
import { InvalidParamsError } from '../errors/invalid-params-error.js';
import { toErrorPayload } from '../errors/to-error-payload.js';
import { attachRunCalls } from '../runs/run-calls.js';
import type { StepSubmission } from '../runs/step-request.js';
import type { ResumeFrom, StepEnding } from '../runs/submitted-step.js';
import type { ActorRecord } from '../store/actor-records.js';
import { zeroUsage, type RunRecord, type StepRecord, type StepStatus } from '../store/records.js';
import { flushed } from '../store/run-store.js';
import type { DurableHost } from './durable-host.js';
import { MessageTurn } from './message-turn.js';

/** How a message ended here: its status (`waiting`: it waits for a wake), and its end. */
export interface HandledMessage {
  /** `null` when its end could not be stored. */
  readonly status: StepStatus | null;
  readonly ending: StepEnding | null;
}

/** The run record of an actor's run, as it was created (see `openActorRun`). */
export function actorRun(actor: ActorRecord): RunRecord {
  return {
    run_id: actor.run_id,
    flow_id: null,
    mode: 'record',
    seed: null,
    budgets: {},
    status: 'running',
    budget_usage: zeroUsage(),
    provenance: null,
    entry: `actor:${actor.name}/${actor.key}`,
    // The actor's id is a hash: its 32 hex digits are its run's trace id.
    trace_id: actor.actor_id.slice('actor_'.length),
    user_id: actor.user_id,
    created_at: actor.created_at,
    ended_at: null,
    policy: {},
    pool_policy: {},
    fs_policy: null,
    replay_of: null,
    cancel_on_disconnect: false,
  };
}

/**
 * An actor's stored state brought up to `def`'s version: as it is, migrated, or — when that
 * cannot be done — the reason its messages fail (the stored state left as it is).
 */
export function bringUp(
  def: DurableAgentDefinition,
  actor: ActorRecord,
): { readonly actor: ActorRecord; readonly broken: Error | null } {
  const want = def.durable.version;
  if (actor.version === want) return { actor, broken: null };
  const { migrate } = def.durable;
  if (actor.version > want || !migrate) {
    return {
      actor,
      broken: new InvalidParamsError(
        actor.version > want
          ? `${def.name}/${actor.key} is stored at version ${actor.version}, newer than the definition's ${want}: its messages fail until a definition of that version runs`
          : `${def.name}/${actor.key} is stored at version ${actor.version} and ${def.name} is at ${want} with no migrate: its messages fail, its state is left as it is`,
        { param: 'version', details: { stored: actor.version, defined: want } },
      ),
    };
  }
  try {
    const migrated = migrate(actor.state, actor.version);
    const parsed = def.durable.state.safeParse(migrated);
    if (!parsed.success)
      throw new Error(`the migrated state does not match durable.state: ${parsed.error.message}`);
    return { actor: { ...actor, state: parsed.data }, broken: null };
  } catch (err) {
    return {
      actor,
      broken: new InvalidParamsError(
        `${def.name}/${actor.key} could not be migrated from version ${actor.version} to ${want}: ${err instanceof Error ? err.message : String(err)}`,
        { param: 'version', cause: err, details: { stored: actor.version, defined: want } },
      ),
    };
  }
}

/** An awake actor; see the module. */
export class Activation {
  readonly def: DurableAgentDefinition;
  /** The actor as stored, its state brought up to the definition's version. */
  actor: ActorRecord;
  /** Why its messages fail (a state that could not be migrated); `null` when they do not. */
  readonly broken: Error | null;
  /** The message being handled, if one is. */
  turn: MessageTurn | null = null;
  /** When it last handled or took a message (the clock's ms). */
  lastUsed: number;
  #draining: Promise<void> | null = null;
  #again = false;
  /** Set once it left memory: a drain in flight stops at its next message. */
  gone = false;
  readonly #host: DurableHost;

  constructor(host: DurableHost, def: DurableAgentDefinition, stored: ActorRecord) {
    this.#host = host;
    this.def = def;
    const up = bringUp(def, stored);
    this.actor = up.actor;
    this.broken = up.broken;
    this.lastUsed = host.clock.now();
  }

  /** Whether it is handling a message, or about to look for one. */
  get busy(): boolean {
    return this.#draining !== null;
  }

  /**
   * Handles its open messages one at a time until none is left (or one waits); a call while
   * it does so makes it look again once it is done. Resolves when it stopped. Never rejects.
   */
  drain(): Promise<void> {
    if (this.#draining) {
      this.#again = true;
      return this.#draining;
    }
    this.#again = false;
    this.#draining = this.#loop()
      .catch((err: unknown) => {
        this.#host.logger.error(
          { err, actor: `${this.def.name}/${this.actor.key}` },
          "an actor's messages could not be handled; it is put to sleep",
        );
        this.#host.passivate(this);
      })
      .finally(() => {
        this.#draining = null;
        this.lastUsed = this.#host.clock.now();
        // Work came while it stopped looking (a message, a wake that fired while its message
        // was being put aside): it looks again — or, gone from memory, a new activation does.
        if (this.#again) {
          this.#again = false;
          if (this.gone) void this.#host.resume(this.actor.actor_id);
          else void this.drain();
        }
      });
    return this.#draining;
  }

  async #loop(): Promise<void> {
    const { actors } = this.#host;
    const { mailbox } = this.def.durable;
    const { policy, maxQueue } = mailbox;
    for (;;) {
      if (this.gone) return;
      const open = await actors.openMessages(
        this.actor.actor_id,
        policy === 'merge' ? maxQueue + 1 : 1,
      );
      const first = open[0];
      if (!first) {
        // The last message's end left it idle (in the store, by the same write).
        this.actor = { ...this.actor, status: 'idle' };
        return;
      }
      if (first.status === 'waiting') {
        if (!(await this.#mayGoOn(first))) {
          // It waits on: nothing of the actor stays in memory until a wake fires.
          if (this.actor.status !== 'waiting') await this.#setStatus('waiting');
          this.#host.passivate(this);
          return;
        }
        await this.#setStatus('live');
      }
      let message = first.input;
      let merged: readonly StepRecord[] = [];
      if (first.status === 'queued' && policy === 'merge') {
        const queued = open.filter((s) => s.status === 'queued');
        if (queued.length > 1) {
          message = mailbox.merge(queued.map((s) => s.input));
          merged = queued.slice(1);
        }
      }
      const handled = await this.#handle(first, message, merged);
      if (handled.status === 'waiting') {
        await this.#setStatus('waiting');
        this.#host.passivate(this);
        return;
      }
      if (handled.status === null) {
        // Its end could not be stored: what the store holds is read afresh next time.
        this.#host.passivate(this);
        return;
      }
    }
  }

  /** Whether waiting message `step` goes on: its wake fired, or its approval was decided. */
  async #mayGoOn(step: StepRecord): Promise<boolean> {
    const wakes = await this.#host.actors.actorWakes(this.actor.actor_id);
    if (wakes.some((w) => w.step_id === step.step_id && w.status === 'fired')) return true;
    const approvals = await this.#host.store.listApprovals(step.run_id);
    const latest = approvals.filter((a) => a.step_id === step.step_id).at(-1);
    return latest !== undefined && latest.status !== 'pending';
  }

  async #setStatus(status: ActorRecord['status']): Promise<void> {
    const now = isoTime(this.#host.clock.now());
    await this.#host.actors.setActorStatus(this.actor.actor_id, status, now);
    this.actor = { ...this.actor, status, updated_at: now };
  }

  /** Handles message `step` (with `message`, the fold of `merged` too): see the module. */
  async #handle(
    step: StepRecord,
    message: unknown,
    merged: readonly StepRecord[],
  ): Promise<HandledMessage> {
    const host = this.#host;
    const turn = new MessageTurn(
      {
        def: this.def,
        actor: this.actor,
        broken: this.broken,
        stepId: step.step_id,
        message,
        merged: merged.map((s) => s.step_id),
      },
      host.clock,
    );
    const run = actorRun(this.actor);
    const fresh = step.status === 'queued';
    let resume: ResumeFrom;
    if (fresh) {
      await host.actors.takeMessage(this.actor.actor_id, step.step_id);
      resume = { record: step, lifecycle: new StepLifecycle(step.step_id), logged: [], fresh, run };
    } else {
      // Interrupted (a restart) or woken from a wait: it goes on from its log.
      const logged = await host.store.readEvents(step.step_id);
      resume = {
        record: step,
        lifecycle: StepLifecycle.fromLog(step.step_id, logged),
        logged,
        run,
      };
    }
    const submissions = host.submissions;
    const held = submissions.contextFor(run, undefined, undefined, {
      userId: this.actor.user_id,
    });
    // Its calls are recorded under its client token, or its step's id when it has none: the
    // same each time it runs (a wait runs it again).
    const calls = submissions.callsFor(run, step.client_token ?? step.step_id, !fresh, 'here');
    attachRunCalls(held.ctx, calls);
    const out: { status: StepStatus | null; ending: StepEnding | null } = {
      status: null,
      ending: null,
    };
    const submission: StepSubmission = {
      clientToken: step.client_token,
      resume,
      onClaimed: (record) => {
        held.claimed(record.step_id);
      },
      onEnded: (s, end) => {
        out.status = s;
        out.ending = end ?? null;
      },
      actorEnd: (s, error) => turn.actorEnd(s, error),
    };
    this.turn = turn;
    host.turnStarted(turn);
    try {
      await submissions.runAgent(this.def.name, message as never, held.ctx, run.run_id, submission);
    } catch (err) {
      // Refused before its step ran again (its breaker, a closed runtime): it fails, its
      // state stays, its mailbox slot is given up.
      host.logger.warn({ err, step_id: step.step_id }, 'a message failed before it ran');
      const error = toErrorPayload(err);
      await host.store.endStep({
        stepId: step.step_id,
        runId: run.run_id,
        events: [],
        patch: { status: 'failed', error, ended_at: isoTime(host.clock.now()) },
        actor: turn.actorEnd('failed', error),
      });
      await flushed(host.store);
      out.status = 'failed';
      out.ending = { status: 'failed', output: null, error };
    } finally {
      held.release();
      this.turn = null;
      host.turnEnded(turn);
    }
    const next = turn.nextState;
    if (out.status === 'succeeded' && next) {
      this.actor = { ...this.actor, state: next.value, version: this.def.durable.version };
    }
    this.lastUsed = host.clock.now();
    host.messageEnded(step.step_id, merged, out.status, out.ending);
    return out;
  }
}
