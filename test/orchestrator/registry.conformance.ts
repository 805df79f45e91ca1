/**
 * The Registry conformance suite. Every Registry implementation runs it from its own
 * `*.test.ts` (or `*.int.test.ts`) file, building the registry with the clock it is given:
 *
 * @example
 * describeRegistry('memory', ({ clock }) => createMemoryRegistry({ clock }));
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SimulatedClock, type Clock } from '../../src/context/clock.js';
import { ConflictError } from '../../src/errors/conflict-error.js';
import { NotFoundError } from '../../src/errors/not-found-error.js';
import {
  NO_CALLS,
  type EntryKind,
  type NewEntry,
  type Registry,
  type RegistryEntry,
} from '../../src/orchestrator/registry.js';

/** What the suite hands the factory: the clock the registry must stamp its times with. */
export interface RegistryFactoryOptions {
  readonly clock: Clock;
}

const START = Date.parse('2025-01-01T00:00:00.000Z');
const iso = (ms: number): string => new Date(ms).toISOString();

/** A new entry with a description made from its name. */
function entry(name: string, kind: EntryKind = 'agent', rest: Partial<NewEntry> = {}): NewEntry {
  return { name, kind, description: `${kind} ${name}`, ...rest };
}

/** `kind:name` of each entry, to compare orders at a glance. */
const keys = (entries: readonly RegistryEntry[]): string[] =>
  entries.map((e) => `${e.kind}:${e.name}`);

/** A call that began at `ms` past the start. */
const call = (ok: boolean, durationMs: number, ms = 0) => ({ ok, durationMs, at: iso(START + ms) });

/** Registers the Registry conformance suite for the implementation `make` builds. */
export function describeRegistry(
  name: string,
  make: (options: RegistryFactoryOptions) => Registry | Promise<Registry>,
): void {
  describe(`Registry conformance: ${name}`, () => {
    let clock: SimulatedClock;
    let registry: Registry;

    beforeEach(async () => {
      clock = new SimulatedClock(START);
      registry = await make({ clock });
    });

    afterEach(async () => {
      await registry.close();
    });

    describe('register and resolve', () => {
      it('stores an entry with its defaults and resolves it by name and kind', async () => {
        const registered = await registry.register(entry('billing'));

        const expected: RegistryEntry = {
          name: 'billing',
          kind: 'agent',
          description: 'agent billing',
          schema: null,
          metadata: {},
          enabled: true,
          health: 'healthy',
          stats: NO_CALLS,
          registeredAt: iso(START),
          updatedAt: iso(START),
        };
        expect(registered).toEqual(expected);
        expect(await registry.resolve('billing', 'agent')).toEqual(expected);
      });

      it('keeps the optional fields it is given, nested JSON included', async () => {
        const schema = {
          type: 'object',
          properties: { q: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } },
          required: ['q'],
        };
        const metadata = { owner: 'team-a', limits: { rpm: 60, burst: [1, 2, 3] }, beta: null };
        await registry.register(
          entry('search', 'tool', { schema, metadata, enabled: false, health: 'degraded' }),
        );

        expect(await registry.resolve('search', 'tool')).toMatchObject({
          schema,
          metadata,
          enabled: false,
          health: 'degraded',
        });
      });

      it('refuses a taken (kind, name) with ConflictError and keeps the first', async () => {
        await registry.register(entry('billing'));

        await expect(
          registry.register(entry('billing', 'agent', { description: 'intruder' })),
        ).rejects.toBeInstanceOf(ConflictError);
        expect((await registry.resolve('billing', 'agent'))?.description).toBe('agent billing');
      });

      it('takes the same name under another kind', async () => {
        await registry.register(entry('billing', 'agent'));
        await registry.register(entry('billing', 'tool'));

        expect(keys(await registry.list())).toEqual(['agent:billing', 'tool:billing']);
        expect((await registry.resolve('billing', 'tool'))?.description).toBe('tool billing');
      });

      it('resolves null for a name it does not know, or knows under another kind only', async () => {
        await registry.register(entry('billing', 'tool'));

        expect(await registry.resolve('nobody')).toBeNull();
        expect(await registry.resolve('billing', 'agent')).toBeNull();
      });

      it('without a kind, resolves the agent first, then the tool, the sense, the plugin', async () => {
        for (const kind of ['plugin', 'sense', 'tool', 'agent'] as const) {
          await registry.register(entry('shared', kind));
        }
        await registry.register(entry('gadget', 'plugin'));
        await registry.register(entry('gadget', 'tool'));
        await registry.register(entry('eye', 'plugin'));
        await registry.register(entry('eye', 'sense'));

        expect((await registry.resolve('shared'))?.kind).toBe('agent');
        expect((await registry.resolve('gadget'))?.kind).toBe('tool');
        expect((await registry.resolve('eye'))?.kind).toBe('sense');
        expect((await registry.resolve('shared', 'plugin'))?.kind).toBe('plugin');
      });

      it('resolves disabled and unavailable entries too', async () => {
        await registry.register(entry('off', 'agent', { enabled: false }));
        await registry.register(entry('down', 'agent', { health: 'unavailable' }));

        expect((await registry.resolve('off'))?.enabled).toBe(false);
        expect((await registry.resolve('down'))?.health).toBe('unavailable');
      });
    });

    describe('ensure', () => {
      it('adds an entry that is not there', async () => {
        const ensured = await registry.ensure(entry('billing'));

        expect(ensured).toMatchObject({ name: 'billing', enabled: true, stats: NO_CALLS });
        expect(await registry.resolve('billing', 'agent')).toEqual(ensured);
      });

      it('resolves the stored entry, unchanged, when its (kind, name) is taken', async () => {
        const first = await registry.ensure(entry('billing', 'agent', { metadata: { v: 1 } }));
        await registry.recordCall('billing', 'agent', call(true, 10));
        clock.advance(1000);

        const second = await registry.ensure(
          entry('billing', 'agent', { description: 'other', metadata: { v: 2 }, enabled: false }),
        );

        const stored = {
          ...first,
          stats: {
            ...NO_CALLS,
            calls: 1,
            successes: 1,
            lastInvokedAt: iso(START),
            avgDurationMs: 10,
          },
        };
        expect(second).toEqual(stored);
        expect(await registry.resolve('billing', 'agent')).toEqual(stored);
        expect(await registry.list()).toHaveLength(1);
      });
    });

    describe('discover and list', () => {
      beforeEach(async () => {
        // Registered out of order, so the order seen is the registry's.
        await registry.register(entry('zeta', 'tool'));
        await registry.register(entry('hands', 'plugin'));
        await registry.register(entry('beta', 'agent', { health: 'degraded' }));
        await registry.register(entry('off', 'agent', { enabled: false }));
        await registry.register(entry('alpha', 'tool'));
        await registry.register(entry('down', 'tool', { health: 'unavailable' }));
        await registry.register(entry('eyes', 'sense'));
        await registry.register(entry('Alpha', 'agent'));
        await registry.register(entry('alpha', 'agent'));
      });

      it('discovers the enabled, available entries of a kind by name, degraded ones included', async () => {
        expect(keys(await registry.discover('agent'))).toEqual([
          'agent:Alpha',
          'agent:alpha',
          'agent:beta',
        ]);
        expect(keys(await registry.discover('tool'))).toEqual(['tool:alpha', 'tool:zeta']);
        expect(keys(await registry.discover('sense'))).toEqual(['sense:eyes']);
      });

      it('without a kind, discovers every kind, by kind then name', async () => {
        expect(keys(await registry.discover())).toEqual([
          'agent:Alpha',
          'agent:alpha',
          'agent:beta',
          'tool:alpha',
          'tool:zeta',
          'sense:eyes',
          'plugin:hands',
        ]);
      });

      it('lists every entry, disabled and unavailable ones too, by kind then name', async () => {
        expect(keys(await registry.list())).toEqual([
          'agent:Alpha',
          'agent:alpha',
          'agent:beta',
          'agent:off',
          'tool:alpha',
          'tool:down',
          'tool:zeta',
          'sense:eyes',
          'plugin:hands',
        ]);
      });

      it('discovers an entry again once it is enabled and available again', async () => {
        await registry.update('off', 'agent', { enabled: true });
        await registry.update('beta', 'agent', { health: 'unavailable' });
        await registry.update('down', 'tool', { health: 'healthy' });

        expect(keys(await registry.discover('agent'))).toEqual([
          'agent:Alpha',
          'agent:alpha',
          'agent:off',
        ]);
        expect(keys(await registry.discover('tool'))).toEqual([
          'tool:alpha',
          'tool:down',
          'tool:zeta',
        ]);
      });

      it('discovers and lists nothing in an empty registry', async () => {
        const empty = await make({ clock });
        try {
          expect(await empty.list()).toEqual([]);
          expect(await empty.discover()).toEqual([]);
        } finally {
          await empty.close();
        }
      });
    });

    describe('update', () => {
      it('changes only the patched fields and updatedAt', async () => {
        const before = await registry.register(
          entry('search', 'tool', { schema: { type: 'object' }, metadata: { owner: 'a' } }),
        );
        await registry.recordCall('search', 'tool', call(true, 40));
        clock.advance(5000);

        const updated = await registry.update('search', 'tool', {
          description: 'finds things',
          health: 'degraded',
        });

        const expected: RegistryEntry = {
          ...before,
          description: 'finds things',
          health: 'degraded',
          stats: {
            calls: 1,
            successes: 1,
            failures: 0,
            lastInvokedAt: iso(START),
            avgDurationMs: 40,
          },
          updatedAt: iso(START + 5000),
        };
        expect(updated).toEqual(expected);
        expect(await registry.resolve('search', 'tool')).toEqual(expected);
      });

      it('sets the schema to null, and replaces the metadata whole', async () => {
        await registry.register(
          entry('search', 'tool', { schema: { type: 'object' }, metadata: { a: 1, b: 2 } }),
        );

        await registry.update('search', 'tool', { schema: null, metadata: { c: 3 } });

        expect(await registry.resolve('search', 'tool')).toMatchObject({
          schema: null,
          metadata: { c: 3 },
          description: 'tool search',
        });
      });

      it('leaves the entry of the same name under another kind alone', async () => {
        await registry.register(entry('billing', 'agent'));
        const tool = await registry.register(entry('billing', 'tool'));

        await registry.update('billing', 'agent', { enabled: false });

        expect(await registry.resolve('billing', 'tool')).toEqual(tool);
      });

      it('rejects an update of an unknown entry with NotFoundError', async () => {
        await registry.register(entry('billing', 'tool'));

        await expect(registry.update('nobody', 'agent', { enabled: false })).rejects.toBeInstanceOf(
          NotFoundError,
        );
        await expect(
          registry.update('billing', 'agent', { enabled: false }),
        ).rejects.toBeInstanceOf(NotFoundError);
      });
    });

    describe('recordCall', () => {
      it('counts successes and failures, the last call time and the average duration (EMA, α 0.2)', async () => {
        await registry.register(entry('search', 'tool'));

        const first = await registry.recordCall('search', 'tool', call(true, 100, 10));
        expect(first.stats).toEqual({
          calls: 1,
          successes: 1,
          failures: 0,
          lastInvokedAt: iso(START + 10),
          avgDurationMs: 100,
        });

        const second = await registry.recordCall('search', 'tool', call(true, 200, 20));
        expect(second.stats.calls).toBe(2);
        expect(second.stats.avgDurationMs).toBeCloseTo(120, 9);

        const third = await registry.recordCall('search', 'tool', call(false, 50, 30));
        // 0.2 × 50 + 0.8 × 120
        expect(third.stats).toMatchObject({
          calls: 3,
          successes: 2,
          failures: 1,
          lastInvokedAt: iso(START + 30),
        });
        expect(third.stats.avgDurationMs).toBeCloseTo(106, 9);
        expect((await registry.resolve('search', 'tool'))?.stats).toEqual(third.stats);
      });

      it('leaves updatedAt and every other field as they were', async () => {
        const before = await registry.register(entry('search', 'tool'));
        clock.advance(5000);

        const after = await registry.recordCall('search', 'tool', call(false, 7));

        expect({ ...after, stats: NO_CALLS }).toEqual(before);
      });

      it('rejects a call of an unknown entry with NotFoundError', async () => {
        await registry.register(entry('search', 'tool'));

        await expect(registry.recordCall('search', 'agent', call(true, 1))).rejects.toBeInstanceOf(
          NotFoundError,
        );
        await expect(registry.recordCall('nobody', 'tool', call(true, 1))).rejects.toBeInstanceOf(
          NotFoundError,
        );
      });
    });

    describe('copies', () => {
      /** Changes everything a caller could reach in `e`. */
      function scribble(e: RegistryEntry): void {
        const loose = e as unknown as Record<string, unknown> & {
          metadata: Record<string, unknown>;
          schema: Record<string, unknown>;
          stats: Record<string, unknown>;
        };
        loose['description'] = 'scribbled';
        loose.metadata['owner'] = 'scribbled';
        loose.schema['type'] = 'scribbled';
        loose.stats['calls'] = 999;
      }

      it('hands out copies: changing a returned entry changes nothing stored', async () => {
        const made = entry('search', 'tool', {
          schema: { type: 'object' },
          metadata: { owner: 'a' },
        });
        const stored = await registry.register(made);
        const snapshot = structuredClone(stored);

        scribble(stored);
        scribble((await registry.resolve('search', 'tool')) as RegistryEntry);
        for (const e of await registry.list()) scribble(e);
        for (const e of await registry.discover('tool')) scribble(e);
        scribble(await registry.ensure(made));
        scribble(await registry.update('search', 'tool', {}));
        scribble(await registry.recordCall('search', 'tool', call(true, 5)));

        expect(await registry.resolve('search', 'tool')).toEqual({
          ...snapshot,
          stats: {
            calls: 1,
            successes: 1,
            failures: 0,
            lastInvokedAt: iso(START),
            avgDurationMs: 5,
          },
        });
      });

      it('keeps its own copy of what it was given', async () => {
        const metadata = { owner: 'a', nested: { n: 1 } };
        const schema = { type: 'object' };
        await registry.register(entry('search', 'tool', { metadata, schema }));
        const patch = { metadata: { owner: 'b' } };
        await registry.update('search', 'tool', patch);

        metadata.nested.n = 2;
        schema.type = 'scribbled';
        patch.metadata.owner = 'scribbled';

        expect(await registry.resolve('search', 'tool')).toMatchObject({
          metadata: { owner: 'b' },
          schema: { type: 'object' },
        });
      });
    });

    describe('validation', () => {
      const bad: [string, NewEntry, RegExp][] = [
        ['an empty name', entry(''), /name must be a non-empty string/],
        [
          'a name that is not a string',
          { ...entry('x'), name: 7 } as unknown as NewEntry,
          /name must/,
        ],
        [
          'an unknown kind',
          entry('x', 'robot' as EntryKind),
          /kind must be one of agent, tool, sense, plugin/,
        ],
        [
          'a description that is not a string',
          { ...entry('x'), description: 42 } as unknown as NewEntry,
          /description must be a string/,
        ],
        [
          'a health it does not know',
          entry('x', 'agent', { health: 'fine' as 'healthy' }),
          /health must be one of/,
        ],
        [
          'an enabled that is not a boolean',
          { ...entry('x'), enabled: 'yes' } as unknown as NewEntry,
          /enabled must be a boolean/,
        ],
      ];

      it.each(bad)(
        'register and ensure reject %s with a TypeError naming the field, storing nothing',
        async (_, input, message) => {
          await expect(registry.register(input)).rejects.toThrow(TypeError);
          await expect(registry.register(input)).rejects.toThrow(message);
          await expect(registry.ensure(input)).rejects.toThrow(TypeError);
          await expect(registry.ensure(input)).rejects.toThrow(message);
          expect(await registry.list()).toEqual([]);
        },
      );

      it('update rejects a bad patch with a TypeError naming the field and changes nothing', async () => {
        const stored = await registry.register(entry('billing'));

        await expect(
          registry.update('billing', 'agent', { description: 1 } as unknown as {
            description: string;
          }),
        ).rejects.toThrow(/description must be a string/);
        await expect(
          registry.update('billing', 'agent', { health: 'sick' } as unknown as {
            health: 'healthy';
          }),
        ).rejects.toThrow(TypeError);
        expect(await registry.resolve('billing')).toEqual(stored);
      });

      it('rejects a kind it does not know where a kind is asked for', async () => {
        await registry.register(entry('billing'));
        const robot = 'robot' as EntryKind;

        await expect(registry.discover(robot)).rejects.toThrow(/kind must be one of/);
        await expect(registry.resolve('billing', robot)).rejects.toThrow(TypeError);
        await expect(registry.update('billing', robot, {})).rejects.toThrow(TypeError);
        await expect(registry.recordCall('billing', robot, call(true, 1))).rejects.toThrow(
          TypeError,
        );
      });

      it('recordCall rejects a negative or non-finite duration and counts nothing', async () => {
        await registry.register(entry('billing'));

        await expect(registry.recordCall('billing', 'agent', call(true, -1))).rejects.toThrow(
          /durationMs must be a finite number >= 0/,
        );
        await expect(
          registry.recordCall('billing', 'agent', call(true, Number.NaN)),
        ).rejects.toThrow(RangeError);
        expect((await registry.resolve('billing'))?.stats).toEqual(NO_CALLS);
      });
    });
  });
}
