/**
 * `axon run` under `AXON_PRICE_TABLE`: the example's own engine and the runtime's are costed
 * from it, so the run's cost shows; a file that is not a price table is a line and exit 2.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../../src/cli/cli.js';
import type { CliIo } from '../../../src/cli/cli-io.js';

const dir = mkdtempSync(join(tmpdir(), 'axon-run-prices-'));
afterEach(() => {
  vi.unstubAllEnvs();
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function cli(argv: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = {
    env: { ...process.env, AXON_DATA_DIR: join(dir, 'data') },
    stdout: { write: (t: string) => out.push(t) > 0 },
    stderr: { write: (t: string) => err.push(t) > 0 },
  };
  const code = await runCli(argv, io, '9.9.9-test');
  return { code, out: out.join(''), err: err.join('') };
}

interface Usage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly costUsd: number;
}

/** The result line of `axon run trip-planner --json`. */
async function tripUsage(): Promise<Usage> {
  const { code, out } = await cli(['run', 'trip-planner', '--token-ms', '0', '--json']);
  expect(code).toBe(0);
  const last = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as { result: { usage: Usage } };
  return last.result.usage;
}

describe('axon run with AXON_PRICE_TABLE', () => {
  it('costs the example’s engine from the table: the result’s cost is its tokens’ price', async () => {
    expect((await tripUsage()).costUsd).toBe(0);
    const file = join(dir, 'prices.yaml');
    writeFileSync(
      file,
      'version: run-prices\nmodels:\n  scripted: { inputPerMTok: 1000000, outputPerMTok: 2000000 }\n',
    );
    vi.stubEnv('AXON_PRICE_TABLE', file);
    const usage = await tripUsage();
    expect(usage.completionTokens).toBeGreaterThan(10);
    expect(usage.costUsd).toBeCloseTo(usage.promptTokens + 2 * usage.completionTokens, 9);
  }, 30_000);

  it('refuses a file that is not a price table: one line, exit 2', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(
      file,
      'version: bad\nmodels:\n  scripted: { inputPerMTok: -1, outputPerMTok: 0 }\n',
    );
    vi.stubEnv('AXON_PRICE_TABLE', file);
    const { code, out, err } = await cli(['run', 'trip-planner', '--token-ms', '0']);
    expect(code).toBe(2);
    expect(out).toBe('');
    expect(err).toMatch(
      /^axon: AXON_PRICE_TABLE: price table .*bad\.yaml: models\.scripted\.inputPerMTok: .*\n$/,
    );
  });
});
