/**
 * @module What the browser tests of an agent's page share (test/server/trace-ui-agent-*.int.test.ts):
 * an actor as the API shows it, sending it a message, its messages, waiting until it has none
 * open, and the page's figures beside what they must be (the API's, formatted as the page
 * formats them: a time's text to the second, its `datetime` to the millisecond).
 */
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import { formatTime } from '../../src/observability/human-format.js';
import { POLL, type TestServer } from '../support/server.js';

/** An actor as the API shows it. */
export interface AgentView {
  readonly name: string;
  readonly key: string;
  readonly version: number;
  readonly status: string;
  readonly state: unknown;
  readonly mailbox_depth: number;
  readonly next_timer_at: string | null;
  readonly run_id: string;
  readonly created_at: string;
  readonly updated_at: string;
}

export async function agent(s: TestServer, path: string): Promise<AgentView> {
  const res = await s.api('GET', `/v1/agents/${path}`);
  expect(res.status, res.text).toBe(200);
  return res.body as AgentView;
}

export async function send(s: TestServer, path: string, message: unknown): Promise<string> {
  const res = await s.api('POST', `/v1/agents/${path}/messages`, { message });
  expect(res.status, res.text).toBe(202);
  return (res.body as { step_id: string }).step_id;
}

/** The actor's messages: its run's steps without a parent, in the order accepted. */
export async function messages(
  s: TestServer,
  runId: string,
): Promise<{ step_id: string; status: string }[]> {
  const res = await s.api('GET', `/v1/runs/${runId}/steps`);
  expect(res.status, res.text).toBe(200);
  return (res.body as { step_id: string; status: string; parent_step_id: string | null }[]).filter(
    (st) => st.parent_step_id === null,
  );
}

/** Resolves once the actor has no message open. */
export async function settled(s: TestServer, path: string): Promise<AgentView> {
  await expect
    .poll(async () => {
      const v = await agent(s, path);
      return v.status !== 'busy' && v.mailbox_depth === 0;
    }, POLL)
    .toBe(true);
  return agent(s, path);
}

/** The figures of the page, as it shows them. */
export async function shown(page: Page): Promise<Record<string, string | null>> {
  const view = page.getByTestId('agent-view');
  const text = (id: string) => view.getByTestId(id).textContent();
  // A time's exact value (its text is to the second).
  const exact = (id: string) => view.getByTestId(id).getAttribute('datetime');
  return {
    title: await text('agent-title'),
    status: await text('agent-status'),
    version: await text('agent-version'),
    mailbox: await text('agent-mailbox'),
    timer: await text('agent-next-timer'),
    created: await text('agent-created'),
    updated: await text('agent-updated'),
    state: await text('agent-state'),
    timerAt: await exact('agent-next-timer'),
    createdAt: await exact('agent-created'),
    updatedAt: await exact('agent-updated'),
  };
}

/** What the page must show of `a`: the API's figures, formatted as the page formats them. */
export function expected(a: AgentView): Record<string, string | null> {
  return {
    title: `${a.name}/${a.key}`,
    status: a.status,
    version: String(a.version),
    mailbox: String(a.mailbox_depth),
    timer: a.next_timer_at === null ? '-' : formatTime(a.next_timer_at),
    created: formatTime(a.created_at),
    updated: formatTime(a.updated_at),
    state: JSON.stringify(a.state, null, 2),
    timerAt: a.next_timer_at,
    createdAt: a.created_at,
    updatedAt: a.updated_at,
  };
}

/** The timeline's rows of the agent's page: each message's name and status. */
export async function timelineRows(
  page: Page,
): Promise<{ id: string | null; name: string | null; status: string | null }[]> {
  const rows = await page.getByTestId('agent-view').getByTestId('timeline-row').all();
  return Promise.all(
    rows.map(async (r) => ({
      id: await r.getAttribute('data-step-id'),
      name: await r.getByTestId('timeline-name').textContent(),
      status: await r.getAttribute('data-status'),
    })),
  );
}
