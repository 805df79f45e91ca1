/**
 * @module Test helper: what an integration suite over several stores needs, made once and
 * removed after it — a scratch folder for SQLite files, a Redis key prefix of its own, and the
 * local OpenAI-compatible server.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import {
  startOpenAICompatibleServer,
  type OpenAICompatibleServer,
} from '../../src/engines/openai-compatible-server.js';
import { clearRedisPrefix } from './redis.js';

export interface TestResources {
  /** A new SQLite file path in the suite's folder. */
  readonly file: () => string;
  /** A new Redis key prefix under the suite's own. */
  readonly prefix: () => string;
  /** The suite's OpenAI-compatible server (started before its tests). */
  readonly server: OpenAICompatibleServer;
}

/** Registers the suite's setup and teardown; call at the top level of a test file. */
export function useTestResources(name: string): TestResources {
  const dir = mkdtempSync(join(tmpdir(), `axon-${name}-`));
  const redisBase = `axon-test:${randomUUID()}:`;
  let server: OpenAICompatibleServer | null = null;
  beforeAll(async () => {
    server = await startOpenAICompatibleServer();
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
    await clearRedisPrefix(redisBase);
  });
  return {
    file: () => join(dir, `${randomUUID()}.db`),
    prefix: () => `${redisBase}${randomUUID()}:`,
    get server(): OpenAICompatibleServer {
      if (!server) throw new Error('the test server starts in beforeAll');
      return server;
    },
  };
}
