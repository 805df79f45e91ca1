import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CURRENT_END,
  CURRENT_START,
  renderCurrentFigures,
  withCurrentFigures,
  writeCurrentFigures,
  type BenchRun,
} from '../../bench/current-figures.js';
import type { RunEnvironment } from '../../bench/environment.js';
import { failureOf } from '../../bench/run-all.js';
import { readResults } from '../../bench/summary.js';

/** The run: started 10:30, so a result dated after that is its own. */
const env: RunEnvironment = {
  commit: 'abc1234',
  node: 'v20.99.0',
  cpuModel: 'Test CPU 9000',
  cpus: 2,
  date: '2026-11-29T10:30:00.000Z',
};
const DURING = '2026-11-29T10:41:00.000Z';
const BEFORE = '2026-11-28T09:00:00.000Z';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'axon-bench-current-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Writes a sample result file, as `bench/harness.ts`'s `report()` writes one. */
function result(
  bench: string,
  figures: {
    readonly metrics?: Record<string, number | null>;
    readonly ratios?: Record<string, number | null>;
  },
  date = DURING,
): void {
  writeFileSync(
    join(dir, `${bench}.json`),
    JSON.stringify({
      bench,
      node: 'v20.99.0',
      cpus: 2,
      cpuModel: 'Test CPU 9000',
      commit: date === DURING ? env.commit : 'old0000',
      date,
      metrics: figures.metrics ?? {},
      ratios: figures.ratios ?? {},
    }),
  );
}

function table(runs: readonly BenchRun[]): string {
  return renderCurrentFigures(runs, readResults(dir).results, env);
}

/** The table's rows, each by column name. */
function rows(text: string): Record<string, string>[] {
  const lines = text.split('\n').filter((l) => l.startsWith('|'));
  const cells = (line: string): string[] =>
    line
      .slice(1, -1)
      .split(' | ')
      .map((c) => c.trim());
  const header = cells(lines[0] ?? '');
  return lines
    .slice(2)
    .map((l) => Object.fromEntries(header.map((h, i) => [h, cells(l)[i] ?? ''])));
}

function rowOf(text: string, bench: string, figure: string): Record<string, string> {
  const found = rows(text).find((r) => r['bench'] === `\`${bench}\`` && r['figure'] === figure);
  if (!found) throw new Error(`no row for ${bench} ${figure} in\n${text}`);
  return found;
}

const ok = (bench: string): BenchRun => ({ bench, error: null });

describe('the current figures of one npm run bench', () => {
  it('says when the run started, at which commit and on which machine', () => {
    result('inline', { ratios: { vs_langgraph: 45.1 } });
    expect(table([ok('inline')])).toContain(
      'Measured by one `npm run bench` started 2026-11-29 10:30 UTC at commit `abc1234` ' +
        '(Node v20.99.0, 2 × Test CPU 9000): 1 of 1 benches run; of the figures with a target, ' +
        '1 met, 0 missed, 0 not measured.',
    );
  });

  it('shows every figure of every bench run, each beside its target and met or missed', () => {
    result('inline', { ratios: { vs_langgraph: 45.13 }, metrics: { runs_per_s: 624_795 } });
    result('worker', { ratios: { vs_piscina: 0.29 } });
    result('actors', { metrics: { heap_bytes_per_actor: 4_924, actors_alive: 90_000 } });
    const text = table([ok('inline'), ok('worker'), ok('actors')]);
    expect(rowOf(text, 'inline', '`ratios.vs_langgraph`')).toMatchObject({
      measured: '45.13',
      target: '≥ 40',
      result: 'met',
    });
    // A figure no target names is shown all the same, without a verdict.
    expect(rowOf(text, 'inline', '`metrics.runs_per_s`')).toMatchObject({
      measured: '624 795',
      target: '—',
      result: '—',
    });
    expect(rowOf(text, 'worker', '`ratios.vs_piscina`')).toMatchObject({
      target: '≥ 0.9',
      result: '**missed**',
    });
    expect(rowOf(text, 'actors', '`metrics.heap_bytes_per_actor`')).toMatchObject({
      measured: '4 924',
      target: '≤ 5 120',
      result: 'met',
    });
    expect(rowOf(text, 'actors', '`metrics.actors_alive`').result).toBe('**missed**');
    expect(rows(text)).toHaveLength(5);
    expect(text).toContain('3 of 3 benches run; of the figures with a target, 2 met, 2 missed');
  });

  it("reads bench:cli's figures against their targets like any other bench's", () => {
    result('cli', { metrics: { help_ms: 212.4, runs_list_ms: 260 } });
    const text = table([ok('cli')]);
    expect(rowOf(text, 'cli', '`metrics.help_ms`')).toMatchObject({ measured: '212.4' });
    expect(rowOf(text, 'cli', '`metrics.runs_list_ms`')).toMatchObject({ measured: '260' });
  });

  it('shows a target whose figure the result lacks, or holds as null, as not measured', () => {
    result('memory', { metrics: { recall_p50_ms_100k: null, cold_recall_at_10: 1 } });
    const text = table([ok('memory')]);
    expect(rowOf(text, 'memory', '`metrics.recall_p50_ms_100k`')).toMatchObject({
      measured: '—',
      result: 'not measured',
    });
    expect(rowOf(text, 'memory', '`metrics.cold_one_scope_p50_ms`').result).toBe('not measured');
    expect(rowOf(text, 'memory', '`metrics.cold_recall_at_10`').result).toBe('met');
  });

  it('shows a bench that failed as one row not run, with its error, and nothing of its last result', () => {
    result('store', { ratios: { sqlite_vs_memory: 0.9, redis_vs_memory: 0.5 } }, BEFORE);
    result('inline', { ratios: { vs_langgraph: 41 } });
    const text = table([ok('inline'), { bench: 'store', error: 'ECONNREFUSED 127.0.0.1:6379' }]);
    const store = rows(text).filter((r) => r['bench'] === '`store`');
    expect(store).toEqual([
      {
        bench: '`store`',
        figure: '—',
        measured: '—',
        target: '—',
        result: 'not run: ECONNREFUSED 127.0.0.1:6379',
      },
    ]);
    expect(text).not.toContain('0.9 ');
    expect(text).toContain('1 of 2 benches run');
  });

  it('shows a bench that exited well but wrote no result in this run as not run', () => {
    result('http', { ratios: { vs_bare_fastify: 0.7 } }, BEFORE);
    const text = table([ok('http')]);
    expect(rows(text)).toEqual([
      expect.objectContaining({ bench: '`http`', result: 'not run: it wrote no result' }),
    ]);
  });

  it('writes the table between the markers of the doc, leaving the rest as it was, formatted', async () => {
    result('inline', { ratios: { vs_langgraph: 45.13 }, metrics: { runs_per_s: 624_795 } });
    result('worker', { ratios: { vs_piscina: 0.29 } });
    const docPath = join(dir, 'benchmarks.md');
    const before = `# Benchmarks\n\n## Current figures\n\n${CURRENT_START}\n\nold table\n\n${CURRENT_END}\n\n## History\n\nkept\n`;
    writeFileSync(docPath, before);
    writeCurrentFigures(docPath, [ok('inline'), ok('worker')], readResults(dir).results, env);
    const doc = readFileSync(docPath, 'utf8');
    expect(doc).not.toContain('old table');
    expect(
      doc.startsWith(`# Benchmarks\n\n## Current figures\n\n${CURRENT_START}\n\nMeasured by`),
    ).toBe(true);
    expect(doc.endsWith(`${CURRENT_END}\n\n## History\n\nkept\n`)).toBe(true);
    expect(rowOf(doc, 'worker', '`ratios.vs_piscina`').result).toBe('**missed**');
    const config = (await resolveConfig(docPath)) ?? {};
    expect(await format(doc, { ...config, parser: 'markdown' })).toBe(doc);
    // Again: the same table, not a second one.
    writeCurrentFigures(docPath, [ok('inline'), ok('worker')], readResults(dir).results, env);
    expect(readFileSync(docPath, 'utf8')).toBe(doc);
  });

  it('refuses a doc without exactly one pair of markers, naming them', () => {
    expect(() => withCurrentFigures('# Benchmarks\n', 'x')).toThrow(CURRENT_START);
    expect(() =>
      withCurrentFigures(`${CURRENT_START}\n${CURRENT_END}\n${CURRENT_START}\n`, 'x'),
    ).toThrow(CURRENT_END);
    expect(() => withCurrentFigures(`${CURRENT_END}\n${CURRENT_START}\n`, 'x')).toThrow(
      /exactly one/,
    );
  });
});

describe("a failed bench's error", () => {
  it('is its last line on stderr that is not a stack frame, with its exit code', () => {
    const stderr =
      'warming up\nError: connect ECONNREFUSED 127.0.0.1:6379\n    at TCPConnectWrap.afterConnect (node:net:1)\n\n';
    expect(failureOf(stderr, 1, null)).toBe(
      'Error: connect ECONNREFUSED 127.0.0.1:6379 (exit code 1)',
    );
  });

  it('is its exit code or signal when it wrote nothing on stderr', () => {
    expect(failureOf('', 3, null)).toBe('exit code 3');
    expect(failureOf('', null, 'SIGKILL')).toBe('killed by SIGKILL');
  });
});
