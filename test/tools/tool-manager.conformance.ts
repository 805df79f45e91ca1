/**
 * The ToolManager conformance suite. Each implementation provides the same three tools —
 * `double` ({ n: integer } → 2n), `slow` ({ ms: number }, waits, past the manager's 2 s
 * timeout when asked), `fails` (reports an error) — and says how to read a number out of
 * its outputs.
 *
 * @example
 * describeToolManager('functions', () => ({ manager: registryWithTools(), number: (o) => o as number }));
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createContext } from '../../src/context/create-context.js';
import { SchemaViolationError } from '../../src/errors/schema-violation-error.js';
import type { ToolManager } from '../../src/tools/tool-manager.js';

/** A manager under test, and how to read `double`'s output as a number. */
export interface ToolManagerFixture {
  readonly manager: ToolManager;
  readonly number: (output: unknown) => number;
}

/** Registers the conformance suite for the fixture `create` makes. */
export function describeToolManager(
  name: string,
  create: () => Promise<ToolManagerFixture> | ToolManagerFixture,
): void {
  describe(`ToolManager conformance: ${name}`, () => {
    let fixture: ToolManagerFixture;
    beforeEach(async () => {
      fixture = await create();
    });
    afterEach(async () => {
      await fixture.manager.close();
    });

    it('discovers its tools with JSON Schemas (NERVE-4011)', async () => {
      const tools = await fixture.manager.discover(createContext());
      const names = tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['double', 'slow', 'fails']));
      const double = tools.find((t) => t.name === 'double');
      expect(double?.parameters).toMatchObject({ type: 'object', properties: { n: {} } });
      expect(await fixture.manager.describe('double')).toEqual(double);
      expect(await fixture.manager.describe('nope')).toBeNull();
    });

    it('calls a tool with checked arguments', async () => {
      const r = await fixture.manager.call('double', { n: 21 }, createContext());
      expect(r.status).toBe('success');
      expect(r.error).toBeNull();
      expect(fixture.number(r.output)).toBe(42);
      expect(r.durationMs).toBeGreaterThanOrEqual(0);
    });

    it('refuses arguments that break the schema with SchemaViolationError naming the path', async () => {
      const r = await fixture.manager.call('double', { n: 'x' }, createContext());
      expect(r.status).toBe('error');
      expect(r.output).toBeNull();
      expect(r.error).toBeInstanceOf(SchemaViolationError);
      expect((r.error as SchemaViolationError).issues[0]?.path).toEqual(['n']);
    });

    it('answers not_found for an unknown tool', async () => {
      const r = await fixture.manager.call('nope', {}, createContext());
      expect(r.status).toBe('not_found');
      expect(r.error?.code).toBe('NOT_FOUND');
    });

    it('answers permission_denied when the context does not allow the tool, and hides it', async () => {
      const ctx = createContext({ permissions: { allowedTools: ['slow'] } });
      expect((await fixture.manager.discover(ctx)).map((t) => t.name)).toEqual(['slow']);
      const r = await fixture.manager.call('double', { n: 1 }, ctx);
      expect(r.status).toBe('permission_denied');
      expect(r.error?.code).toBe('POLICY_DENIED');
    });

    it('answers timeout for a call past its time', async () => {
      const r = await fixture.manager.call('slow', { ms: 5_000 }, createContext());
      expect(r.status).toBe('timeout');
      expect(r.error?.code).toBe('TIMEOUT');
    });

    it('answers error for a tool that fails', async () => {
      const r = await fixture.manager.call('fails', {}, createContext());
      expect(r.status).toBe('error');
      expect(r.error?.message).toContain('the disk is on fire');
    });
  });
}
