/**
 * @module What a container says besides the worker protocol, where its program and module
 * live in it, and who may read the module. Kept apart from `container-entry.ts`, which runs
 * when it is loaded.
 */
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { PoolUnavailableError } from '../../errors/pool-unavailable-error.js';

/** Where the host mounts the container's program, its init (`container-entry.ts`, bundled). */
export const CONTAINER_ENTRY_PATH = '/opt/axon/container-entry.mjs';

/** Where the host mounts the step runner the init starts (`container-runner.ts`, bundled). */
export const CONTAINER_RUNNER_PATH = '/opt/axon/container-runner.mjs';

/**
 * The descriptor the link is on in a container whose engine hands one over (podman's
 * `--preserve-fds=1`): the first past standard error.
 */
export const CONTAINER_LINK_FD = 3;

/** Where the host mounts the folder of the module that holds a container behaviour. */
export const CONTAINER_MODULE_DIR = '/opt/axon/module';

/** The runner is up and reads steps (its first line). */
export interface ReadyLine {
  readonly t: 'ready';
}

/** How a container's runner died, as its init reports it in the last line. */
export interface DiedLine {
  readonly t: 'died';
  readonly code: number | null;
  readonly signal: string | null;
  /** The kernel killed a process of the container for memory. */
  readonly oom: boolean;
}

/**
 * Refuses (`POOL_UNAVAILABLE`, not retriable) a module the container's user could not read:
 * the module and its folder must be readable (and the folder searchable) by other users,
 * since the container runs unprivileged as `user`.
 */
export async function assertReadableModule(module: string, user: string): Promise<void> {
  const [dir, file] = await Promise.all([stat(dirname(module)), stat(module)]).catch(
    (err: unknown) => {
      throw new PoolUnavailableError(`container module ${module}: ${(err as Error).message}`, {
        retriable: false,
      });
    },
  );
  if ((dir.mode & 0o005) !== 0o005 || (file.mode & 0o004) === 0) {
    throw new PoolUnavailableError(
      `container module ${module}: its folder must be readable and searchable, and the file readable, by other users — the container runs as ${user} (chmod o+rx the folder, o+r the file)`,
      { retriable: false, details: { module } },
    );
  }
}
