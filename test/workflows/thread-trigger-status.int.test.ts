/**
 * @module What a trigger answers, on PostgreSQL: a thread that runs at once is answered
 * `started`, one that waits for a slot `queued` (docs/http-api.md, `POST
 * /v1/workflows/{name}/threads`), whatever the store's latency.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRole } from '../../src/adapters/create-role.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { postgresStore } from '../../src/store/postgres/postgres-store.js';
import { defineWorkflow, END } from '../../src/workflows/workflow-definition.js';
import { WorkflowEngine } from '../../src/workflows/workflow-engine.js';
import { dropSchemas, POSTGRES_URL, testSchema } from '../support/postgres.js';
import { quietRuntime } from '../support/runtime.js';
import { endEngines } from '../support/workflows.js';

const schemas = new Set<string>();
const engines: WorkflowEngine[] = [];
const runtimes: Runtime[] = [];
afterEach(async () => {
  await endEngines(engines);
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});
afterAll(() => dropSchemas(schemas));

/** A promise of a string and what resolves it. */
function deferred(): { promise: Promise<string>; resolve: (text: string) => void } {
  let resolve: (text: string) => void = () => undefined;
  const promise = new Promise<string>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('a thread triggered on PostgreSQL', () => {
  it('regression: one that runs at once is answered started, not queued (its start was read before it was stored)', async () => {
    const schema = testSchema(`trigger_${randomUUID().slice(0, 8)}`);
    schemas.add(schema);
    const runtime = quietRuntime({ store: postgresStore({ connection: POSTGRES_URL, schema }) });
    runtimes.push(runtime);
    // Each turn waits for the test: the threads that started still run at the last trigger.
    const gate = deferred();
    const engine = new WorkflowEngine(runtime, [
      defineWorkflow({
        name: 'solo',
        roles: { writer: { role: createRole(() => gate.promise, 'Write.', z.string()) } },
        moderator: (t) => (t.turns.length === 0 ? 'writer' : END),
        concurrency: { max: 3, overflow: 'queue', maxQueue: 1 },
      }),
    ]);
    engines.push(engine);
    // One after another, as a client does: each of the first three finds a free slot.
    const answers = [];
    for (const input of ['one', 'two', 'three', 'four']) {
      answers.push(await engine.trigger('solo', input));
    }
    expect(answers.map((t) => t.status)).toEqual(['started', 'started', 'started', 'queued']);
    expect(engine.get('solo')).toMatchObject({ running: 3, queued: 1 });
    // The answer is what the store holds, not a status made up for the reply.
    for (const t of answers) {
      expect((await engine.thread(t.thread_id))?.status).toBe(t.status);
    }
    gate.resolve('"written"'); // The role's answer, JSON of its output (a string).
    const last = answers.at(-1)?.thread_id ?? '';
    expect((await engine.wait(last)).status).toBe('completed');
  });
});
