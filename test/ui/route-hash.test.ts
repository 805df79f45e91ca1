/**
 * The trace UI's URL hash (src/ui/route-hash.ts), without a browser: each route's hash and
 * back — the agent's page with its key, user and step, names and keys that need escaping —
 * the lists' tabs, and an actor's run's entry (`actor:<name>/<key>`) read as its address.
 */
import { describe, expect, it } from 'vitest';
import { actorOfEntry, hashOf, routeOf } from '../../src/ui/route-hash.js';

describe('the trace UI hash', () => {
  it("names an agent's page by name, key, user and step, and reads them back", () => {
    const hash = hashOf({
      agent: { name: 'follow-up', key: 'ticket-7', user: 'alice' },
      step: 'step_1',
    });
    expect(hash).toBe('#agent=follow-up&key=ticket-7&user=alice&step=step_1');
    expect(routeOf(hash)).toEqual({
      view: 'agent',
      nav: 'agents',
      agent: { name: 'follow-up', key: 'ticket-7', user: 'alice' },
      step: 'step_1',
    });
    // No user: the caller's own actor.
    expect(routeOf(hashOf({ agent: { name: 'notebook', key: 'a.b~c' } }))).toEqual({
      view: 'agent',
      nav: 'agents',
      agent: { name: 'notebook', key: 'a.b~c', user: null },
      step: null,
    });
    // A user id with characters of a query survives the round trip.
    const odd = { name: 'n', key: 'k', user: 'a&b=c d' };
    expect(routeOf(hashOf({ agent: odd })).agent).toEqual(odd);
  });

  it('names the lists by their tab, and anything else is the runs list', () => {
    expect(hashOf({ view: 'agents' })).toBe('#agents');
    expect(routeOf('#agents')).toEqual({ view: 'agents', nav: 'agents' });
    expect(routeOf('#schedules')).toEqual({ view: 'schedules', nav: 'schedules' });
    expect(routeOf('#threads')).toEqual({ view: 'threads', nav: 'threads' });
    expect(routeOf('#run=run_1&step=step_2')).toEqual({
      view: 'run',
      nav: 'runs',
      run: 'run_1',
      step: 'step_2',
    });
    // An agent without a key names no actor.
    expect(routeOf('#agent=notebook')).toEqual({ view: 'runs', nav: 'runs' });
    expect(routeOf('')).toEqual({ view: 'runs', nav: 'runs' });
  });

  it("reads an actor's run's entry as its address; any other entry is none", () => {
    expect(actorOfEntry('actor:notebook/customer-42')).toEqual({
      name: 'notebook',
      key: 'customer-42',
    });
    expect(actorOfEntry('actor:follow-up/a.b~c')).toEqual({ name: 'follow-up', key: 'a.b~c' });
    expect(actorOfEntry('workflow:review')).toBeNull();
    expect(actorOfEntry('actor:notebook')).toBeNull();
    expect(actorOfEntry('actor:/k')).toBeNull();
    expect(actorOfEntry('actor:notebook/')).toBeNull();
    expect(actorOfEntry(undefined)).toBeNull();
  });
});
