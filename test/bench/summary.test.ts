import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunEnvironment } from '../../bench/environment.js';
import { readResults, renderSummary, writeSummary } from '../../bench/summary.js';
import { describeTarget, formatFigure, judge, TARGETS, type Target } from '../../bench/targets.js';

const env: RunEnvironment = {
  commit: 'abc1234-dirty',
  node: 'v20.99.0',
  cpuModel: 'Test CPU 9000',
  cpus: 2,
  date: '2026-11-25T10:30:00.000Z',
};

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'axon-bench-summary-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function result(
  bench: string,
  figures: {
    readonly metrics?: Record<string, number | null>;
    readonly ratios?: Record<string, number | null>;
  },
  /** `null`: a result written before the harness recorded its commit. */
  commit: string | null = env.commit,
): void {
  writeFileSync(
    join(dir, `${bench}.json`),
    JSON.stringify({
      bench,
      node: 'v20.99.0',
      cpus: 2,
      ...(commit === null
        ? {}
        : { cpuModel: 'Test CPU 9000', commit, date: '2026-11-25T10:00:00.000Z' }),
      metrics: figures.metrics ?? {},
      ratios: figures.ratios ?? {},
    }),
  );
}

/** The summary table's row for `bench` and `figure`, by column name. */
function row(summary: string, bench: string, figure: string): Record<string, string> {
  const lines = summary.split('\n').filter((l) => l.startsWith('|'));
  const cells = (line: string): string[] =>
    line
      .slice(1, -1)
      .split(' | ')
      .map((c) => c.trim());
  const header = cells(lines[0] ?? '');
  const found = lines.find((l) => {
    const c = cells(l);
    return c[0] === `\`${bench}\`` && c[1] === `\`${figure}\``;
  });
  if (found === undefined) throw new Error(`no row for ${bench} ${figure}`);
  const values = cells(found);
  return Object.fromEntries(header.map((h, i) => [h, values[i] ?? '']));
}

function summaryOf(): string {
  return readFileSync(writeSummary(dir, env), 'utf8');
}

describe('the benchmark summary', () => {
  it('says at which commit, on which Node and CPU, and when it was built', () => {
    const summary = summaryOf();
    expect(summary.split('\n')[0]).toBe('# Benchmark summary');
    expect(summary).toContain(
      'Built 2026-11-25 10:30 UTC at commit `abc1234-dirty` (Node v20.99.0, 2 × Test CPU 9000)',
    );
  });

  it('marks a figure that meets its target met, and one that does not missed', () => {
    result('inline', { ratios: { vs_langgraph: 45.13 } });
    result('worker', { ratios: { vs_piscina: 0.29 } });
    result('actors', { metrics: { heap_bytes_per_actor: 4_924, actors_alive: 90_000 } });
    const summary = summaryOf();
    expect(row(summary, 'inline', 'ratios.vs_langgraph')).toMatchObject({
      target: '≥ 40',
      measured: '45.13',
      result: 'met',
    });
    expect(row(summary, 'worker', 'ratios.vs_piscina')).toMatchObject({
      target: '≥ 0.9',
      measured: '0.29',
      result: '**missed**',
    });
    expect(row(summary, 'actors', 'metrics.heap_bytes_per_actor')).toMatchObject({
      target: '≤ 5 120',
      measured: '4 924',
      result: 'met',
    });
    expect(row(summary, 'actors', 'metrics.actors_alive').result).toBe('**missed**');
    // Every other target: no result holds its figure.
    expect(summary).toContain(`2 met, 2 missed, ${TARGETS.length - 4} not measured.`);
  });

  it('shows a target whose figure is absent, null or whose bench has no result as not measured', () => {
    // One-scope search p50 absent; recall p50 at 100k was NaN, which JSON writes as null.
    result('memory', {
      metrics: {
        recall_p50_ms_100k: null,
        cold_recall_at_10: 1,
        cold_one_scope_recall_at_10: 0.808,
      },
    });
    const summary = summaryOf();
    expect(row(summary, 'memory', 'metrics.cold_one_scope_p50_ms')).toMatchObject({
      measured: '—',
      result: 'not measured',
    });
    expect(row(summary, 'memory', 'metrics.recall_p50_ms_100k').result).toBe('not measured');
    expect(row(summary, 'memory', 'metrics.cold_recall_at_10').result).toBe('met');
    expect(row(summary, 'memory', 'metrics.cold_one_scope_recall_at_10')).toMatchObject({
      measured: '0.808',
      result: '**missed**',
    });
    expect(row(summary, 'stream', 'metrics.tokens_per_s')).toMatchObject({
      result: 'not measured',
      run: 'no result',
    });
  });

  it("names each row's run, and marks a run at another or unknown commit not current", () => {
    result('inline', { ratios: { vs_langgraph: 31 } });
    result('store', { ratios: { sqlite_vs_memory: 0.65 } }, 'fedcba9');
    result('engine', { ratios: { vs_openai_sdk: 0.94 } }, null);
    const summary = summaryOf();
    expect(row(summary, 'inline', 'ratios.vs_langgraph').run).toBe(
      '`abc1234-dirty`, 2026-11-25 10:00 UTC',
    );
    expect(row(summary, 'store', 'ratios.sqlite_vs_memory').run).toBe(
      '`fedcba9`, 2026-11-25 10:00 UTC (not current)',
    );
    // A result written before the harness recorded its commit: dated by its file.
    expect(row(summary, 'engine', 'ratios.vs_openai_sdk').run).toMatch(
      /^unknown commit, \d{4}-\d\d-\d\d \d\d:\d\d UTC \(not current\)$/,
    );
    expect(summary).toContain('8 of the figures from a run at another commit ("not current")');
  });

  it('lists JSON files that are not bench results instead of failing', () => {
    writeFileSync(join(dir, 'broken.json'), '{ "bench": ');
    writeFileSync(join(dir, 'other.json'), JSON.stringify({ hello: 'world' }));
    result('inline', { ratios: { vs_langgraph: 41 } });
    const summary = summaryOf();
    expect(summary).toContain(
      'Not read: `broken.json` (not JSON), `other.json` (not a bench result).',
    );
    expect(row(summary, 'inline', 'ratios.vs_langgraph').result).toBe('met');
  });

  it('does not round a missed figure onto its threshold', () => {
    result('memory', { metrics: { cold_recall_at_10: 0.9496 } });
    expect(row(summaryOf(), 'memory', 'metrics.cold_recall_at_10')).toMatchObject({
      measured: '0.9496',
      result: '**missed**',
    });
  });

  it('is laid out as Prettier lays out markdown, so the docs it is copied into stay formatted', async () => {
    result('inline', { ratios: { vs_langgraph: 45.13 } });
    result('stream', { metrics: { tokens_per_s: 624_795 } }, 'fedcba9');
    writeFileSync(join(dir, 'broken.json'), 'not json');
    const summary = renderSummary(readResults(dir), env);
    const config = (await resolveConfig(join(dir, 'summary.md'))) ?? {};
    expect(await format(summary, { ...config, parser: 'markdown' })).toBe(summary);
  });
});

describe('the targets', () => {
  it('cover the figures the task names, with their thresholds', () => {
    const listed = TARGETS.map((t) => `${t.bench} ${t.kind}.${t.name} ${describeTarget(t)}`);
    expect(listed).toEqual([
      'inline ratios.vs_langgraph ≥ 40',
      'worker ratios.vs_piscina ≥ 0.9',
      'stream metrics.tokens_per_s ≥ 200 000',
      'actors metrics.heap_bytes_per_actor ≤ 5 120',
      'actors metrics.actors_alive ≥ 1 000 000',
      'engine ratios.vs_openai_sdk ≥ 0.9',
      'store ratios.sqlite_vs_memory ≥ 0.7',
      'store ratios.redis_vs_memory ≥ 0.4',
      'memory metrics.recall_p50_ms_100k ≤ 5',
      'memory metrics.cold_recall_at_10 ≥ 0.95',
      'memory metrics.cold_one_scope_recall_at_10 ≥ 0.95',
      'memory metrics.cold_one_scope_p50_ms ≤ 5',
      'sse metrics.loop_lag_p99_ms_1000_clients < 50',
      'sse metrics.tokens_per_s_one_connection ≥ 200 000',
      'http ratios.vs_bare_fastify ≥ 0.6',
      'fleet ratios.vs_bullmq ≥ 0.7',
      'fleet metrics.submit_to_start_p50_ms ≤ 2',
      'fleet metrics.redis_calls_per_step ≤ 4',
      'fleet metrics.redis_calls_per_step_cluster ≤ 4',
      'fleet metrics.redis_commands_per_step ≤ 40',
      'orchestrator ratios.handle_vs_invoke ≥ 0.6',
      'orchestrator metrics.embedding_route_p50_ms ≤ 1',
      'workflow ratios.vs_langgraph ≥ 10',
      'workflow ratios.vs_langgraph_sqlite ≥ 3',
      'container ratios.warm_vs_pipe ≤ 1.3',
      'container ratios.cold_vs_podman_run ≤ 1.2',
      'durable-agents metrics.actors_addressed ≥ 1 000 000',
      'durable-agents metrics.asleep_bytes_per_actor ≤ 200',
      'durable-agents metrics.wake_p50_ms ≤ 1',
      'durable-agents metrics.wake_p99_ms ≤ 5',
      'durable-agents ratios.vs_langgraph_threads ≥ 10',
      'store ratios.postgres_vs_memory ≥ 0.3',
      'store ratios.vs_langgraph_postgres ≥ 3',
      'cli metrics.help_ms ≤ 300',
      'cli metrics.runs_list_ms ≤ 300',
      'store ratios.postgres_vs_dbos ≥ 5',
      'store ratios.postgres_vs_raw ≥ 0.5',
      'store ratios.sqlite_vs_raw ≥ 0.5',
    ]);
  });

  it('judge a figure on the threshold by the comparison: met for ≥ and ≤, missed for <', () => {
    const at = (comparison: Target['comparison']): Target => ({
      bench: 'x',
      kind: 'metrics',
      name: 'y',
      comparison,
      threshold: 50,
      what: '',
      source: 'DESIGN.md',
    });
    expect(judge(at('>='), 50)).toBe('met');
    expect(judge(at('<='), 50)).toBe('met');
    expect(judge(at('<'), 50)).toBe('missed');
    expect(judge(at('<'), 49.9)).toBe('met');
    expect(judge(at('>='), Number.NaN)).toBe('not measured');
  });

  it('format figures as the docs write them', () => {
    expect(formatFigure(624_795)).toBe('624 795');
    expect(formatFigure(19_102.66)).toBe('19 102.66');
    expect(formatFigure(0.2904)).toBe('0.29');
    expect(formatFigure(4.381)).toBe('4.38');
  });
});
