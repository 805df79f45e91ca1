/**
 * @module A runtime's container placement: its pool (started on first use, or at once for
 * warm containers), and what a step's container may mount — the roots of its run's
 * `fs_policy`, when the policy grants them whole (no `allow` globs, which a mount cannot
 * enforce), read-write when it sets no byte quota (which a mount cannot count either),
 * read-only otherwise. A run without a policy mounts nothing.
 */
import type { ExecContext } from '../context/exec-context.js';
import type { Logger } from '../observability/logger.js';
import type { FsPolicy } from '../policy/fs-broker.js';
import type { Sandbox } from '../policy/sandbox.js';
import {
  resolveContainerOptions,
  type ContainerMount,
  type ContainerOptions,
} from '../placement/container/container-options.js';
import type { ContainerHost } from '../placement/container/container-placement.js';
import { ContainerPool } from '../placement/container/container-pool.js';
import { BASE_PLACEMENTS } from '../placement/pool-choice.js';
import { runCallsOf } from '../runs/run-calls.js';

/** A runtime's containers. */
export interface RuntimeContainers {
  readonly host: ContainerHost;
  /** Starts `warm` containers for a container agent or tool, if `warm` is set. */
  prewarm(behaviour: {
    readonly kind: 'agent' | 'tool';
    readonly name: string;
    readonly module: string;
    readonly export: string;
  }): void;
  /**
   * The placements this runtime offers its pool: the usual ones, and `container` once it was
   * given `container` options or a container agent or tool was registered.
   */
  placements(): readonly string[];
  /** Removes every container. */
  close(): Promise<void>;
}

/** The mounts a step of `ctx`'s run gets. */
export async function policyMounts(
  ctx: ExecContext,
  sandbox: Sandbox,
): Promise<readonly ContainerMount[]> {
  const policy = runCallsOf(ctx)?.fsPolicy as FsPolicy | null | undefined;
  if (!policy || !Array.isArray(policy.roots)) return [];
  if (policy.allow !== undefined) return [];
  const roots = await sandbox.runRoots(policy.roots);
  const writable = policy.quota_bytes === undefined;
  return roots.map((path) => ({ path, writable }));
}

/** The container placement of a runtime with `options` (checked now: a `RangeError`). */
export function runtimeContainers(
  options: ContainerOptions | undefined,
  logger: Logger,
  sandbox: Sandbox,
): RuntimeContainers {
  const resolved = resolveContainerOptions(options);
  let offered = options !== undefined;
  let pool: ContainerPool | null = null;
  const poolNow = (): ContainerPool => (pool ??= new ContainerPool(resolved, logger));
  return {
    host: { pool: poolNow, mounts: (ctx) => policyMounts(ctx, sandbox) },
    prewarm: (behaviour) => {
      offered = true;
      if (resolved.warm > 0) poolNow().prewarm({ ...behaviour, mounts: [] });
    },
    placements: () => (offered ? [...BASE_PLACEMENTS, 'container'] : BASE_PLACEMENTS),
    close: async () => {
      await pool?.close();
    },
  };
}
