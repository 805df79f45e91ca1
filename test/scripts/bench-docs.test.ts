import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { renderTargetTable, TARGETS_END, TARGETS_START } from '../../bench/target-table.js';
import { END_MARKER, runBenchDocs, START_MARKER } from '../../scripts/bench-docs.js';

const SUMMARY = `# Benchmark summary

Built 2026-11-25 10:30 UTC at commit \`abc1234\`: 1 met, 0 missed, 0 not measured.

| bench    | result |
| -------- | ------ |
| \`inline\` | met    |
`;

/** The table of benches and targets, as bench:docs writes it. */
const TARGETS_PART = `${TARGETS_START}\n\n${renderTargetTable()}\n\n${TARGETS_END}`;
const BEFORE = `# Benchmarks\n\n${TARGETS_PART}\n\n## Current figures (generated)\n\nHow it is made.\n\n`;
const AFTER = '\n\n## History\n\nTyped by hand, kept as it is.\n';

let dir: string;
let docPath: string;
let summaryPath: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'axon-bench-docs-'));
  docPath = join(dir, 'benchmarks.md');
  summaryPath = join(dir, 'summary.md');
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function run(): { readonly code: number; readonly stdout: string; readonly stderr: string } {
  const out: string[] = [];
  const err: string[] = [];
  const code = runBenchDocs(
    { docPath, summaryPath },
    {
      stdout: { write: (t: string) => out.push(t) },
      stderr: { write: (t: string) => err.push(t) },
    },
  );
  return { code, stdout: out.join(''), stderr: err.join('') };
}

describe('npm run bench:docs', () => {
  it('replaces what lies between the markers with the summary, and nothing else', () => {
    writeFileSync(summaryPath, SUMMARY);
    writeFileSync(docPath, `${BEFORE}${START_MARKER}\n| old | typed |\n${END_MARKER}${AFTER}`);
    expect(run().code).toBe(0);
    const doc = readFileSync(docPath, 'utf8');
    expect(doc).toBe(
      `${BEFORE}${START_MARKER}\n\n` +
        'Built 2026-11-25 10:30 UTC at commit `abc1234`: 1 met, 0 missed, 0 not measured.\n\n' +
        '| bench    | result |\n| -------- | ------ |\n| `inline` | met    |\n\n' +
        `${END_MARKER}${AFTER}`,
    );
    expect(doc).not.toContain('| old | typed |');
  });

  it('leaves the doc as it is when run again on the same summary', () => {
    writeFileSync(summaryPath, SUMMARY);
    writeFileSync(docPath, `${BEFORE}${START_MARKER}\n${END_MARKER}${AFTER}`);
    run();
    const once = readFileSync(docPath, 'utf8');
    const again = run();
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('already shows');
    expect(readFileSync(docPath, 'utf8')).toBe(once);
  });

  it('exits 1 naming the markers, and changes nothing, when the doc has none', () => {
    writeFileSync(summaryPath, SUMMARY);
    const doc = `${BEFORE}| typed | table |${AFTER}`;
    writeFileSync(docPath, doc);
    const r = run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(START_MARKER);
    expect(r.stderr).toContain(END_MARKER);
    expect(readFileSync(docPath, 'utf8')).toBe(doc);
  });

  it('exits 1 when the markers are out of order or one is missing', () => {
    writeFileSync(summaryPath, SUMMARY);
    for (const doc of [
      `${BEFORE}${END_MARKER}\n${START_MARKER}${AFTER}`,
      `${BEFORE}${START_MARKER}\n${AFTER}`,
      `${BEFORE}${START_MARKER}\n${END_MARKER}\n${START_MARKER}\n${END_MARKER}${AFTER}`,
    ]) {
      writeFileSync(docPath, doc);
      expect(run().code).toBe(1);
      expect(readFileSync(docPath, 'utf8')).toBe(doc);
    }
  });

  it('writes the table of benches and targets from bench/benches.ts and bench/targets.ts', () => {
    writeFileSync(summaryPath, SUMMARY);
    const typed = '| script | target |\n| --- | --- |\n| `npm run bench:inline` | ≥ 30 |';
    writeFileSync(
      docPath,
      `# Benchmarks\n\n${TARGETS_START}\n${typed}\n${TARGETS_END}\n\n${START_MARKER}\n${END_MARKER}${AFTER}`,
    );
    expect(run().code).toBe(0);
    const doc = readFileSync(docPath, 'utf8');
    expect(doc).toContain(TARGETS_PART);
    expect(doc).not.toContain('≥ 30');
    expect(doc).toContain('`ratios.vs_langgraph` ≥ 40');
    expect(doc).toContain('`ratios.cold_vs_podman_run` ≤ 1.2');
  });

  it('exits 1 naming the targets markers, and changes nothing, when the doc has none', () => {
    writeFileSync(summaryPath, SUMMARY);
    const doc = `# Benchmarks\n\n${START_MARKER}\n${END_MARKER}${AFTER}`;
    writeFileSync(docPath, doc);
    const r = run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(TARGETS_START);
    expect(readFileSync(docPath, 'utf8')).toBe(doc);
  });

  it('exits 1 telling how to make the summary when there is none', () => {
    const doc = `${BEFORE}${START_MARKER}\n${END_MARKER}${AFTER}`;
    writeFileSync(docPath, doc);
    const r = run();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('npm run bench');
    expect(readFileSync(docPath, 'utf8')).toBe(doc);
  });
});
