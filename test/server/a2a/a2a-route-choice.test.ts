/**
 * Where an A2A message goes (`chooseA2aRoute`), each rule on its own: the named skill, the
 * router's pick only when it is a skill, the default agent, and the refusals — a skill that
 * is not a string, one in the request's metadata instead of the message's, none anywhere.
 */
import { Role, type Message } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { describe, expect, it } from 'vitest';
import { createContext } from '../../../src/context/create-context.js';
import { createRuleRouter } from '../../../src/orchestrator/rule-router.js';
import { chooseA2aRoute, type RouteChoiceDeps } from '../../../src/server/a2a/a2a-route-choice.js';

const message = (text: string, metadata?: Record<string, unknown>): Message => ({
  messageId: 'm',
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts: [
    { content: { $case: 'text', value: text }, mediaType: '', filename: '', metadata: undefined },
  ],
  metadata,
  extensions: [],
  referenceTaskIds: [],
});

const deps = (over: Partial<RouteChoiceDeps> = {}): RouteChoiceDeps => ({
  skills: ['planner', 'calendar'],
  router: null,
  defaultAgent: null,
  context: () => createContext(),
  ...over,
});

describe('chooseA2aRoute', () => {
  it('takes the skill the message names, with its text as the input', async () => {
    await expect(
      chooseA2aRoute(message('hi', { skill: 'calendar' }), undefined, deps()),
    ).resolves.toEqual({
      agent: 'calendar',
      by: 'skill',
      input: { message: 'hi' },
    });
  });

  it("takes the router's pick only when it is a skill, else the default agent", async () => {
    const router = createRuleRouter({
      rules: [
        { pattern: /trip/i, handler: 'planner' },
        { pattern: /notes/i, handler: 'notebook' },
      ],
    });
    const withRouter = deps({ router, defaultAgent: 'calendar' });
    expect((await chooseA2aRoute(message('a trip'), undefined, withRouter)).agent).toBe('planner');
    // `notebook` is no skill here (a durable agent, say): the default takes it.
    await expect(chooseA2aRoute(message('my notes'), undefined, withRouter)).resolves.toMatchObject(
      {
        agent: 'calendar',
        by: 'default',
      },
    );
  });

  it('refuses a skill that is not a non-empty string, one in the request metadata, and none at all', async () => {
    for (const skill of [3, '', null]) {
      const refused = chooseA2aRoute(message('hi', { skill }), undefined, deps());
      await expect(refused).rejects.toBeInstanceOf(RequestMalformedError);
      await expect(refused).rejects.toThrow(
        'message.metadata.skill must name a skill (a string): one of planner, calendar',
      );
    }
    await expect(
      chooseA2aRoute(message('hi', { skill: 'planner' }), { skill: 'planner' }, deps()),
    ).rejects.toThrow(
      "the skill goes in the message's metadata (message.metadata.skill), not the request's",
    );
    await expect(chooseA2aRoute(message('hi'), undefined, deps({ skills: [] }))).rejects.toThrow(
      'the message names no skill (message.metadata.skill) and this server serves none',
    );
  });

  it('never refuses a message for naming no skill: without a default agent it goes to the first skill (issue 48)', async () => {
    await expect(chooseA2aRoute(message('hi'), undefined, deps())).resolves.toMatchObject({
      agent: 'planner',
      by: 'first',
    });
    const router = { classify: () => Promise.resolve({ bestHandler: 'nobody' }) };
    await expect(
      chooseA2aRoute(message('hi'), undefined, deps({ router: router as never })),
    ).resolves.toMatchObject({ agent: 'planner', by: 'first' });
  });
});
