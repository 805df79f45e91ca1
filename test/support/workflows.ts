/** @module Test helper: ending what workflow engines of a test left running. */
import type { WorkflowEngine } from '../../src/workflows/workflow-engine.js';

/** Kills the threads `engines` left queued or started, closes each, and empties the list. */
export async function endEngines(engines: WorkflowEngine[]): Promise<void> {
  for (const e of engines.splice(0)) {
    for (const t of await e.threads({ status: ['queued', 'started'] })) {
      await e.kill(t.thread_id).catch(() => undefined);
    }
    await e.close();
  }
}
