/**
 * The front door as the model `axon` of the OpenAI API (issue 48 §3), with OpenAI's SDK: a
 * server given `openaiApi.frontDoor` lists `axon` first; a completion is routed by the front
 * door's router and answered by the handler it picks, with the conversation before the last
 * message as the handler's history, whole and streamed. Workflows' role agents are not models.
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { defineAgent } from '../../src/actors/define-agent.js';
import { createOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { createRuleRouter } from '../../src/orchestrator/rule-router.js';
import { createServer, type AxonServer } from '../../src/server/create-server.js';
import { defineWorkflow, END } from '../../src/workflows/workflow-definition.js';
import { WorkflowEngine } from '../../src/workflows/workflow-engine.js';
import { exampleRuntime, useTestServers } from '../support/server.js';
import { endEngines } from '../support/workflows.js';

const stores = useTestServers('openai-front-door');
const servers: AxonServer[] = [];
const engines: WorkflowEngine[] = [];
afterEach(async () => {
  await endEngines(engines);
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const echo = defineAgent({
  name: 'echo',
  description: 'answers its input as JSON',
  handler: (input) => ({ message: input.message, history: input.history ?? null }),
});

/** A server over the examples' agents and `echo`, with a front door: trips to the planner, the rest to echo. */
async function start(): Promise<{ server: AxonServer; client: OpenAI }> {
  const dir = stores.folder();
  const runtime = exampleRuntime(join(dir, 'axon.db'), dir, { runtime: { agents: [echo] } });
  const frontDoor = createOrchestrator({
    runtime,
    router: createRuleRouter({
      rules: [{ pattern: /\btrip\b/i, handler: 'planner' }],
      defaultHandler: 'echo',
    }),
  });
  const server = await createServer(runtime, {
    port: 0,
    drainMs: 100,
    openaiApi: { frontDoor },
  });
  servers.push(server);
  return {
    server,
    client: new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 }),
  };
}

const user = (content: string): OpenAI.ChatCompletionMessageParam => ({ role: 'user', content });

describe('the model axon', () => {
  it('is listed first; a completion is routed by the front door and answered by the handler it picks, as a step of the caller’s', async () => {
    const { server, client } = await start();
    const ids = (await client.models.list()).data.map((m) => m.id);
    expect(ids[0]).toBe('axon');
    expect(ids).toContain('agent:planner');

    const plan = await client.chat.completions.create({
      model: 'axon',
      messages: [user('Plan a trip to Berlin next Tuesday')],
    });
    expect(plan.model).toBe('axon');
    expect(plan.choices[0]?.message.content).toMatch(/^Here is your plan for Berlin\./);
    expect(plan.usage).toEqual({ prompt_tokens: 150, completion_tokens: 50, total_tokens: 200 });
    const step = await fetch(`${server.url}/v1/steps/${plan.id.replace(/^chatcmpl-/, '')}`);
    expect(await step.json()).toMatchObject({ status: 'succeeded', name: 'planner' });
  });

  it('gives the handler the conversation before the last message as its history', async () => {
    const { client } = await start();
    const answer = await client.chat.completions.create({
      model: 'axon',
      messages: [
        { role: 'system', content: 'Be brief.' },
        user('hello'),
        { role: 'assistant', content: 'hi there' },
        user('what now?'),
      ],
    });
    expect(JSON.parse(answer.choices[0]?.message.content ?? '')).toEqual({
      message: 'what now?',
      history: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'hi there' },
      ],
    });
  });

  it('streams the handler’s tokens as chunks that reassemble the answer, with the usage', async () => {
    const { client } = await start();
    const messages = [user('Plan a trip to Rome next Friday')];
    const whole = await client.chat.completions.create({ model: 'axon', messages });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    const stream = await client.chat.completions.create({
      model: 'axon',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) chunks.push(chunk);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe(whole.choices[0]?.message.content);
    expect(chunks.filter((c) => (c.choices[0]?.delta.content ?? '') !== '').length).toBeGreaterThan(
      10,
    );
    expect(chunks.at(-1)?.usage).toEqual({
      prompt_tokens: 150,
      completion_tokens: 50,
      total_tokens: 200,
    });
    expect(chunks[0]?.id).toMatch(/^chatcmpl-step_[0-9a-f]{32}$/);
  });
});

describe('a workflow’s role agents', () => {
  it('are not models: not listed, and 404 naming the workflow', async () => {
    const runtime = stores.runtime();
    const engine = new WorkflowEngine(runtime, [
      defineWorkflow({
        name: 'review',
        roles: { coder: { kind: 'engine', prompt: 'You write code.' } },
        moderator: (t) => (t.turns.length >= 1 ? END : 'coder'),
      }),
    ]);
    engines.push(engine);
    const server = await createServer(runtime, { port: 0, drainMs: 100, workflows: engine });
    servers.push(server);
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    expect(runtime.listAgents().map((a) => a.name)).toContain('workflow.review.coder');
    expect((await client.models.list()).data).toEqual([]);
    const err = await client.chat.completions
      .create({ model: 'agent:workflow.review.coder', messages: [user('hi')] })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as Error).message).toContain('workflow');
  });
});
