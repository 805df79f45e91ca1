/**
 * @module A runtime's tools from every source: its function tools first, then the tool
 * managers it was given (MCP servers, …), as one composite where the first registration of
 * a name wins.
 */
import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { Clock } from '../context/clock.js';
import { NotFoundError } from '../errors/not-found-error.js';
import type { Logger } from '../observability/logger.js';
import {
  createCompositeToolManager,
  type CompositeToolManager,
} from '../tools/composite-tool-manager.js';
import { checkJsonSchema, compileJsonSchema } from '../tools/json-schema.js';
import type { ToolInfo, ToolManager } from '../tools/tool-manager.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import type { ToolCatalog } from '../steps/llm-steps.js';

/** The function tools and the other managers of a runtime, as one catalog. */
export class RuntimeTools implements ToolCatalog {
  readonly registry: ToolRegistry;
  readonly all: CompositeToolManager;
  readonly #validators = new Map<string, ValidateFunction>();

  constructor(
    registry: ToolRegistry,
    managers: readonly ToolManager[],
    logger: Logger,
    clock: Clock,
  ) {
    this.registry = registry;
    this.all = createCompositeToolManager([registry, ...managers], {
      name: 'runtime',
      clock,
      onDuplicate: (d) => {
        logger.warn(d, `tool "${d.tool}" of ${d.hidden} is hidden by the one of ${d.kept}`);
      },
    });
  }

  describe(name: string): Promise<ToolInfo | null> {
    return this.all.describe(name);
  }

  async validate(name: string, args: unknown): Promise<unknown> {
    const tool = this.registry.get(name);
    if (tool) return tool.validate(args);
    let validate = this.#validators.get(name);
    if (!validate) {
      const info = await this.all.describe(name);
      if (!info) throw new NotFoundError('tool', name);
      validate = compileJsonSchema(`tool ${name}`, info.parameters, { anyDialect: true });
      this.#validators.set(name, validate);
    }
    return checkJsonSchema(`tool ${name}`, validate, args);
  }
}
