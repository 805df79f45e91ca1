/**
 * @module How a container step ended without a result, as an error: the verdict the
 * container pool gives when a container's engine client exits while it runs a step.
 */
import type { DiedLine } from './container-wire.js';

/** Why a container ended its step without a result. */
export type ContainerDeath =
  /** The kernel killed it at its memory limit. */
  | 'oom'
  /** Its program exited (a crash, `process.exit`). */
  | 'exit'
  /** Killed from outside (not by axon), or its init died. */
  | 'killed'
  /** The step was cancelled or timed out: axon removed it. */
  | 'cancelled'
  /** It broke the protocol (a message about another step, items past its credit, …). */
  | 'protocol'
  /** The engine could not start it (no image, a bad flag): its message says why. */
  | 'start_failed'
  /** The pool closed. */
  | 'closed';

/** A container step that ended without a result: how, and what the container said last. */
export class ContainerDeathError extends Error {
  readonly death: ContainerDeath;
  readonly container: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stderr: string;

  constructor(
    death: ContainerDeath,
    message: string,
    fields: { container: string; exitCode: number | null; signal: string | null; stderr: string },
  ) {
    super(message);
    this.name = 'ContainerDeathError';
    this.death = death;
    this.container = fields.container;
    this.exitCode = fields.exitCode;
    this.signal = fields.signal;
    this.stderr = fields.stderr;
  }
}

/** What is known of a container when it ended: what it said, and how its client exited. */
export interface ContainerEnd {
  readonly name: string;
  /** Its runner said it was up. */
  readonly ready: boolean;
  /** How its init said the runner died, if it did. */
  readonly died: DiedLine | null;
  /** The end of its standard error (and stray output). */
  readonly stderr: string;
  /** Why axon removed it, if axon did. */
  readonly killedFor: ContainerDeath | null;
  /** Its memory limit, for the OOM message. */
  readonly memoryMb: number;
  /** The engine client's exit. */
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** The engine client could not be spawned. */
  readonly spawnError: Error | null;
}

/** The verdict on a container that ended while running a step. */
export function deathOf(box: ContainerEnd): ContainerDeathError {
  const { code, signal, spawnError } = box;
  const fields = {
    container: box.name,
    exitCode: box.died?.code ?? code,
    signal: box.died?.signal ?? signal,
    stderr: box.stderr,
  };
  const last = box.stderr.trim().split('\n').slice(-3).join(' | ');
  if (spawnError) {
    return new ContainerDeathError(
      'start_failed',
      `the engine did not run: ${spawnError.message}`,
      fields,
    );
  }
  if (box.killedFor) {
    const why =
      box.killedFor === 'protocol'
        ? `it broke the protocol (${last})`
        : box.killedFor === 'cancelled'
          ? 'its step was cancelled'
          : 'the pool closed';
    return new ContainerDeathError(
      box.killedFor,
      `container ${box.name} was removed: ${why}`,
      fields,
    );
  }
  if (box.died?.oom) {
    return new ContainerDeathError(
      'oom',
      `container ${box.name} ran out of memory (its limit is ${box.memoryMb} MiB) and was killed`,
      fields,
    );
  }
  if (box.died) {
    return new ContainerDeathError(
      'exit',
      `container ${box.name}'s program ${box.died.signal ? `was killed by ${box.died.signal}` : `exited with code ${box.died.code}`}${last ? `: ${last}` : ''}`,
      fields,
    );
  }
  if (!box.ready) {
    return new ContainerDeathError(
      'start_failed',
      `container ${box.name} did not start (engine exit ${code ?? signal}): ${last || 'no output'}`,
      fields,
    );
  }
  return new ContainerDeathError(
    'killed',
    `container ${box.name} was killed from outside (engine exit ${code ?? signal})${last ? `: ${last}` : ''}`,
    fields,
  );
}
