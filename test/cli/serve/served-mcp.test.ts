/**
 * axon.yaml's `mcp:` (issue 48, docs/mcp.md): every key read into the server's MCP options,
 * none given is the defaults, and each refusal named with its line.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ServeConfigError } from '../../../src/cli/serve/config-problems.js';
import { loadServeConfig, type ServeConfig } from '../../../src/cli/serve/serve-config.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'axon-served-mcp-'));
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

describe('axon.yaml mcp:', () => {
  it('reads every key', () => {
    const config = load(
      [
        'mcp:',
        '  enabled: false',
        '  session_idle_ms: 60000',
        '  max_sessions: 8',
        '  budgets: { max_tokens_out: 2000, max_cost_usd: 0.5 }',
        '',
      ].join('\n'),
    );
    expect(config.mcp).toEqual({
      enabled: false,
      sessionIdleMs: 60_000,
      maxSessions: 8,
      budgets: { max_tokens_out: 2000, max_cost_usd: 0.5 },
    });
  });

  it('none given: the defaults (served, the server deciding the rest)', () => {
    expect(load('server:\n  port: 7070\n').mcp).toEqual({});
    expect(load('mcp: {}\n').mcp).toEqual({});
  });

  it('an unknown key, a value of the wrong kind and a budget out of range are named with their line', () => {
    expect(refused('mcp:\n  enable: true\n')).toBe(
      'axon.yaml line 2: mcp.enable: unknown key "enable"',
    );
    expect(refused('mcp:\n  enabled: yes please\n')).toMatch(
      /^axon\.yaml line 2: mcp\.enabled: .*boolean/,
    );
    expect(refused('mcp:\n  max_sessions: 0\n')).toMatch(/^axon\.yaml line 2: mcp\.max_sessions: /);
    expect(refused('mcp:\n  session_idle_ms: 1.5\n')).toMatch(
      /^axon\.yaml line 2: mcp\.session_idle_ms: /,
    );
    expect(refused('mcp:\n  budgets:\n    max_tokens_out: -1\n')).toMatch(
      /^axon\.yaml line 3: mcp\.budgets\.max_tokens_out: /,
    );
    expect(refused('mcp:\n  budgets:\n    tokens: 5\n')).toBe(
      'axon.yaml line 3: mcp.budgets.tokens: unknown key "tokens"',
    );
  });
});
