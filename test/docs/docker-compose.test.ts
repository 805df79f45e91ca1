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

  it('gives the API, which listens on every interface, a valid API key', () => {
    const api = axon.find(([, s]) => s.command?.[0] === 'serve')?.[1];
    expect(api?.command).toContain('0.0.0.0');
    expect(keysFromEnv(api?.environment?.['AXON_API_KEYS'])).toHaveLength(1);
  });
});
