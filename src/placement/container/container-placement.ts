/**
 * @module Container placement, the host side: runs an agent's or a tool's step in a
 * container of the runtime's pool, feeds what the container sends into the step actor as
 * for a worker step (its host calls on the step's own context), removes the container at
 * once when the step is cancelled or times out, and turns a container's death into the
 * step's typed error: `WORKER_RESET` naming the cause (`oom`, `exit`, `killed`, `protocol`),
 * or `POOL_UNAVAILABLE` when the engine could not start it.
 */
import type { ExecContext } from '../../context/exec-context.js';
import { CancelledError } from '../../errors/cancelled-error.js';
import { PoolUnavailableError } from '../../errors/pool-unavailable-error.js';
import { WorkerResetError } from '../../errors/worker-reset-error.js';
import type { AgentRuntime } from '../../actors/agent-runtime.js';
import type { AgentInput } from '../../actors/agent-result.js';
import type { StepActor } from '../../actors/step-actor.js';
import type { ContainerMount } from './container-options.js';
import { ContainerDeathError } from './container-death.js';
import type { ContainerLaunch, ContainerPool } from './container-pool.js';
import { HostSide, outcomeValue, WORKER_STREAM_CREDIT } from '../worker/worker-placement.js';

/** A behaviour that runs in a container: the module (on the host) and export holding it. */
export interface ContainerBehaviour {
  readonly kind: 'agent' | 'tool';
  readonly name: string;
  readonly module: string;
  readonly export: string;
}

/** What container placement needs from its runtime. */
export interface ContainerHost {
  /** The runtime's container pool, started on first use. */
  pool(): ContainerPool;
  /** The host folders a step of `ctx`'s run may see: what its `fs_policy` grants whole. */
  mounts(ctx: ExecContext): Promise<readonly ContainerMount[]>;
}

/** Characters of a container's standard error an error carries (its end). */
const ERROR_STDERR = 2_048;

/** A container's death as the step's error. */
function deathError(err: ContainerDeathError, behaviour: ContainerBehaviour): Error {
  const details = {
    [behaviour.kind]: behaviour.name,
    cause: err.death,
    container: err.container,
    exit_code: err.exitCode,
    signal: err.signal,
    stderr: err.stderr.slice(-ERROR_STDERR),
  };
  if (err.death === 'cancelled' || err.death === 'closed') {
    return new CancelledError(`${behaviour.kind} "${behaviour.name}": ${err.message}`, {
      cause: err,
    });
  }
  if (err.death === 'start_failed') {
    const missing =
      /image not known|no such image|not found: manifest unknown|pull access denied/i.test(
        err.message,
      );
    return new PoolUnavailableError(
      `${behaviour.kind} "${behaviour.name}" was not run: ${err.message}${missing ? ' (make the image with `axon image build`, or set container.image)' : ''}`,
      { cause: err, details, retriable: !missing },
    );
  }
  return new WorkerResetError(
    `the container running ${behaviour.kind} "${behaviour.name}" died: ${err.message}`,
    { cause: err, details },
  );
}

/**
 * Runs `behaviour`'s step in a container. Resolves the handler's output (or its special
 * outcome); rejects with the handler's error, or the container's death as a typed error.
 */
export async function executeInContainer(
  host: ContainerHost,
  behaviour: ContainerBehaviour,
  input: AgentInput,
  ctx: ExecContext,
  step: StepActor,
  runtime: AgentRuntime,
): Promise<unknown> {
  const pool = host.pool();
  const launch: ContainerLaunch = { ...behaviour, mounts: await host.mounts(ctx) };
  const stepId = step.stepId;
  // A cancel or a timeout removes the container at once: nothing of the step runs on.
  const offCancel = ctx.onCancel(() => {
    pool.cancel(stepId);
  });
  try {
    let outcome;
    try {
      outcome = await pool.runStep(
        {
          agent: behaviour.name,
          kind: behaviour.kind,
          module: behaviour.module,
          export: behaviour.export,
          input,
          ctx: ctx.toWire(),
          stepId,
          credit: WORKER_STREAM_CREDIT,
        },
        launch,
        new HostSide(step, ctx, runtime),
      );
    } catch (err) {
      throw err instanceof ContainerDeathError ? deathError(err, behaviour) : err;
    }
    return outcomeValue(outcome);
  } finally {
    offCancel();
  }
}
