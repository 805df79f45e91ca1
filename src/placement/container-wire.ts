/**
 * @module What a container says besides the worker protocol, and where its program lives in
 * it. Kept apart from `container-entry.ts`, which runs when it is loaded.
 */

/** Where the host mounts the container's program (`container-entry.ts`, bundled). */
export const CONTAINER_ENTRY_PATH = '/opt/axon/container-entry.mjs';

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
