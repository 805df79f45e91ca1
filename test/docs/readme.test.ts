/**
 * README.md against what it describes: the quick start stays two commands and then says where
 * to look and how to end a run; the fleet walkthrough starts every pool its runs are placed
 * on, with flags the CLI accepts; the Commands table has a row for every command of
 * `axon --help`.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import { HELP, OPTIONS } from '../../src/cli/cli.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The text of the `## title` section, up to the next `## `. */
function section(title: string): string {
  const start = readme.indexOf(`\n## ${title}\n`);
  expect(start, `README has a section "${title}"`).toBeGreaterThan(-1);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end === -1 ? undefined : end);
}

/** The fenced code blocks of `text` tagged `lang` ('' for untagged ones). */
function blocks(text: string, lang: string): string[] {
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)]
    .filter((m) => m[1] === lang)
    .map((m) => m[2] ?? '');
}

/** The `npx axon …` commands of a shell block: their arguments, comments and redirections cut. */
function axonCommands(block: string): string[][] {
  return block
    .split('\n')
    .map((line) =>
      line
        .replace(/#.*$/, '')
        .replace(/[<>]\s*\S+|2>&1|&\s*$/g, '')
        .trim(),
    )
    .filter((line) => line.startsWith('npx axon '))
    .map((line) => line.slice('npx axon '.length).split(/\s+/));
}

describe('README.md', () => {
  it('the quick start is two commands: npm install && npm start, and npm test', () => {
    const [first] = blocks(section('Quick start'), 'sh');
    const commands = (first ?? '')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => l.replace(/#.*$/, '').trim());
    expect(commands).toEqual(['npm install && npm start', 'npm test']);
  });

  it('after the quick start, says where to look (the trace UI) and how to end the run, with a curl line', () => {
    const quick = section('Quick start');
    expect(quick).toContain('http://127.0.0.1:7070/ui');
    const complete = blocks(quick, '')
      .flatMap((b) => b.split('\n'))
      .find((l) => /^\$ curl .*-X POST .*\/v1\/runs\/run_\S+\/complete$/.test(l));
    expect(complete, 'a curl line completing the run').toBeDefined();
    // The run completed is the quick start's own run.
    const runId = /\/v1\/runs\/(run_\S+?)\/complete/.exec(complete ?? '')?.[1];
    expect(quick).toContain(`localhost:7070/v1/runs/${runId ?? ''}/steps`);
  });

  it('the fleet walkthrough starts a worker of every pool its runs pin or look for by tag, with flags the CLI accepts', () => {
    const fleet = section('Run a fleet');
    const started = blocks(fleet, 'sh').flatMap(axonCommands);
    expect(started.map((args) => args[0])).toEqual(['serve', 'worker', 'worker']);
    const pools = new Map<string, string[]>();
    for (const args of started) {
      const { values, positionals } = parseArgs({
        args: args.slice(1),
        options: OPTIONS,
        allowPositionals: true,
        strict: true,
      });
      expect(positionals).toEqual([]);
      if (args[0] === 'worker') {
        expect(typeof values.pool).toBe('string');
        pools.set(String(values.pool), String(values.tags ?? '').split(','));
      }
    }
    const pins = [...fleet.matchAll(/"pin":"([^"]+)"/g)].map((m) => m[1] ?? '');
    const tagged = [...fleet.matchAll(/"affinity":\{"tags":\[([^\]]*)\]/g)].map(
      (m) => JSON.parse(`[${m[1] ?? ''}]`) as string[],
    );
    expect(pins.length + tagged.length).toBeGreaterThan(0);
    for (const pin of pins) expect([...pools.keys()], `a worker of pool ${pin}`).toContain(pin);
    for (const tags of tagged) {
      const fits = [...pools.values()].some((has) => tags.every((t) => has.includes(t)));
      expect(fits, `a worker tagged ${tags.join(',')}`).toBe(true);
    }
  });

  it('the Commands table has a row for every command axon --help lists', () => {
    const commands = [...HELP.matchAll(/^ {2}([a-z]+(?: [a-z]+)?)(?: [<[]\S+)* {2,}\S/gm)].map(
      (m) => m[1] ?? '',
    );
    expect(commands).toContain('workflow trigger');
    expect(commands).toContain('thread kill');
    const rows = section('Commands')
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .map((l) => l.split('|')[1]?.trim() ?? '');
    for (const command of commands) {
      expect(
        rows.some((r) => r === `\`npx axon ${command}\`` || r.startsWith(`\`npx axon ${command} `)),
        `a row for axon ${command}`,
      ).toBe(true);
    }
  });
});
