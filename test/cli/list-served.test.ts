/**
 * `axon list` (issue 48): what `axon serve` registers on the configuration here — the file's
 * agents, tools, workflows, durable agents and schedules, the examples' it adds by default —
 * and the examples `axon run` takes, one table line each.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { axonIn } from './new/cli-in.js';

const code = fileURLToPath(new URL('../fixtures/code-definitions.ts', import.meta.url));
const durable = fileURLToPath(new URL('../fixtures/durable-slow.ts', import.meta.url));

/** The table's rows as [kind, name, from, description], split on its aligned columns. */
function rows(stdout: string): string[][] {
  const [header, ...lines] = stdout.trimEnd().split('\n');
  const starts = ['KIND', 'NAME', 'FROM', 'DESCRIPTION'].map((h) => header?.indexOf(h) ?? -1);
  return lines.map((line) =>
    starts.map((at, i) => line.slice(at, starts[i + 1] ?? undefined).trim()),
  );
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'axon-list-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** The rows serve adds on every configuration: the examples'. */
const EXAMPLE_ROWS = [
  [
    'agent',
    'planner',
    'examples/trip-planner',
    'Plans a trip: picks the date, finds a flight, writes the plan.',
  ],
  ['agent', 'calendar', 'examples/trip-planner', expect.any(String)],
  ['agent', 'flights', 'examples/trip-planner', expect.any(String)],
  ['agent', 'billing', 'examples/help-desk', expect.any(String)],
  ['agent', 'support', 'examples/help-desk', expect.any(String)],
  ['tool', 'search_flights', 'examples/trip-planner', expect.any(String)],
  ['tool', 'add', 'examples', 'Adds two numbers and returns { sum }.'],
  ['workflow', 'code-review', 'examples/code-review', expect.any(String)],
  ['durable agent', 'notebook', 'examples', expect.any(String)],
  ['durable agent', 'follow-up', 'examples', expect.any(String)],
  [
    'example',
    'trip-planner',
    'examples/trip-planner',
    'planner delegates to calendar and flights; flights calls search_flights',
  ],
  ['example', 'help-desk', 'examples/help-desk', expect.any(String)],
];

describe('axon list', () => {
  it('without a config: the examples serve registers, and those axon run takes', async () => {
    const { code: exit, stdout, stderr } = await axonIn(dir, ['list']);
    expect({ exit, stderr }).toEqual({ exit: 0, stderr: '' });
    expect(stdout.split('\n')[0]).toMatch(/^KIND +NAME +FROM +DESCRIPTION$/);
    expect(rows(stdout)).toEqual(EXAMPLE_ROWS);
  });

  it("with ./axon.yaml: the file's code:, workflows:, durable_agents: and schedules:, each with its line, before the examples'", async () => {
    writeFileSync(
      join(dir, 'axon.yaml'),
      [
        'code:',
        '  agents:',
        `    - { module: ${code}, export: herald }`,
        `    - { module: ${code}, export: echo }`,
        '  tools:',
        `    - { module: ${code}, export: shout }`,
        '  workflows:',
        `    - { module: ${code}, export: relay }`,
        'workflows:',
        '  duo:',
        '    description: two roles',
        '    roles: { a: { engine: scripted, prompt: A }, b: { engine: scripted, prompt: B } }',
        '    moderator: { order: [a, b] }',
        'durable_agents:',
        `  - { module: ${durable}, export: slow }`,
        'schedules:',
        "  - { name: nightly, agent: notebook, key: team-a, message: { text: hi }, cron: '0 2 * * *', timezone: Europe/Berlin }",
        '',
      ].join('\n'),
    );
    const { code: exit, stdout, stderr } = await axonIn(dir, ['list']);
    expect({ exit, stderr }).toEqual({ exit: 0, stderr: '' });
    const listed = rows(stdout);
    expect(listed.filter((r) => r[2]?.startsWith('axon.yaml'))).toEqual([
      ['agent', 'herald', 'axon.yaml line 3', 'Shouts the message, then has echo repeat it'],
      ['agent', 'echo', 'axon.yaml line 4', 'Answers with the message it got'],
      ['tool', 'shout', 'axon.yaml line 6', 'Says a text in capitals'],
      ['workflow', 'duo', 'axon.yaml line 11', 'two roles'],
      ['workflow', 'relay', 'axon.yaml line 8', 'One scripted turn'],
      ['durable agent', 'slow', 'axon.yaml line 15', ''],
      [
        'schedule',
        'nightly',
        'axon.yaml line 17',
        'notebook team-a at "0 2 * * *" (Europe/Berlin)',
      ],
    ]);
    // The examples' rows are still there, after the file's of each kind.
    expect(listed.filter((r) => !r[2]?.startsWith('axon.yaml'))).toEqual(EXAMPLE_ROWS);
    expect(listed.findIndex((r) => r[1] === 'herald')).toBeLessThan(
      listed.findIndex((r) => r[1] === 'planner'),
    );
  });

  it('--config names another file', async () => {
    writeFileSync(
      join(dir, 'other.yaml'),
      `code:\n  tools:\n    - { module: ${code}, export: shout }\n`,
    );
    const { code: exit, stdout } = await axonIn(dir, ['list', '--config', 'other.yaml']);
    expect(exit).toBe(0);
    expect(rows(stdout)).toContainEqual([
      'tool',
      'shout',
      'other.yaml line 3',
      'Says a text in capitals',
    ]);
  });

  it('a workflow of the file named code-review replaces the example, as serve has it', async () => {
    writeFileSync(
      join(dir, 'axon.yaml'),
      'workflows:\n  code-review:\n    roles: { a: { engine: scripted, prompt: A } }\n    moderator: { order: [a] }\n',
    );
    const listed = rows((await axonIn(dir, ['list'])).stdout);
    expect(listed.filter((r) => r[0] === 'workflow')).toEqual([
      ['workflow', 'code-review', 'axon.yaml line 3', ''],
    ]);
  });

  it.each([
    [
      `code:\n  agents:\n    - { module: ${code}, export: nothing }\n`,
      /^axon list: axon\.yaml line 3: code\.agents\.0: .* has no agent "nothing"/,
    ],
    [
      'code:\n  agents:\n    - { module: ./dist/missing.js, export: a }\n',
      /^axon list: axon\.yaml line 3: code\.agents\.0: cannot load .*dist\/missing\.js/,
    ],
    ['server:\n  port: seven\n', /^axon list: axon\.yaml line 2: server\.port: /],
  ])('refuses a config serve would refuse, naming its line: exit 2 (%#)', async (yaml, message) => {
    writeFileSync(join(dir, 'axon.yaml'), yaml);
    const { code: exit, stdout, stderr } = await axonIn(dir, ['list']);
    expect(exit).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(message);
  });

  it('refuses a --config that does not exist', async () => {
    expect(await axonIn(dir, ['list', '--config', 'nope.yaml'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'axon list: nope.yaml: no such file\n',
    });
  });
});
