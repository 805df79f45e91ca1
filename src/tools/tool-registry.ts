/**
 * @module Registered function tools: lookup, the two permission layers, the discovery menu,
 * and direct calls as a {@link ToolManager}.
 */
import type { Clock } from '../context/clock.js';
import { systemClock } from '../context/clock.js';
import type { ExecContext } from '../context/exec-context.js';
import { ConflictError } from '../errors/conflict-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { PermissionDeniedError } from '../errors/permission-denied-error.js';
import { TimeoutError } from '../errors/timeout-error.js';
import { toAxonError } from '../errors/to-error-payload.js';
import type { ToolDefinition } from './define-tool.js';
import {
  callTimer,
  toolRefusal,
  type ToolCallResult,
  type ToolInfo,
  type ToolManager,
} from './tool-manager.js';

export type { ToolInfo } from './tool-manager.js';

/** Why a context may not call a tool, or `null` if it may. */
export type ToolRefusal = 'context' | 'required_roles' | null;

function infoOf(t: ToolDefinition): ToolInfo {
  return {
    name: t.name,
    description: t.description,
    parameters: t.parameters,
    requiredPermissions: t.requiredRoles,
  };
}

/** The error of a refused call. */
export function refusalError(
  name: string,
  refusal: Exclude<ToolRefusal, null>,
  required: readonly string[],
): PermissionDeniedError {
  return refusal === 'context'
    ? new PermissionDeniedError('tool', name)
    : new PermissionDeniedError('role', required.join(','), { details: { tool: name } });
}

/**
 * The function tools of a runtime, by name. As a {@link ToolManager} it calls them directly
 * (the runtime's `callTool` runs them as `tool_call` steps instead).
 */
export class ToolRegistry implements ToolManager {
  readonly name = 'functions';
  readonly #tools = new Map<string, ToolDefinition>();
  readonly #clock: Clock;

  constructor(clock: Clock = systemClock) {
    this.#clock = clock;
  }

  /** Registers a tool; a second tool of the same name is refused with `ConflictError`. */
  register(tool: ToolDefinition): void {
    if (this.#tools.has(tool.name))
      throw new ConflictError(`a tool named "${tool.name}" is already registered`);
    this.#tools.set(tool.name, tool);
  }

  get(name: string): ToolDefinition | undefined {
    return this.#tools.get(name);
  }

  /**
   * Checks both permission layers: the context's own (`allowedTools`) and the tool's
   * required roles.
   */
  refusal(tool: ToolDefinition, ctx: ExecContext): ToolRefusal {
    return toolRefusal(infoOf(tool), ctx);
  }

  /** The tools `ctx` may call, with their JSON Schemas, at once. */
  list(ctx: ExecContext): ToolInfo[] {
    return [...this.#tools.values()].filter((t) => this.refusal(t, ctx) === null).map(infoOf);
  }

  discover(ctx: ExecContext): Promise<ToolInfo[]> {
    return Promise.resolve(this.list(ctx));
  }

  describe(name: string): Promise<ToolInfo | null> {
    const tool = this.#tools.get(name);
    return Promise.resolve(tool ? infoOf(tool) : null);
  }

  async call(name: string, args: unknown, ctx: ExecContext): Promise<ToolCallResult> {
    const ended = callTimer(this.#clock);
    const tool = this.#tools.get(name);
    if (!tool) return ended('not_found', null, new NotFoundError('tool', name));
    const refusal = this.refusal(tool, ctx);
    if (refusal) {
      return ended('permission_denied', null, refusalError(name, refusal, tool.requiredRoles));
    }
    // An object, so the `finally` sees the handle the promise executor set.
    const timer: { handle: ReturnType<Clock['setTimeout']> | null } = { handle: null };
    try {
      const parsed = tool.validate(args);
      const timeout = new Promise<never>((_resolve, reject) => {
        timer.handle = this.#clock.setTimeout(() => {
          reject(new TimeoutError(`tool ${name}`, tool.timeoutMs));
        }, tool.timeoutMs);
      });
      const output = await Promise.race([Promise.resolve(tool.handler(parsed, ctx)), timeout]);
      return ended('success', output, null);
    } catch (err) {
      return ended(err instanceof TimeoutError ? 'timeout' : 'error', null, toAxonError(err));
    } finally {
      if (timer.handle !== null) this.#clock.clearTimeout(timer.handle);
    }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
