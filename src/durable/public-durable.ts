/**
 * @module Durable agents' types, as the public API (`src/index.ts`) re-exports them (issue 46);
 * nothing inside `src/` imports this file.
 */
export type {
  ActorContext,
  ActorTurn,
  DurableAgentDefinition,
  DurableAgentSpec,
  DurableHandler,
  DurableSpec,
  MailboxOptions,
  MailboxPolicy,
  RemindOptions,
  WaitForOptions,
} from '../actors/durable-agent.js';
export type { ActorHandle, ActorStream } from './actor-handle.js';
export type { ActorView, DurableAgents, DurableOptions } from './durable-agents.js';
export type { MessageReceipt, SendOptions } from './actor-intake.js';
export type { RefusedWait, SignalResult } from './actor-signals.js';
export type { ScheduleInput } from './actor-schedules.js';
export type * from '../store/actor-records.js';
export type { AcceptedMessage, ActorStore } from '../store/actor-store.js';
