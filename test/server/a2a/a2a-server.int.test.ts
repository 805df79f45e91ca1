/**
 * `axon serve`'s A2A server against the A2A SDK's own client (`@a2a-js/sdk/client`, made
 * from the card's URL) over real HTTP, on the project's store (SQLite; PostgreSQL under
 * `http-on-postgres`): the card, `SendMessage`, `SendStreamingMessage` (the tokens arrive as
 * artifact updates while the step runs), `CancelTask` (the step ends cancelled), an unknown
 * skill (a clear error, nothing made), and a task read back after the server restarts.
 */
import { randomUUID } from 'node:crypto';
import { TaskState, type StreamResponse } from '@a2a-js/sdk';
import { DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../../src/actors/define-agent.js';
import { POLL, useTestServers, type TestServer } from '../../support/server.js';
import {
  a2aClient,
  asTask,
  axonIds,
  kindOf,
  outputText,
  sendRequest,
  userMessage,
} from './a2a-client.js';

const servers = useTestServers('a2a-server');

/** Says one word, then waits until its step is cancelled. */
const waiter = defineAgent({
  name: 'waiter',
  description: 'Says one word, then waits until it is cancelled.',
  async *handler(_input, ctx) {
    yield 'waiting';
    await new Promise<void>((resolve) => {
      if (ctx.signal.aborted) resolve();
      else {
        ctx.signal.addEventListener(
          'abort',
          () => {
            resolve();
          },
          { once: true },
        );
      }
    });
  },
});

/** The runs the server's store holds (`GET /v1/runs`). */
async function runCount(s: TestServer): Promise<number> {
  const res = await s.api('GET', '/v1/runs');
  expect(res.status).toBe(200);
  return (res.body as unknown[]).length;
}

describe('the agent card', () => {
  it('lists the agents as skills, its JSON-RPC endpoint on the same server, for 1.0 and 0.3 clients', async () => {
    const s = await servers.start({ runtime: { agents: [waiter] } });
    const card = await new DefaultAgentCardResolver().resolve(s.url);
    expect(
      card.supportedInterfaces.map((i) => [i.url, i.protocolBinding, i.protocolVersion]),
    ).toEqual([
      [`${s.url}/a2a`, 'JSONRPC', '1.0'],
      [`${s.url}/a2a`, 'JSONRPC', '0.3'],
    ]);
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.skills.map((k) => [k.id, k.name, k.description])).toEqual([
      ['planner', 'planner', 'Plans a trip: picks the date, finds a flight, writes the plan.'],
      [
        'calendar',
        'calendar',
        'Resolves a day such as "next Tuesday" to a date and checks it is free.',
      ],
      ['flights', 'flights', 'Finds the cheapest flight for a destination and date.'],
      ['waiter', 'waiter', 'Says one word, then waits until it is cancelled.'],
    ]);
    // A 0.3 client asks without A2A-Version: the same card with its endpoint as `url`.
    const legacy = await fetch(`${s.url}/.well-known/agent-card.json`);
    expect(legacy.status).toBe(200);
    const body = (await legacy.json()) as {
      url: string;
      protocolVersion: string;
      skills: { id: string }[];
    };
    expect(body.url).toBe(`${s.url}/a2a`);
    expect(body.protocolVersion).toBe('0.3');
    expect(body.skills.map((k) => k.id)).toEqual(['planner', 'calendar', 'flights', 'waiter']);
  });
});

describe('SendMessage', () => {
  it('runs the named skill as an agent step of a run, and answers the completed task with its output', async () => {
    const s = await servers.start();
    const client = await a2aClient(s.url);
    const task = asTask(
      await client.sendMessage(
        sendRequest(userMessage('Plan a trip to Berlin next Tuesday', 'planner')),
      ),
    );
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(outputText(task)).toMatch(
      /^Here is your plan for Berlin\. Fly out on \d{4}-\d{2}-\d{2} with /,
    );
    expect(task.history.map((m) => m.parts[0]?.content)).toEqual([
      { $case: 'text', value: 'Plan a trip to Berlin next Tuesday' },
    ]);
    // The step, and its run, as the HTTP API and the trace UI show them.
    const { run_id, step_id, agent } = axonIds(task);
    expect(agent).toBe('planner');
    const step = await s.api('GET', `/v1/steps/${step_id}`);
    expect(step.body).toMatchObject({
      run_id,
      type: 'agent',
      name: 'planner',
      status: 'succeeded',
      input: { message: 'Plan a trip to Berlin next Tuesday' },
      output: outputText(task),
    });
    const run = await s.api('GET', `/v1/runs/${run_id}`);
    expect(run.body).toMatchObject({ status: 'completed', entry: `a2a:${task.id}` });
    // And it reads back by its id.
    const read = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(read.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(outputText(read)).toBe(outputText(task));
  });

  it('an agent whose output is an object answers it as a data part', async () => {
    const s = await servers.start();
    const client = await a2aClient(s.url);
    const task = asTask(
      await client.sendMessage(sendRequest(userMessage('next friday', 'calendar'))),
    );
    const part = task.artifacts[0]?.parts[0];
    expect(part?.mediaType).toBe('application/json');
    expect(part?.content).toEqual({
      $case: 'data',
      value: { date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) as string, free: true },
    });
  });

  it('an unknown skill is a clear error naming the skills, and nothing is made', async () => {
    const s = await servers.start();
    const client = await a2aClient(s.url);
    const refused = await client.sendMessage(sendRequest(userMessage('hello', 'nope'))).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(RequestMalformedError);
    expect((refused as Error).message).toBe(
      'no skill named "nope" here; the skills are planner, calendar, flights',
    );
    expect(await runCount(s)).toBe(0);
  });

  it('a message to a task is refused: a task here takes one message', async () => {
    const s = await servers.start();
    const client = await a2aClient(s.url);
    const first = asTask(
      await client.sendMessage(sendRequest(userMessage('next monday', 'calendar'))),
    );
    const again = { ...userMessage('and tuesday?', 'calendar'), taskId: first.id };
    await expect(client.sendMessage(sendRequest(again))).rejects.toThrow(/takes one message/);
    expect(await runCount(s)).toBe(1);
  });
});

describe('SendStreamingMessage', () => {
  it("streams the step's tokens as artifact updates while it runs, then its end", async () => {
    const s = await servers.start({ tokenDelayMs: 20 });
    const client = await a2aClient(s.url);
    const events: StreamResponse[] = [];
    let stepWhileStreaming: unknown = null;
    for await (const event of client.sendMessageStream(
      sendRequest(userMessage('Plan a trip to Paris next Friday', 'planner')),
    )) {
      events.push(event);
      if (stepWhileStreaming === null && event.payload?.$case === 'artifactUpdate') {
        const task = events[0]?.payload?.$case === 'task' ? events[0].payload.value : null;
        if (!task) throw new Error('the stream did not begin with its task');
        stepWhileStreaming = (await s.api('GET', `/v1/steps/${axonIds(task).step_id}`)).body;
      }
    }
    const kinds = events.map(kindOf);
    expect(kinds.slice(0, 2)).toEqual(['task', 'statusUpdate:WORKING']);
    expect(kinds.at(-1)).toBe('statusUpdate:COMPLETED');
    // The first token came while the step was still running.
    expect(stepWhileStreaming).toMatchObject({ status: 'running' });
    const chunks = events.flatMap((e) =>
      e.payload?.$case === 'artifactUpdate' && !e.payload.value.lastChunk ? [e.payload.value] : [],
    );
    expect(chunks.length).toBeGreaterThan(10);
    expect(chunks[0]?.append).toBe(false);
    expect(chunks.slice(1).every((c) => c.append)).toBe(true);
    const streamed = chunks
      .map((c) =>
        c.artifact?.parts[0]?.content?.$case === 'text' ? c.artifact.parts[0].content.value : '',
      )
      .join('');
    // The last artifact update is the output whole: the tokens joined.
    const last = events.at(-2)?.payload;
    expect(last?.$case === 'artifactUpdate' && last.value.lastChunk).toBe(true);
    const whole = last?.$case === 'artifactUpdate' ? last.value.artifact?.parts[0]?.content : null;
    expect(whole).toEqual({ $case: 'text', value: streamed });
    expect(streamed).toMatch(/^Here is your plan for Paris\./);
  });
});

describe('a streaming client that goes away', () => {
  it('does not cancel its task: the step goes on, and its end is read with GetTask', async () => {
    const s = await servers.start({ tokenDelayMs: 20 });
    const client = await a2aClient(s.url);
    const gone = new AbortController();
    let taskId = '';
    const reading = (async () => {
      for await (const event of client.sendMessageStream(
        sendRequest(userMessage('Plan a trip to Tokyo next Sunday', 'planner')),
        { signal: gone.signal },
      )) {
        if (event.payload?.$case === 'task') taskId = event.payload.value.id;
        if (event.payload?.$case === 'artifactUpdate') gone.abort();
      }
    })();
    await expect(reading).rejects.toThrow();
    const read = () => client.getTask({ tenant: '', id: taskId, historyLength: undefined });
    await expect
      .poll(async () => (await read()).status?.state, POLL)
      .toBe(TaskState.TASK_STATE_COMPLETED);
    const task = await read();
    expect(outputText(task)).toMatch(/^Here is your plan for Tokyo\..* Shall I book it\?$/);
    const step = await s.api('GET', `/v1/steps/${axonIds(task).step_id}`);
    expect(step.body).toMatchObject({ status: 'succeeded' });
  });
});

describe('CancelTask', () => {
  it('cancels the step: it ends cancelled, the task canceled, its run cancelled', async () => {
    const s = await servers.start({ runtime: { agents: [waiter] } });
    const client = await a2aClient(s.url);
    const kinds: string[] = [];
    let taskId = '';
    let ids: ReturnType<typeof axonIds> | null = null;
    let canceled: unknown = null;
    for await (const event of client.sendMessageStream(
      sendRequest(userMessage('wait', 'waiter')),
    )) {
      kinds.push(kindOf(event));
      if (event.payload?.$case === 'task') {
        taskId = event.payload.value.id;
        ids = axonIds(event.payload.value);
      }
      if (event.payload?.$case === 'artifactUpdate' && canceled === null) {
        canceled = await client.cancelTask({ tenant: '', id: taskId, metadata: undefined });
      }
    }
    expect(canceled).toMatchObject({
      id: taskId,
      status: { state: TaskState.TASK_STATE_CANCELED },
    });
    expect(kinds).toEqual([
      'task',
      'statusUpdate:WORKING',
      'artifactUpdate',
      'statusUpdate:CANCELED',
    ]);
    if (!ids) throw new Error('no task came');
    const step = await s.api('GET', `/v1/steps/${ids.step_id}`);
    expect(step.body).toMatchObject({ status: 'cancelled', error: { code: 'CANCELLED' } });
    expect((await s.api('GET', `/v1/runs/${ids.run_id}`)).body).toMatchObject({
      status: 'cancelled',
    });
    const read = await client.getTask({ tenant: '', id: taskId, historyLength: undefined });
    expect(read.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    // An ended task is not cancelled again.
    await expect(
      client.cancelTask({ tenant: '', id: taskId, metadata: undefined }),
    ).resolves.toMatchObject({ status: { state: TaskState.TASK_STATE_CANCELED } });
  });
});

describe('tasks in the store', () => {
  it('a task is read back after the server restarts on the same store', async () => {
    const first = await servers.start();
    const before = asTask(
      await (
        await a2aClient(first.url)
      ).sendMessage(sendRequest(userMessage('Plan a trip to Rome next Monday', 'planner'))),
    );
    await first.close();
    const again = await servers.start({ db: first.db, dataDir: first.dataDir });
    const client = await a2aClient(again.url);
    const after = await client.getTask({ tenant: '', id: before.id, historyLength: undefined });
    expect(after.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(after.contextId).toBe(before.contextId);
    expect(outputText(after)).toBe(outputText(before));
    expect(axonIds(after)).toEqual(axonIds(before));
    await expect(
      client.getTask({ tenant: '', id: randomUUID(), historyLength: undefined }),
    ).rejects.toThrow(/Task not found/);
  });
});
