/**
 * docker-compose.yml (README "Run a fleet"): every axon service runs a command the CLI has,
 * with flags it accepts, on the fleet's Redis service — checked without Docker.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { OPTIONS } from '../../src/cli/cli.js';
import { keysFromEnv } from '../../src/server/auth.js';

interface Service {
  readonly build?: string;
  readonly image?: string;
  readonly command?: readonly string[];
  readonly environment?: Readonly<Record<string, string>>;
}

const compose = parse(
  readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8'),
) as {
  services: Record<string, Service>;
};

describe('docker-compose.yml', () => {
  const axon = Object.entries(compose.services).filter(([, s]) => s.build === '.');

  it('runs Redis, one API and two workers of different pools', () => {
    expect(compose.services['redis']?.image).toMatch(/^redis:/);
    const commands = axon.map(([, s]) => s.command?.[0]);
    expect(commands.sort()).toEqual(['serve', 'worker', 'worker']);
    const pools = axon.flatMap(([, s]) => {
      const args = s.command ?? [];
      const i = args.indexOf('--pool');
      return i === -1 ? [] : [args[i + 1]];
    });
    expect(new Set(pools).size).toBe(2);
  });

  it('gives each axon service flags the CLI accepts, and the Redis service as --redis', () => {
    for (const [, service] of axon) {
      const { values, positionals } = parseArgs({
        args: [...(service.command ?? [])],
        options: OPTIONS,
        allowPositionals: true,
        strict: true,
      });
      expect(positionals).toHaveLength(1);
      expect(values.redis).toBe('redis://redis:6379');
    }
  });

  it("gives the API, which listens on every interface, the keys of the user's environment, and refuses to start without them", () => {
    const api = axon.find(([, s]) => s.command?.[0] === 'serve')?.[1];
    expect(api?.command).toContain('0.0.0.0');
    const value = api?.environment?.['AXON_API_KEYS'] ?? '';
    // Compose's `${VAR:?message}`: the variable's value, or no start at all with the message.
    const required = /^\$\{AXON_API_KEYS:\?(.+)\}$/.exec(value);
    expect(required?.[1]).toMatch(/set AXON_API_KEYS/);
    const interpolate = (env: Record<string, string>): string[] =>
      value
        .replace(/^\$\{(\w+):\?.*\}$/, (_m, name: string) => {
          const v = env[name];
          if (v === undefined || v === '') throw new Error(required?.[1]);
          return v;
        })
        .split(',');
    expect(() => interpolate({})).toThrow(/set AXON_API_KEYS/);
    const given = 'a-key-of-sixteen-chars-or-more:dev';
    expect(keysFromEnv(interpolate({ AXON_API_KEYS: given }).join(','))).toEqual([
      { key: 'a-key-of-sixteen-chars-or-more', user_id: 'dev', permissions: ['read', 'write'] },
    ]);
    // No key ships in the file.
    const text = readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8');
    expect(text).not.toMatch(/AXON_API_KEYS: '[^$]/);
  });
});
