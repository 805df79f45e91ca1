/**
 * A2A tasks in axon's store, with the SDK's client over real HTTP: behind the API's keys
 * (the card public, the endpoint not; a caller reaches only its own tasks), and a task whose
 * server was killed (`SIGKILL`, a real child process) while its step ran, read after a
 * restart on the same store as its step — closed by the restart and submitted again — ended
 * it, or cancelled after the restart (the step submitted again is the one cancelled).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TaskState, type Task } from '@a2a-js/sdk';
import { DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type AxonServer } from '../../../src/server/create-server.js';
import {
  expectApiError,
  exampleRuntime,
  POLL,
  request,
  useTestServers,
} from '../../support/server.js';
import { a2aClient, asTask, axonIds, outputText, sendRequest, userMessage } from './a2a-client.js';

const servers = useTestServers('a2a-tasks');

const ALICE = 'alice-key-0123456789';
const BOB = 'bob-key-0123456789abc';
const READER = 'reader-key-0123456789';

describe('behind the API keys', () => {
  it('the card is public and asks for a Bearer key; the JSON-RPC endpoint needs a key that may write', async () => {
    const s = await servers.start({
      server: {
        keys: [
          { key: ALICE, user_id: 'alice' },
          { key: READER, user_id: 'carol', permissions: ['read'] },
        ],
      },
    });
    const card = await new DefaultAgentCardResolver().resolve(s.url);
    expect(card.securitySchemes['bearer']?.scheme).toEqual({
      $case: 'httpAuthSecurityScheme',
      value: expect.objectContaining({ scheme: 'Bearer' }) as object,
    });
    expect(card.securityRequirements).toEqual([{ schemes: { bearer: { list: [] } } }]);
    const call = { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } };
    expectApiError(await s.api('POST', '/a2a', call), 401, 'UNAUTHORIZED');
    expectApiError(
      await s.api('POST', '/a2a', call, { authorization: `Bearer ${READER}` }),
      403,
      'FORBIDDEN',
    );
    const client = await a2aClient(s.url, ALICE);
    const task = asTask(
      await client.sendMessage(sendRequest(userMessage('next monday', 'calendar'))),
    );
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("a caller reaches only its own tasks: another's reads and cancels as none", async () => {
    const s = await servers.start({
      server: {
        keys: [
          { key: ALICE, user_id: 'alice' },
          { key: BOB, user_id: 'bob' },
        ],
      },
    });
    const alice = await a2aClient(s.url, ALICE);
    const bob = await a2aClient(s.url, BOB);
    const task = asTask(
      await alice.sendMessage(sendRequest(userMessage('next monday', 'calendar'))),
    );
    await expect(
      bob.getTask({ tenant: '', id: task.id, historyLength: undefined }),
    ).rejects.toThrow(/Task not found/);
    await expect(bob.cancelTask({ tenant: '', id: task.id, metadata: undefined })).rejects.toThrow(
      /Task not found/,
    );
    await expect(
      alice.getTask({ tenant: '', id: task.id, historyLength: undefined }),
    ).resolves.toMatchObject({ id: task.id });
    // Its run is alice's too.
    const { run_id } = axonIds(task);
    const headers = (key: string) => ({ authorization: `Bearer ${key}` });
    expect((await s.api('GET', `/v1/runs/${run_id}`, undefined, headers(ALICE))).status).toBe(200);
    expectApiError(
      await s.api('GET', `/v1/runs/${run_id}`, undefined, headers(BOB)),
      404,
      'NOT_FOUND',
    );
  });
});

describe('a task across a crash', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) c.kill('SIGKILL');
  });

  /**
   * A server of the examples in a child process, a token every 100 ms (the planner's answer
   * takes seconds), killed (`SIGKILL`) once a streamed task's first token has come; then a
   * new server on the same store, as `axon serve` starts: resume, then listen.
   */
  async function crashMidStep(tokenDelayMs: number): Promise<{
    readonly task: Task;
    readonly server: AxonServer;
  }> {
    const dataDir = servers.folder();
    const db = join(dataDir, 'axon.db');
    const fixture = fileURLToPath(new URL('../../fixtures/a2a-server-process.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, db, dataDir, '100'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      child.on('exit', (code, signal) => {
        resolve(signal ?? code);
      }),
    );
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const line = /^listening (\S+)$/m.exec(out);
        if (line?.[1]) resolve(line[1]);
      });
      void exited.then((how) => {
        reject(new Error(`the server process ended (${String(how)})`));
      });
    });
    const client = await a2aClient(url);
    let task: Task | null = null;
    for await (const event of client.sendMessageStream(
      sendRequest(userMessage('Plan a trip to Lisbon next Monday', 'planner')),
    )) {
      if (event.payload?.$case === 'task') task = event.payload.value;
      if (event.payload?.$case === 'artifactUpdate') break;
    }
    if (!task) throw new Error('no task came');
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const runtime = exampleRuntime(db, dataDir, { tokenDelayMs });
    const resumed = await runtime.resumeRuns();
    expect(resumed.flatMap((r) => r.interrupted)).toEqual([axonIds(task).step_id]);
    return { task, server: await createServer(runtime, { port: 0 }) };
  }

  it('killed while its step ran, it is read after a restart as its step, submitted again, ended it', async () => {
    const { task, server } = await crashMidStep(1);
    try {
      const again = await a2aClient(server.url);
      const read = () => again.getTask({ tenant: '', id: task.id, historyLength: undefined });
      await expect
        .poll(async () => (await read()).status?.state, POLL)
        .toBe(TaskState.TASK_STATE_COMPLETED);
      const after = await read();
      expect(after.contextId).toBe(task.contextId);
      expect(outputText(after)).toMatch(/^Here is your plan for Lisbon\./);
      const old = await request(server.url, 'GET', `/v1/steps/${axonIds(task).step_id}`);
      expect(old.body).toMatchObject({ status: 'failed', error: { code: 'WORKER_RESET' } });
    } finally {
      await server.close();
    }
  });

  it('killed while its step ran, it is cancelled after the restart: the step submitted again ends cancelled', async () => {
    const { task, server } = await crashMidStep(100);
    try {
      const again = await a2aClient(server.url);
      const canceled = await again.cancelTask({ tenant: '', id: task.id, metadata: undefined });
      expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      const { run_id } = axonIds(task);
      const steps = (await request(server.url, 'GET', `/v1/runs/${run_id}/steps`)).body as {
        parent_step_id: string | null;
        status: string;
        error: { code: string } | null;
      }[];
      const roots = steps.filter((st) => st.parent_step_id === null);
      expect(roots.map((st) => [st.status, st.error?.code])).toEqual([
        ['failed', 'WORKER_RESET'],
        ['cancelled', 'CANCELLED'],
      ]);
      expect((await request(server.url, 'GET', `/v1/runs/${run_id}`)).body).toMatchObject({
        status: 'cancelled',
      });
      const read = await again.getTask({ tenant: '', id: task.id, historyLength: undefined });
      expect(read.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    } finally {
      await server.close();
    }
  });
});
