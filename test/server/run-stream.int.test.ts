/**
 * `GET /v1/runs/{run_id}/stream` over real HTTP: a run's changes as SSE — the run and its
 * steps as the reads answer them, then each again when it changes (a step submitted while
 * the stream is open, its start and end), closing once the run has ended and none of its
 * steps is live; the whole state for a stream opened on an ended run; 404 for an unknown
 * run or another user's.
 */
import { describe, expect, it } from 'vitest';
import { expectApiError, useTestServers } from '../support/server.js';

const servers = useTestServers('server-run-stream');

interface Frame {
  readonly id: string;
  readonly event: string;
  readonly data: Record<string, unknown>;
}

/** Reads the SSE frames of `res`, handing each to `onFrame`, until the server closes it. */
async function readFrames(
  res: Response,
  onFrame: (f: Frame) => void | Promise<void>,
): Promise<Frame[]> {
  const all: Frame[] = [];
  const reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream());
  let buffer = '';
  for await (const chunk of reader) {
    buffer += chunk;
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      if (block.startsWith(':')) continue;
      const field = (name: string) =>
        block
          .split('\n')
          .find((l) => l.startsWith(`${name}: `))
          ?.slice(name.length + 2) ?? '';
      const frame = {
        id: field('id'),
        event: field('event'),
        data: JSON.parse(field('data')) as Record<string, unknown>,
      };
      all.push(frame);
      await onFrame(frame);
    }
  }
  return all;
}

describe('GET /v1/runs/{run_id}/stream', () => {
  it('opens with the run, sends each step as it is made and changes, and closes once the run has ended', async () => {
    const s = await servers.start({ tokenDelayMs: 5 });
    const run = await s.newRun({ seed: 2 });
    const res = await fetch(`${s.url}/v1/runs/${run.run_id}/stream`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    let stepId = '';
    let completed = false;
    const frames = await readFrames(res, async (f) => {
      if (f.event === 'run' && f.data['status'] === 'running' && stepId === '') {
        // The run is open and idle: a step submitted now shows on the stream.
        stepId = await s.submit(run.run_id, {
          type: 'agent',
          input: { agent: 'planner', message: 'Plan a trip to Oslo' },
        });
      }
      if (f.event === 'step' && f.data['step_id'] === stepId && f.data['status'] === 'succeeded') {
        // Wait for every step of the tree to end, then end the run.
        const steps = (await s.api('GET', `/v1/runs/${run.run_id}/steps`)).body as {
          status: string;
        }[];
        if (!completed && steps.every((st) => st.status === 'succeeded')) {
          completed = true;
          expect((await s.api('POST', `/v1/runs/${run.run_id}/complete`)).status).toBe(200);
        }
      }
    });
    // Ids grow by one; the first frame is the run as it was read.
    expect(frames.map((f) => Number(f.id))).toEqual(frames.map((_, i) => i + 1));
    expect(frames[0]).toMatchObject({ event: 'run', data: { run_id: run.run_id } });
    const last = frames.at(-1);
    expect(last?.event).toBe('run');
    expect(last?.data).toEqual((await s.api('GET', `/v1/runs/${run.run_id}`)).body);
    // Every step of the run came, and each one's last frame is its body as read now.
    const steps = (await s.api('GET', `/v1/runs/${run.run_id}/steps`)).body as {
      step_id: string;
    }[];
    expect(steps.length).toBeGreaterThan(1);
    for (const step of steps) {
      const mine = frames.filter((f) => f.event === 'step' && f.data['step_id'] === step.step_id);
      expect(mine.length).toBeGreaterThan(0);
      expect(mine.at(-1)?.data).toEqual(step);
    }
    // The submitted step was seen before it ended (running), then ended.
    const statuses = frames
      .filter((f) => f.event === 'step' && f.data['step_id'] === stepId)
      .map((f) => f.data['status']);
    expect(statuses.at(-1)).toBe('succeeded');
    expect(statuses.length).toBeGreaterThan(1);
  });

  it('gives the whole state of an ended run and closes', async () => {
    const s = await servers.start();
    const run = await s.newRun();
    const tool = await s.submit(run.run_id, {
      type: 'tool_call',
      input: { tool: 'add', args: { a: 1, b: 2 } },
    });
    await s.streamText(tool);
    expect((await s.api('POST', `/v1/runs/${run.run_id}/complete`)).status).toBe(200);
    const frames = await readFrames(await fetch(`${s.url}/v1/runs/${run.run_id}/stream`), () => {});
    expect(frames.map((f) => f.event)).toEqual(['step', 'run']);
    expect(frames[0]?.data).toEqual((await s.api('GET', `/v1/steps/${tool}`)).body);
    expect(frames[1]?.data).toMatchObject({ status: 'completed' });
  });

  it("answers 404 NOT_FOUND for an unknown run and another user's, 401 without a key", async () => {
    const keys = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdefgh' };
    const s = await servers.start({
      server: {
        keys: [
          { key: keys.alice, user_id: 'alice' },
          { key: keys.bob, user_id: 'bob' },
        ],
      },
    });
    const run = await s.newRun({}, { authorization: `Bearer ${keys.alice}` });
    const ask = (path: string, key?: string) =>
      s.api('GET', path, undefined, key ? { authorization: `Bearer ${key}` } : {});
    expectApiError(await ask(`/v1/runs/${run.run_id}/stream`, keys.bob), 404, 'NOT_FOUND');
    expectApiError(await ask('/v1/runs/run_nope/stream', keys.alice), 404, 'NOT_FOUND');
    expectApiError(await ask(`/v1/runs/${run.run_id}/stream`), 401, 'UNAUTHORIZED');
    const head = await fetch(`${s.url}/v1/runs/${run.run_id}/stream`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${keys.alice}` },
    });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toMatch(/^text\/event-stream/);
  });
});
