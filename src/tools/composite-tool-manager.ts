/**
 * @module Several tool managers as one: the first registration of a name wins, a later tool
 * of the same name is reported and hidden, and calls go to the manager that owns the name.
 */
import { systemClock, type Clock } from '../context/clock.js';
import type { ExecContext } from '../context/exec-context.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { toAxonError } from '../errors/to-error-payload.js';
import { callTimer, type ToolCallResult, type ToolInfo, type ToolManager } from './tool-manager.js';

/** A tool name offered by more than one manager: who kept it, who was hidden. */
export interface DuplicateTool {
  readonly tool: string;
  readonly kept: string;
  readonly hidden: string;
}

/** Options of {@link createCompositeToolManager}. */
export interface CompositeToolManagerOptions {
  readonly name?: string;
  /** Told once per hidden duplicate, when it is first seen. */
  readonly onDuplicate?: (duplicate: DuplicateTool) => void;
  readonly clock?: Clock;
}

/**
 * A {@link ToolManager} over `managers`, in order of registration.
 *
 * @example
 * const tools = createCompositeToolManager([registry, mcp], {
 *   onDuplicate: (d) => logger.warn(d, 'duplicate tool hidden'),
 * });
 */
export function createCompositeToolManager(
  managers: readonly ToolManager[],
  options: CompositeToolManagerOptions = {},
): CompositeToolManager {
  return new CompositeToolManager(managers, options);
}

/** See {@link createCompositeToolManager}. */
export class CompositeToolManager implements ToolManager {
  readonly name: string;
  readonly #managers: ToolManager[];
  readonly #options: CompositeToolManagerOptions;
  readonly #clock: Clock;
  readonly #reported = new Set<string>();
  readonly #duplicates: DuplicateTool[] = [];

  constructor(managers: readonly ToolManager[], options: CompositeToolManagerOptions = {}) {
    this.#managers = [...managers];
    this.#options = options;
    this.name = options.name ?? 'composite';
    this.#clock = options.clock ?? systemClock;
  }

  /** Adds a manager after the others (its tools lose to theirs on a name clash). */
  add(manager: ToolManager): void {
    this.#managers.push(manager);
  }

  /** Every duplicate seen so far. */
  get duplicates(): readonly DuplicateTool[] {
    return this.#duplicates;
  }

  async discover(ctx: ExecContext): Promise<ToolInfo[]> {
    const lists = await Promise.all(this.#managers.map((m) => m.discover(ctx)));
    const kept = new Map<string, { info: ToolInfo; by: string }>();
    lists.forEach((tools, i) => {
      const by = this.#managers[i]?.name ?? '?';
      for (const info of tools) {
        const first = kept.get(info.name);
        if (first) this.#duplicate({ tool: info.name, kept: first.by, hidden: by });
        else kept.set(info.name, { info, by });
      }
    });
    // A tool hidden from this context by an earlier manager's permissions is not offered
    // from a later one either: the owner decides.
    const owned: ToolInfo[] = [];
    for (const { info, by } of kept.values()) {
      if ((await this.#owner(info.name))?.name === by) owned.push(info);
    }
    return owned;
  }

  async describe(name: string): Promise<ToolInfo | null> {
    const owner = await this.#owner(name);
    return owner ? owner.describe(name) : null;
  }

  async call(name: string, args: unknown, ctx: ExecContext): Promise<ToolCallResult> {
    const ended = callTimer(this.#clock);
    let owner: ToolManager | null;
    try {
      owner = await this.#owner(name);
    } catch (err) {
      return ended('error', null, toAxonError(err));
    }
    if (!owner) return ended('not_found', null, new NotFoundError('tool', name));
    return owner.call(name, args, ctx);
  }

  /** The manager that owns `name`: the first that has it, whoever asks. */
  async #owner(name: string): Promise<ToolManager | null> {
    for (const manager of this.#managers) {
      if ((await manager.describe(name)) !== null) return manager;
    }
    return null;
  }

  #duplicate(duplicate: DuplicateTool): void {
    const key = `${duplicate.tool}\u0000${duplicate.hidden}`;
    if (this.#reported.has(key)) return;
    this.#reported.add(key);
    this.#duplicates.push(duplicate);
    this.#options.onDuplicate?.(duplicate);
  }

  async close(): Promise<void> {
    await Promise.all(this.#managers.map((m) => m.close()));
  }
}
