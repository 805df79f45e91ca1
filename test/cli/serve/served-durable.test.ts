/**
 * `axon.yaml`'s `durable_agents:` (issue 46): the operator's durable agents, loaded from their
 * modules at start; every problem names the entry's line.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ServeConfigError } from '../../../src/cli/serve/config-problems.js';
import { loadDurableAgents } from '../../../src/cli/serve/served-durable.js';
import { loadServeConfig } from '../../../src/cli/serve/serve-config.js';

const fixture = fileURLToPath(new URL('../../fixtures/durable-slow.ts', import.meta.url));
const entry = (module: string, exported: string, line = 3) => ({
  module,
  export: exported,
  line,
  source: 'axon.yaml',
});

describe('durable_agents: in axon.yaml', () => {
  it("loads each entry's durable agent from its module", async () => {
    const [slow] = await loadDurableAgents([entry(fixture, 'slow')]);
    expect(slow).toMatchObject({ kind: 'durable_agent', name: 'slow' });
  });

  it.each([
    [
      entry('/nope/agents.mjs', 'slow', 4),
      /axon\.yaml line 4: durable_agents: cannot load \/nope\/agents\.mjs/,
    ],
    [entry(fixture, 'missing', 5), /axon\.yaml line 5: .*has no durable agent "missing"/],
    [entry(fixture, 'notDurable', 6), /axon\.yaml line 6: .*has no durable agent "notDurable"/],
  ])('refuses %o, naming its line', async (bad, message) => {
    const refused = await loadDurableAgents([bad]).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ServeConfigError);
    expect((refused as Error).message).toMatch(message);
  });

  it('refuses two durable agents of one name', async () => {
    await expect(
      loadDurableAgents([entry(fixture, 'slow', 3), entry(fixture, 'slow', 4)]),
    ).rejects.toThrow(/line 4: durable_agents: two durable agents are named "slow"/);
  });
});

describe('durable_agents: read from the file', () => {
  it('makes each module path absolute from the file, and knows its line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'axon-durable-config-'));
    writeFileSync(
      join(dir, 'axon.yaml'),
      'server:\n  port: 7071\ndurable_agents:\n  - module: ./agents.mjs\n    export: support\n',
    );
    const config = loadServeConfig({ cwd: dir, env: {} });
    expect(config.durableAgents).toEqual([
      { module: join(dir, 'agents.mjs'), export: 'support', line: 4, source: 'axon.yaml' },
    ]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses an entry with an unknown key, naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'axon-durable-config-'));
    writeFileSync(
      join(dir, 'axon.yaml'),
      'durable_agents:\n  - { module: ./a.mjs, export: x, name: y }\n',
    );
    expect(() => loadServeConfig({ cwd: dir, env: {} })).toThrow(/line 2.*durable_agents/);
    rmSync(dir, { recursive: true, force: true });
  });
});
