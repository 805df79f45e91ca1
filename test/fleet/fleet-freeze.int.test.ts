/**
 * Fencing (issue 29), as an operator's fleet meets it: `axon serve --redis` and two
 * `axon worker` processes; the replica running a step is frozen (SIGSTOP) past its lock, the
 * other replica takes the step over and ends it, then the frozen one is thawed (SIGCONT).
 * The thawed replica's turn is over: its writes are refused, so the step's record and log
 * stay as the replica that finished it left them. With the records in Redis (fenced by the
 * job's lock) and in PostgreSQL (fenced by the later turn the other replica took, issue 32).
 */
import { describe, expect, it } from 'vitest';
import type { StepEvent } from '../../src/streams/events.js';
import { FAST_REPLICA_FLAGS, useTestFleet, type WorkerProcess } from '../support/fleet.js';
import { openStream, parseSse, request } from '../support/server.js';

describe.each([
  ['in Redis', false],
  ['in PostgreSQL', true],
] as const)('records %s', (_, postgres) => {
  const fleet = useTestFleet(postgres ? 'fleet-freeze-pg' : 'fleet-freeze', '', { postgres });

  function eventsOf(text: string): StepEvent[] {
    return parseSse(text).frames.map((f) => ({ ...f.data, type: f.event }) as unknown as StepEvent);
  }

  /** The JSON body of a request to the API at `url`. */
  async function json(url: string, method = 'GET', body?: unknown): Promise<unknown> {
    const { origin, pathname } = new URL(url);
    return (await request(origin, method, pathname, body)).body;
  }

  describe('a replica frozen past its lock, then thawed', () => {
    it('writes nothing once another replica has taken its step over: the record stays succeeded, the log ends with the end', async () => {
      const env = { AXON_SCRIPTED_TOKEN_MS: '10' };
      const [api, a, b] = await Promise.all([
        fleet.api(),
        fleet.worker('p', [], FAST_REPLICA_FLAGS, env),
        fleet.worker('p', [], FAST_REPLICA_FLAGS, env),
      ]);
      for (let i = 0; ; i++) {
        const pools = (await json(`${api.url}/v1/pools`)) as { replicas: unknown[] }[];
        if (pools[0]?.replicas.length === 2) break;
        if (i > 200) throw new Error('the two replicas never showed up');
        await new Promise((r) => setTimeout(r, 50));
      }
      const { flow_id } = (await json(`${api.url}/v1/flows`, 'POST', { name: 'freeze' })) as {
        flow_id: string;
      };
      const { run_id } = (await json(`${api.url}/v1/flows/${flow_id}/runs`, 'POST', {
        seed: 5,
      })) as { run_id: string };
      const { step_id } = (await json(`${api.url}/v1/runs/${run_id}/steps`, 'POST', {
        type: 'llm_call',
        input: { messages: [{ role: 'user', content: 'go' }], params: { max_tokens: 300 } },
      })) as { step_id: string };

      // Follow the stream; freeze the replica running the step once its tokens flow.
      const stream = await openStream(`${api.url}/v1/steps/${step_id}/stream`);
      const flowing = eventsOf(
        await stream.readUntil((t) => eventsOf(t).filter((e) => e.type === 'token').length >= 10),
      );
      const replica = (flowing[0] as { provenance: { replica_id: string } }).provenance.replica_id;
      const frozen: WorkerProcess | null = [a, b].find((w) => w.replicaId === replica) ?? null;
      expect(frozen).not.toBeNull();
      frozen?.child.kill('SIGSTOP');
      const text = await stream.readToEnd();
      const ended = eventsOf(text);
      expect(ended.at(-1)?.type).toBe('end');
      expect(((await json(`${api.url}/v1/steps/${step_id}`)) as { status: string }).status).toBe(
        'succeeded',
      );

      // Thawed: its processor goes on where it froze, and every write of it is refused.
      frozen?.child.kill('SIGCONT');
      await new Promise((r) => setTimeout(r, 3_000));
      const after = (await json(`${api.url}/v1/steps/${step_id}`)) as {
        status: string;
        error: unknown;
      };
      expect(after.status).toBe('succeeded');
      expect(after.error).toBeNull();
      const log = eventsOf(await (await fetch(`${api.url}/v1/steps/${step_id}/stream`)).text());
      expect(log.map((e) => e.seq)).toEqual(ended.map((e) => e.seq));
      expect(log.at(-1)?.type).toBe('end');
      expect(frozen?.output()).toMatch(/lost its turn|fenced/);
    });
  });
});
