/**
 * The A2A server of a real `axon serve` process (issue 48 §2), with the A2A SDK's client:
 * the card lists the agents `npm start` serves as skills (not its durable agents), and
 * axon.yaml's `a2a.default_agent` takes a message that names no skill, behind the server's
 * keys; a default agent that is no skill (a durable agent) stops the server with exit code 2
 * and one line naming the key.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { TaskState } from '@a2a-js/sdk';
import { DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runAxon, spawnAxon, type FleetProcess } from '../../support/axon-process.js';
import {
  a2aClient,
  asTask,
  outputText,
  sendRequest,
  userMessage,
} from '../../server/a2a/a2a-client.js';

const root = mkdtempSync(join(tmpdir(), 'axon-serve-a2a-'));
const spawned: FleetProcess[] = [];
const ran: ChildProcess[] = [];
afterEach(async () => {
  for (const p of spawned.splice(0)) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await p.exited;
  }
  for (const c of ran.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

const KEY = 'a2a-test-key-0123456789';

/** A folder with `axon.yaml` holding `yaml`. */
function folder(yaml: string): string {
  const dir = mkdtempSync(join(root, 'd-'));
  writeFileSync(join(dir, 'axon.yaml'), yaml);
  return dir;
}

describe('axon serve: A2A (a real child process)', () => {
  it('serves the examples’ agents as skills; a2a.default_agent takes a message naming none; stops with exit 0', async () => {
    const dir = folder('a2a:\n  default_agent: planner\n');
    const { process, match } = await spawnAxon(
      ['serve', '--port', '0', '--data-dir', join(dir, 'data'), '--config', join(dir, 'axon.yaml')],
      { AXON_SCRIPTED_TOKEN_MS: '1', AXON_API_KEYS: `${KEY}:alice` },
      /listening on (http:\/\/\S+) /,
      spawned,
    );
    const url = match[1] ?? '';
    const card = await new DefaultAgentCardResolver().resolve(url);
    const skills = card.skills.map((s) => s.id);
    for (const name of ['planner', 'calendar', 'flights', 'billing', 'support']) {
      expect(skills).toContain(name);
    }
    // API.md's durable agents are addressed by key: not skills.
    expect(skills).not.toContain('notebook');
    expect(skills).not.toContain('follow-up');
    expect(card.supportedInterfaces[0]?.url).toBe(`${url}/a2a`);

    const client = await a2aClient(url, KEY);
    const task = asTask(
      await client.sendMessage(sendRequest(userMessage('Plan a trip to Berlin next Tuesday'))),
    );
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.metadata).toMatchObject({ axon: { agent: 'planner', routed_by: 'default' } });
    expect(outputText(task)).toMatch(/^Here is your plan for Berlin\./);
    await expect(
      a2aClient(url, 'wrong-key-0123456789').then((c) =>
        c.sendMessage(sendRequest(userMessage('hi'))),
      ),
    ).rejects.toThrow(/401/);

    process.child.kill('SIGINT');
    expect((await process.exited).code).toBe(0);
  });

  it('a2a.default_agent naming a durable agent exits 2 naming the key and its line', async () => {
    const dir = folder('server:\n  port: 0\na2a:\n  default_agent: notebook\n');
    const bad = await runAxon(
      ['serve', '--data-dir', join(dir, 'data'), '--config', join(dir, 'axon.yaml')],
      {},
      ran,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /^axon serve: .*axon\.yaml line 4: a2a\.default_agent: "notebook" is not an agent served as an A2A skill \(planner, .*\)\n$/,
    );
  });
});
