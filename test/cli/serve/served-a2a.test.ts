/**
 * axon.yaml's `a2a:` (issue 48, docs/a2a.md): every key read into the server's A2A options,
 * none given is the defaults, each refusal named with its line — and a default agent that is
 * no skill of the runtime's refused naming its line once the agents are known.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defineAgent } from '../../../src/actors/define-agent.js';
import { ServeConfigError } from '../../../src/cli/serve/config-problems.js';
import { checkA2aDefault } from '../../../src/cli/serve/served-a2a.js';
import { loadServeConfig, type ServeConfig } from '../../../src/cli/serve/serve-config.js';
import { createRuntime } from '../../../src/runtime/runtime.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'axon-served-a2a-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function load(yaml: string): ServeConfig {
  writeFileSync(join(dir, 'axon.yaml'), yaml);
  return loadServeConfig({ cwd: dir, env: {} });
}

function refused(yaml: string): string {
  try {
    load(yaml);
  } catch (err) {
    expect(err).toBeInstanceOf(ServeConfigError);
    return (err as Error).message;
  }
  throw new Error('expected the configuration to be refused');
}

describe('axon.yaml a2a:', () => {
  it('reads every key', () => {
    const config = load(
      'a2a:\n  enabled: false\n  default_agent: planner\n  url: https://agents.example.com/a2a\n',
    );
    expect(config.a2a).toEqual({
      enabled: false,
      defaultAgent: 'planner',
      url: 'https://agents.example.com/a2a',
    });
  });

  it('none given: the defaults (served, no default agent, the URL from the request)', () => {
    expect(load('server:\n  port: 7070\n').a2a).toEqual({});
    expect(load('a2a: {}\n').a2a).toEqual({});
  });

  it('an unknown key, a value of the wrong kind and a URL that is not absolute are named with their line', () => {
    expect(refused('a2a:\n  default: planner\n')).toBe(
      'axon.yaml line 2: a2a.default: unknown key "default"',
    );
    expect(refused('a2a:\n  enabled: sometimes\n')).toMatch(
      /^axon\.yaml line 2: a2a\.enabled: .*boolean/,
    );
    expect(refused('a2a:\n  default_agent: ""\n')).toMatch(
      /^axon\.yaml line 2: a2a\.default_agent: /,
    );
    expect(refused('a2a:\n  url: /a2a\n')).toBe(
      'axon.yaml line 2: a2a.url: must be an absolute http(s) URL',
    );
  });

  it('a default agent that is not one of the skills is refused naming its line', async () => {
    const config = load('server:\n  port: 7070\na2a:\n  default_agent: nobody\n');
    const runtime = createRuntime({
      agents: [defineAgent({ name: 'echo', handler: (input) => input.message })],
    });
    try {
      const check = (): void => {
        checkA2aDefault(runtime, config.a2a, 'axon.yaml', (key) => config.lineOf(key));
      };
      expect(check).toThrow(ServeConfigError);
      expect(check).toThrow(
        'axon.yaml line 4: a2a.default_agent: "nobody" is not an agent served as an A2A skill (echo)',
      );
      checkA2aDefault(runtime, { defaultAgent: 'echo' }, 'axon.yaml', (key) => config.lineOf(key));
    } finally {
      await runtime.close();
    }
  });
});
