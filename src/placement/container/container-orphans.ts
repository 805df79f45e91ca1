/**
 * @module The containers a process of this host left behind when it was killed before it
 * could close its runtime: found by the process id their names carry, and removed.
 */
import { hostname } from 'node:os';
import type { Logger } from '../../observability/logger.js';
import type { ContainerEngine } from './container-engine.js';

/** Whether process `pid` of this host is alive (one of another user counts). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the containers a process of this host that is gone left behind (killed before it
 * could close its runtime): their names carry the process's id (`axon-<pool>-p<pid>-<n>`).
 */
export async function sweepOrphans(engine: ContainerEngine, logger: Logger): Promise<void> {
  try {
    const names = await engine.list(`axon.host=${hostname()}`);
    const orphans = names.filter((name) => {
      const pid = /^axon-[\w]+-p(\d+)-\d+$/.exec(name)?.[1];
      return pid !== undefined && !processAlive(Number(pid));
    });
    if (orphans.length === 0) return;
    await engine.remove(orphans);
    logger.warn(
      { containers: orphans },
      'container placement: removed containers of processes that are gone',
    );
  } catch (err) {
    logger.warn({ err }, 'container placement: could not look for containers left behind');
  }
}
