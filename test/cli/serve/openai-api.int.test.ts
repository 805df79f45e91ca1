/**
 * The OpenAI API of a real `axon serve` process (issue 48 §3), with OpenAI's SDK as the
 * client: the agents `npm start` serves (the examples') are models behind the server's keys
 * — a completion whole and streamed, an unknown model, a bad key — and `openai_api: false` in
 * axon.yaml serves neither route, while a value that is not a boolean stops the server with
 * exit code 2 and one line naming the key.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runAxon, spawnAxon, type FleetProcess } from '../../support/axon-process.js';
import type { ChildProcess } from 'node:child_process';

const root = mkdtempSync(join(tmpdir(), 'axon-serve-openai-'));
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

const KEY = 'openai-test-key-0123456789';

/** A folder with `axon.yaml` holding `yaml`. */
function folder(yaml: string): string {
  const dir = mkdtempSync(join(root, 'd-'));
  writeFileSync(join(dir, 'axon.yaml'), yaml);
  return dir;
}

/** `axon serve` on a free port with its data and config in `dir`. */
async function serve(dir: string): Promise<{ url: string; process: FleetProcess }> {
  const { process, match } = await spawnAxon(
    ['serve', '--port', '0', '--data-dir', join(dir, 'data'), '--config', join(dir, 'axon.yaml')],
    { AXON_SCRIPTED_TOKEN_MS: '1', AXON_API_KEYS: `${KEY}:alice` },
    /listening on (http:\/\/\S+) /,
    spawned,
  );
  return { url: match[1] ?? '', process };
}

const user = (content: string): OpenAI.ChatCompletionMessageParam => ({ role: 'user', content });

describe('axon serve: the OpenAI API (a real child process)', () => {
  it('serves the examples’ agents as models to OpenAI’s SDK behind the keys: whole, streamed, 404, 401; stops with exit 0', async () => {
    const { url, process } = await serve(folder(''));
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: KEY, maxRetries: 0 });
    const ids = (await client.models.list()).data.map((m) => m.id);
    for (const id of [
      'agent:planner',
      'agent:calendar',
      'agent:flights',
      'agent:billing',
      'agent:support',
    ]) {
      expect(ids).toContain(id);
    }
    // API.md's durable agents are addressed by key: not models. No front door: no `axon`.
    expect(ids).not.toContain('agent:notebook');
    expect(ids).not.toContain('agent:follow-up');
    expect(ids).not.toContain('axon');

    const refund = await client.chat.completions.create({
      model: 'agent:billing',
      messages: [user('I was charged twice')],
    });
    expect(refund.choices[0]?.message.content).toBe(
      'Billing here. About "I was charged twice": refunds reach your card within five working days.',
    );

    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    const stream = await client.chat.completions.create({
      model: 'agent:planner',
      messages: [user('Plan a trip to Berlin next Tuesday')],
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toMatch(/^Here is your plan for Berlin\./);
    expect(usage?.total_tokens).toBeGreaterThan(0);

    await expect(
      client.chat.completions.create({ model: 'agent:nope', messages: [user('hi')] }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const stranger = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'wrong-key', maxRetries: 0 });
    await expect(stranger.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);

    process.child.kill('SIGINT');
    expect((await process.exited).code).toBe(0);
  });

  it('openai_api: false serves neither route; a value not true or false exits 2 naming the key', async () => {
    const { url } = await serve(folder('openai_api: false\n'));
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: KEY, maxRetries: 0 });
    await expect(client.models.list()).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(
      client.chat.completions.create({ model: 'agent:planner', messages: [user('hi')] }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const pools = await fetch(`${url}/v1/pools`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(pools.status).toBe(200);

    const dir = folder('server:\n  port: 0\nopenai_api: no-thanks\n');
    const bad = await runAxon(
      ['serve', '--data-dir', join(dir, 'data'), '--config', join(dir, 'axon.yaml')],
      {},
      ran,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /^axon serve: .*axon\.yaml line 3: openai_api: expected true or false\n$/,
    );
  });
});
