/**
 * @module MCP tools over stdio, with the official MCP TypeScript SDK: a pool of server
 * processes, a timeout per call, arguments checked against the tool's JSON Schema before
 * the server sees them, results truncated past a size, and a server that died replaced on
 * the next call.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { systemClock, type Clock } from '../context/clock.js';
import type { ExecContext } from '../context/exec-context.js';
import type { AxonError } from '../errors/axon-error.js';
import { CancelledError } from '../errors/cancelled-error.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { TimeoutError } from '../errors/timeout-error.js';
import { ToolError } from '../errors/tool-error.js';
import { toAxonError } from '../errors/to-error-payload.js';
import { checkJsonSchema, compileJsonSchema, type JsonSchema } from './json-schema.js';
import { refusalError } from './tool-registry.js';
import {
  callTimer,
  toolRefusal,
  type ToolCallResult,
  type ToolInfo,
  type ToolManager,
} from './tool-manager.js';

/** Options of {@link createMcpToolManager}. */
export interface McpToolManagerOptions {
  /** The manager's name in reports; default the command. */
  readonly name?: string;
  /** The server's executable (`node`, `npx`, a path). */
  readonly command: string;
  readonly args?: readonly string[];
  /** The server's environment; default the SDK's safe subset of this process's. */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** Server processes kept at most (calls beyond wait for one); default 1. */
  readonly poolSize?: number;
  /** Per-call timeout; default 30 000 ms. */
  readonly timeoutMs?: number;
  /** How long a server may take to start and answer `initialize`; default 30 000 ms. */
  readonly startTimeoutMs?: number;
  /** Results past this many bytes (as JSON) are truncated; default 512 KB. */
  readonly maxResultBytes?: number;
  /** Roles a context must have to call any of this server's tools. */
  readonly requiredRoles?: readonly string[];
  readonly clock?: Clock;
}

/** An MCP tool call's output. */
export interface McpToolOutput {
  /** The result's content blocks (text, images, resources), as the server sent them. */
  readonly content: readonly Record<string, unknown>[];
  /** The result's `structuredContent`, when the tool has an output schema. */
  readonly structured: unknown;
  /** True when the result was cut to `maxResultBytes`: only its text is kept, shortened. */
  readonly truncated: boolean;
}

const DEFAULTS = {
  poolSize: 1,
  timeoutMs: 30_000,
  startTimeoutMs: 30_000,
  maxResultBytes: 512 * 1024,
} as const;

/** Keeps the end of a server's stderr, for the message when it dies. */
const STDERR_TAIL = 2048;

/** One server process and its client. */
class Connection {
  readonly client = new Client({ name: 'axon', version: '0.1.0' });
  readonly transport: StdioClientTransport;
  busy = false;
  dead = false;
  stderr = '';

  constructor(options: McpToolManagerOptions) {
    this.transport = new StdioClientTransport({
      command: options.command,
      args: [...(options.args ?? [])],
      ...(options.env ? { env: { ...options.env } } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
      stderr: 'pipe',
    });
    this.transport.stderr?.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-STDERR_TAIL);
    });
  }
}

function positiveInt(option: string, value: number): number {
  if (!(Number.isInteger(value) && value > 0)) {
    throw new RangeError(
      `createMcpToolManager: ${option} must be a whole number > 0, got ${value}`,
    );
  }
  return value;
}

/** `text` cut to at most `bytes` bytes of UTF-8, never inside a character. */
function cutUtf8(text: string, bytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= bytes) return text;
  let end = bytes;
  // Step back over continuation bytes (10xxxxxx) to a character boundary.
  while (end > 0 && ((buf[end] ?? 0) & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

/** The output of a result, truncated to `max` bytes of JSON if it is bigger. */
export function truncateResult(
  content: readonly Record<string, unknown>[],
  structured: unknown,
  max: number,
): McpToolOutput {
  const whole: McpToolOutput = { content, structured: structured ?? null, truncated: false };
  if (Buffer.byteLength(JSON.stringify(whole), 'utf8') <= max) return whole;
  const text = content
    .map((c) => (c['type'] === 'text' && typeof c['text'] === 'string' ? c['text'] : ''))
    .join('\n');
  // Room for the envelope and for JSON escaping of the text (up to 6 bytes a character for
  // control characters; plain text costs about 1).
  const envelope = Buffer.byteLength(
    JSON.stringify({ content: [{ type: 'text', text: '' }], structured: null, truncated: true }),
  );
  let budget = Math.max(0, max - envelope);
  let cut = cutUtf8(text, budget);
  while (budget > 0 && Buffer.byteLength(JSON.stringify(cut), 'utf8') - 2 > max - envelope) {
    budget = Math.floor(budget * 0.9);
    cut = cutUtf8(text, budget);
  }
  return { content: [{ type: 'text', text: cut }], structured: null, truncated: true };
}

/**
 * A {@link ToolManager} over an MCP server run as a child process (stdio). Servers start on
 * first use, up to `poolSize` of them for concurrent calls; one that exits is replaced by
 * the next call. Arguments are validated against the tool's `inputSchema` (ajv, draft
 * 2020-12) before the call: a violation is `error` with `SchemaViolationError` and the
 * server never sees it.
 *
 * @example
 * const everything = createMcpToolManager({
 *   command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'],
 * });
 * const runtime = createRuntime({ toolManagers: [everything] });
 * await runtime.callTool('get-sum', { a: 2, b: 40 }, ctx);
 */
export function createMcpToolManager(options: McpToolManagerOptions): McpToolManager {
  return new McpToolManager(options);
}

/** See {@link createMcpToolManager}. */
export class McpToolManager implements ToolManager {
  readonly name: string;
  readonly #options: McpToolManagerOptions;
  readonly #poolSize: number;
  readonly #timeoutMs: number;
  readonly #startTimeoutMs: number;
  readonly #maxResultBytes: number;
  readonly #requiredRoles: readonly string[];
  readonly #clock: Clock;
  readonly #connections = new Set<Connection>();
  #starting = 0;
  #waiters: ((c: Connection | Error) => void)[] = [];
  #tools: Map<string, ToolInfo> | null = null;
  readonly #validators = new Map<string, ValidateFunction<Record<string, unknown>>>();
  #closed = false;

  /** @internal Use {@link createMcpToolManager}. */
  constructor(options: McpToolManagerOptions) {
    if (typeof options.command !== 'string' || options.command === '') {
      throw new TypeError('createMcpToolManager: command must be a non-empty string');
    }
    this.#options = options;
    this.name = options.name ?? options.command;
    this.#poolSize = positiveInt('poolSize', options.poolSize ?? DEFAULTS.poolSize);
    this.#timeoutMs = positiveInt('timeoutMs', options.timeoutMs ?? DEFAULTS.timeoutMs);
    this.#startTimeoutMs = positiveInt(
      'startTimeoutMs',
      options.startTimeoutMs ?? DEFAULTS.startTimeoutMs,
    );
    this.#maxResultBytes = positiveInt(
      'maxResultBytes',
      options.maxResultBytes ?? DEFAULTS.maxResultBytes,
    );
    this.#requiredRoles = [...(options.requiredRoles ?? [])];
    this.#clock = options.clock ?? systemClock;
  }

  /** Server processes running now. */
  get processes(): number {
    return this.#connections.size;
  }

  async discover(ctx: ExecContext): Promise<ToolInfo[]> {
    const tools = await this.#catalog();
    return [...tools.values()].filter((t) => toolRefusal(t, ctx) === null);
  }

  async describe(name: string): Promise<ToolInfo | null> {
    return (await this.#catalog()).get(name) ?? null;
  }

  async call(
    name: string,
    args: unknown,
    ctx: ExecContext,
  ): Promise<ToolCallResult<McpToolOutput>> {
    const ended = callTimer<McpToolOutput>(this.#clock);
    let info: ToolInfo | null;
    try {
      info = await this.describe(name);
    } catch (err) {
      return ended('error', null, toAxonError(err));
    }
    if (!info) return ended('not_found', null, new NotFoundError('tool', name));
    const refusal = toolRefusal(info, ctx);
    if (refusal) {
      return ended(
        'permission_denied',
        null,
        refusalError(name, refusal, info.requiredPermissions),
      );
    }
    let connection: Connection | null = null;
    try {
      const checked = checkJsonSchema<Record<string, unknown>>(
        `tool ${name}`,
        this.#validator(name, info.parameters),
        args,
      );
      connection = await this.#acquire();
      const result = await connection.client.callTool({ name, arguments: checked }, undefined, {
        timeout: this.#timeoutMs,
        signal: ctx.signal,
      });
      const content = (result.content ?? []) as Record<string, unknown>[];
      if (result.isError === true) {
        const text = content
          .map((c) => (typeof c['text'] === 'string' ? c['text'] : ''))
          .join('\n');
        return ended(
          'error',
          null,
          new ToolError(name, 'tool_error', text || 'the tool reported an error'),
        );
      }
      return ended(
        'success',
        truncateResult(content, result.structuredContent, this.#maxResultBytes),
        null,
      );
    } catch (err) {
      const typed = this.#typed(name, err, connection, ctx);
      return ended(typed instanceof TimeoutError ? 'timeout' : 'error', null, typed);
    } finally {
      if (connection) this.#release(connection);
    }
  }

  /** Stops every server process. Calls after this fail. */
  async close(): Promise<void> {
    this.#closed = true;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters)
      w(new ToolError(this.name, 'server_unavailable', 'the tool manager closed'));
    await Promise.all([...this.#connections].map((c) => c.client.close().catch(() => undefined)));
    this.#connections.clear();
  }

  #typed(name: string, err: unknown, connection: Connection | null, ctx: ExecContext): AxonError {
    if (ctx.isCancelled()) {
      return toAxonError(ctx.cancelReason ?? new CancelledError(`tool ${name} cancelled`));
    }
    if (err instanceof McpError && err.code === (ErrorCode.RequestTimeout as number)) {
      return new TimeoutError(`tool ${name}`, this.#timeoutMs, { cause: err });
    }
    if (
      connection?.dead ||
      (err instanceof McpError && err.code === (ErrorCode.ConnectionClosed as number))
    ) {
      const tail = connection?.stderr.trim();
      return new ToolError(
        name,
        'server_exited',
        `its server (${this.name}) exited during the call${tail ? `: ${tail}` : ''}`,
        { cause: err, details: { server: this.name } },
      );
    }
    return toAxonError(err);
  }

  #validator(name: string, schema: JsonSchema): ValidateFunction<Record<string, unknown>> {
    let validate = this.#validators.get(name);
    if (!validate) {
      validate = compileJsonSchema<Record<string, unknown>>(`tool ${name}`, schema, {
        anyDialect: true,
      });
      this.#validators.set(name, validate);
    }
    return validate;
  }

  /** The server's tools, listed once (from the first server started). */
  async #catalog(): Promise<Map<string, ToolInfo>> {
    if (this.#tools) return this.#tools;
    const connection = await this.#acquire();
    try {
      const tools = new Map<string, ToolInfo>();
      let cursor: string | undefined;
      do {
        // Listing is part of starting up, not a tool call: it gets the start timeout.
        const page = await connection.client.listTools(cursor === undefined ? {} : { cursor }, {
          timeout: this.#startTimeoutMs,
        });
        for (const t of page.tools) {
          tools.set(t.name, {
            name: t.name,
            description: t.description ?? '',
            parameters: t.inputSchema,
            requiredPermissions: this.#requiredRoles,
          });
        }
        cursor = page.nextCursor;
      } while (cursor);
      this.#tools = tools;
      return tools;
    } finally {
      this.#release(connection);
    }
  }

  /** An idle live connection; a new one while there are fewer than `poolSize`; else waits. */
  async #acquire(): Promise<Connection> {
    if (this.#closed)
      throw new ToolError(this.name, 'server_unavailable', 'the tool manager is closed');
    for (const c of this.#connections) {
      if (!c.busy && !c.dead) {
        c.busy = true;
        return c;
      }
    }
    if (this.#connections.size + this.#starting < this.#poolSize) return this.#start();
    const next = await new Promise<Connection | Error>((resolve) => this.#waiters.push(resolve));
    if (next instanceof Error) throw next;
    return next;
  }

  #release(connection: Connection): void {
    connection.busy = false;
    if (connection.dead) {
      this.#connections.delete(connection);
      // Someone waiting gets a new server in its place.
      const waiter = this.#waiters.shift();
      if (waiter) {
        this.#start().then(waiter, (err: unknown) => {
          waiter(err instanceof Error ? err : new Error(String(err)));
        });
      }
      return;
    }
    const waiter = this.#waiters.shift();
    if (waiter) {
      connection.busy = true;
      waiter(connection);
    }
  }

  async #start(): Promise<Connection> {
    this.#starting++;
    const connection = new Connection(this.#options);
    connection.busy = true;
    connection.transport.onclose = () => {
      connection.dead = true;
      if (!connection.busy) this.#connections.delete(connection);
    };
    try {
      await connection.client.connect(connection.transport, { timeout: this.#startTimeoutMs });
    } catch (err) {
      await connection.client.close().catch(() => undefined);
      const tail = connection.stderr.trim();
      throw new ToolError(
        this.name,
        'server_unavailable',
        `cannot start ${this.#options.command}: ${err instanceof Error ? err.message : String(err)}${tail ? `: ${tail}` : ''}`,
        { cause: err },
      );
    } finally {
      this.#starting--;
    }
    if (this.#closed) {
      await connection.client.close().catch(() => undefined);
      throw new ToolError(this.name, 'server_unavailable', 'the tool manager closed');
    }
    this.#connections.add(connection);
    return connection;
  }
}
