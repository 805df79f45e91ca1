/**
 * A fleet API process's hand-off of an actor's work that no pool took (issue 46, found by a
 * suite run: an API whose pool table predated the worker left 30 acknowledged messages
 * queued for good): tried again every REDELIVER_MS until it is taken, said once an actor.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PoolUnavailableError } from '../../src/errors/pool-unavailable-error.js';
import { createLogger } from '../../src/observability/logger.js';
import { REDELIVER_MS, UndeliveredActors } from '../../src/durable/undelivered-actors.js';

function collected() {
  const lines: Record<string, unknown>[] = [];
  const destination = {
    write(line: string) {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    },
  };
  return { lines, logger: createLogger({ level: 'warn', destination }) };
}

const noPool = () => new PoolUnavailableError('no pool of the fleet is live', { retriable: true });

afterEach(() => {
  vi.useRealTimers();
});

describe('UndeliveredActors', () => {
  it('hands an actor on again every REDELIVER_MS until a pool takes it, with one warning', async () => {
    vi.useFakeTimers();
    const { lines, logger } = collected();
    const undelivered = new UndeliveredActors();
    let tries = 0;
    // Refused twice more (no pool yet), then taken.
    const retry = async (): Promise<void> => {
      tries++;
      if (tries < 3) undelivered.failed(logger, 'actor_a', noPool(), retry);
    };
    undelivered.failed(logger, 'actor_a', noPool(), retry);
    expect(tries).toBe(0);
    await vi.advanceTimersByTimeAsync(REDELIVER_MS);
    expect(tries).toBe(1);
    await vi.advanceTimersByTimeAsync(REDELIVER_MS);
    expect(tries).toBe(2);
    await vi.advanceTimersByTimeAsync(REDELIVER_MS);
    expect(tries).toBe(3);
    // Taken: nothing more.
    await vi.advanceTimersByTimeAsync(REDELIVER_MS * 5);
    expect(tries).toBe(3);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, actor_id: 'actor_a', retry_ms: REDELIVER_MS });
    expect(String(lines[0]?.['msg'])).toMatch(/messages stay queued/);
  });

  it('handOff: a hand-off whose read or job fails (Redis gone) is tried again by its retry until it works, with one warning', async () => {
    vi.useFakeTimers();
    const { lines, logger } = collected();
    const undelivered = new UndeliveredActors();
    let tries = 0;
    // The store's read refused twice (Redis down), then the job taken.
    const attempt = async (): Promise<void> => {
      tries++;
      if (tries < 3) throw new Error('Connection is closed.');
    };
    const retry = (): Promise<void> => undelivered.handOff(logger, 'actor_a', attempt, retry);
    await undelivered.handOff(logger, 'actor_a', attempt, retry);
    expect(tries).toBe(1);
    await vi.advanceTimersByTimeAsync(REDELIVER_MS);
    expect(tries).toBe(2);
    await vi.advanceTimersByTimeAsync(REDELIVER_MS);
    expect(tries).toBe(3);
    await vi.advanceTimersByTimeAsync(REDELIVER_MS * 5);
    expect(tries).toBe(3);
    expect(lines).toHaveLength(1);
    expect(String((lines[0]?.['err'] as { message?: unknown } | undefined)?.message)).toBe(
      'Connection is closed.',
    );
  });

  it('any failure of the hand-off (Redis refusing the job) is tried again; close stops it', async () => {
    vi.useFakeTimers();
    const { logger } = collected();
    const undelivered = new UndeliveredActors();
    const tried: string[] = [];
    undelivered.failed(logger, 'actor_a', new Error('Connection is closed.'), async () => {
      tried.push('actor_a');
    });
    undelivered.failed(logger, 'actor_b', noPool(), async () => {
      tried.push('actor_b');
    });
    await vi.advanceTimersByTimeAsync(REDELIVER_MS);
    expect(tried.sort()).toEqual(['actor_a', 'actor_b']);
    undelivered.failed(logger, 'actor_c', noPool(), async () => {
      tried.push('actor_c');
    });
    undelivered.close();
    await vi.advanceTimersByTimeAsync(REDELIVER_MS * 3);
    expect(tried).not.toContain('actor_c');
  });
});
