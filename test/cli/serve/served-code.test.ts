/**
 * `axon.yaml`'s `code:` (issue 48): the project's agents, tools and workflows, each a module's
 * export, loaded at start and added to what serve registers; every problem names its line.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { ServeConfigError } from '../../../src/cli/serve/config-problems.js';
import { loadServeConfig } from '../../../src/cli/serve/serve-config.js';
import { loadCode, withCode, type CodeEntry } from '../../../src/cli/serve/served-code.js';
import { createRuntime } from '../../../src/runtime/runtime.js';

const fixture = fileURLToPath(new URL('../../fixtures/code-definitions.ts', import.meta.url));
const entry = (kind: CodeEntry['kind'], exported: string, line = 3, module = fixture) => ({
  kind,
  module,
  export: exported,
  key: `code.${kind}.0`,
  line,
  source: 'axon.yaml',
});

describe('code: loaded', () => {
  it('loads each kind from its module, and knows the entry of each', async () => {
    const herald = entry('agents', 'herald');
    const loaded = await loadCode([
      herald,
      entry('agents', 'echo'),
      entry('tools', 'shout'),
      entry('workflows', 'relay'),
    ]);
    expect(loaded.agents.map((a) => a.name)).toEqual(['herald', 'echo']);
    expect(loaded.tools.map((t) => t.name)).toEqual(['shout']);
    expect(loaded.workflows.map((w) => w.name)).toEqual(['relay']);
    expect(loaded.entryOf.get(loaded.agents[0] as object)).toBe(herald);
  });

  it.each([
    [
      entry('agents', 'herald', 4, '/nope/agents.js'),
      /line 4: code\.agents\.0: cannot load \/nope\/agents\.js/,
    ],
    [
      entry('agents', 'missing', 5),
      /line 5: code\.agents\.0: .* has no agent "missing" \(an export made with defineAgent\)/,
    ],
    [
      entry('tools', 'echo', 6),
      /line 6: code\.tools\.0: .* has no tool "echo" \(an export made with defineTool\)/,
    ],
    [
      entry('workflows', 'shout', 7),
      /line 7: code\.workflows\.0: .* has no workflow "shout" \(an export made with defineWorkflow\)/,
    ],
    [entry('agents', 'notADefinition', 8), /line 8: .* has no agent "notADefinition"/],
    [
      entry('agents', 'keeper', 9),
      /line 9: .*"keeper" is a durable agent: name it under durable_agents:/,
    ],
    [
      entry('agents', 'planner', 10),
      /line 10: .*examples\/trip-planner registers an agent "planner" already: rename it/,
    ],
  ])('refuses %o, naming its line', async (bad, message) => {
    const refused = await loadCode([bad]).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ServeConfigError);
    expect((refused as Error).message).toMatch(message);
  });

  it('refuses two of one name and kind, naming the second', async () => {
    await expect(
      loadCode([entry('tools', 'shout', 3), entry('tools', 'shout', 4)]),
    ).rejects.toThrow(/line 4: code\.tools\.0: two tools are named "shout"/);
  });

  it('withCode adds them to the configuration, and a runtime given it runs the agent, its tool and its delegate', async () => {
    const config = await withCode({
      agents: [],
      tools: [],
      workflows: [],
      code: [entry('agents', 'herald'), entry('agents', 'echo'), entry('tools', 'shout')],
    });
    const runtime = createRuntime({ agents: config.agents, tools: config.tools });
    try {
      const result = await runtime.invoke('herald', 'hi there');
      expect(result.status).toBe('success');
      expect(result.output).toEqual({ loud: 'HI THERE', echoed: 'echo: HI THERE' });
    } finally {
      await runtime.close();
    }
  });
});

describe('code: read from the file', () => {
  let dir: string;
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const write = (yaml: string): void => {
    dir = mkdtempSync(join(tmpdir(), 'axon-code-config-'));
    writeFileSync(join(dir, 'axon.yaml'), yaml);
  };

  it('makes each module path absolute from the file, and knows its key and line', () => {
    write(
      'server:\n  port: 7071\ncode:\n  agents:\n    - { module: ./dist/a.js, export: a }\n  workflows:\n    - module: /abs/w.js\n      export: w\n',
    );
    expect(loadServeConfig({ cwd: dir, env: {} }).code).toEqual([
      {
        kind: 'agents',
        module: join(dir, 'dist/a.js'),
        export: 'a',
        key: 'code.agents.0',
        line: 5,
        source: 'axon.yaml',
      },
      {
        kind: 'workflows',
        module: '/abs/w.js',
        export: 'w',
        key: 'code.workflows.0',
        line: 7,
        source: 'axon.yaml',
      },
    ]);
  });

  it('has none without the key', () => {
    write('server:\n  port: 7071\n');
    expect(loadServeConfig({ cwd: dir, env: {} }).code).toEqual([]);
  });

  it.each([
    [
      'code:\n  agent:\n    - { module: ./a.js, export: a }\n',
      /line 2: code\.agent: unknown key "agent"/,
    ],
    ['code:\n  tools:\n    - { module: ./a.js }\n', /line 3: code\.tools\[0\]\.export:/],
    [
      'code:\n  tools:\n    - { module: ./a.js, export: "not a name" }\n',
      /code\.tools\[0\]\.export: must be the name of an export/,
    ],
    ['code:\n  tools:\n    - { module: ./a.js, export: a, name: b }\n', /unknown key "name"/],
  ])('refuses %j, naming its line and key', (yaml, message) => {
    write(yaml);
    expect(() => loadServeConfig({ cwd: dir, env: {} })).toThrow(message);
  });
});
