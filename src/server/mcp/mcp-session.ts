/**
 * @module One MCP session over a runtime (docs/mcp.md): an MCP SDK `Server` answering
 * `tools/list` from the {@link McpCatalog} and `tools/call` as a step of the session's run.
 * The run (flow `mcp`, entry `mcp`, owned by the session's user, with the configured
 * budgets) is made at the session's first call and completed when the session closes; an
 * agent's or a tool's call is a step submitted to it (`agent`, `tool_call`), a durable
 * agent's a message to the actor (a step of the actor's own run). Refusals — an unknown tool,
 * arguments failing its schema, a key without the permission, a draining server, too many
 * calls in flight — are JSON-RPC errors, and nothing is run. The transport is the caller's:
 * stdio (`axon mcp`) or Streamable HTTP (`/mcp` on `axon serve`).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { ConflictError } from '../../errors/conflict-error.js';
import type { Logger } from '../../observability/logger.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { SubmittedStep } from '../../steps/step-submission.js';
import type { WireBudgets } from '../../store/records.js';
import { checkJsonSchema } from '../../tools/json-schema.js';
import { zodIssues } from '../../tools/zod-issues.js';
import { requirePermission, type Caller, type Permission } from '../auth.js';
import { agentArgumentsSchema, type McpCatalog, type McpTarget } from './mcp-catalog.js';
import { refusal, refusalOf } from './mcp-refusal.js';
import { followCall, type CallChannel } from './mcp-step-call.js';

/** The flow every MCP session's run is of (by content: the same flow for every session). */
const MCP_FLOW = { name: 'mcp', ast: { axon: 'mcp-session' } } as const;
/** The entry of a session's run, as `GET /v1/runs?entry=mcp` and the trace UI list it. */
export const MCP_ENTRY = 'mcp';

/** Options of {@link McpSession}. */
export interface McpSessionOptions {
  readonly runtime: Runtime;
  readonly catalog: McpCatalog;
  /** Whose session: its run's owner, and the user of the actors it messages. */
  readonly userId: string;
  /** The budgets of the session's run (API.md's run `budgets`); none: unbounded. */
  readonly budgets?: WireBudgets | undefined;
  /** Calls of the session in flight at most (`QUEUE_FULL` past it). */
  readonly maxCalls: number;
  /** True while the server drains: calls are refused (`POOL_UNAVAILABLE`). */
  readonly draining?: () => boolean;
  /** The permissions of a request: its key's (HTTP), or every one (stdio). */
  readonly permissions: (authInfo: AuthInfo | undefined) => ReadonlySet<Permission>;
  /** The version the server reports in `initialize`. */
  readonly version: string;
  readonly logger: Logger;
}

/** The arguments of a durable agent's tool. */
interface ActorArguments {
  readonly key: string;
  readonly message: unknown;
}

/** See the module. */
export class McpSession {
  /** The SDK's server of this session: connect it to the session's transport. */
  // The low-level `Server`, not `McpServer`: the tools' schemas are JSON Schemas from the
  // runtime's registry, which `McpServer.registerTool` (zod only) cannot take.
  // eslint-disable-next-line @typescript-eslint/no-deprecated
  readonly server: Server;
  readonly #options: McpSessionOptions;
  #run: Promise<string> | null = null;
  #calls = 0;
  #tokens = 0;
  readonly #open = new Set<Promise<unknown>>();
  #closing: Promise<void> | null = null;

  constructor(options: McpSessionOptions) {
    this.#options = options;
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    this.server = new Server(
      { name: 'axon', title: 'axon', version: options.version },
      {
        capabilities: { tools: { listChanged: false } },
        instructions:
          "axon's agents and tools. agent_<name> runs an agent with a message; actor_<name> messages a durable agent's actor by key, which keeps its state between calls; other tools are function tools. Each call is a step of this session's run.",
      },
    );
    this.server.onerror = (err) => {
      options.logger.warn({ err }, 'MCP session: a protocol error');
    };
    this.server.setRequestHandler(ListToolsRequestSchema, (_request, extra) => {
      this.#require(extra.authInfo, 'read');
      return {
        tools: options.catalog.list().map((t) => ({
          name: t.name,
          title: t.title,
          description: t.description,
          inputSchema: t.inputSchema,
        })),
      };
    });
    this.server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const progressToken = request.params._meta?.progressToken;
      const channel: CallChannel = {
        signal: extra.signal,
        progress:
          progressToken === undefined
            ? null
            : (progress, message) =>
                extra.sendNotification({
                  method: 'notifications/progress',
                  params: { progressToken, progress, message },
                }),
      };
      const call = this.#call(
        request.params.name,
        request.params.arguments ?? {},
        extra.authInfo,
        channel,
      );
      this.#open.add(call);
      void call.finally(() => this.#open.delete(call)).catch(() => undefined);
      return call;
    });
  }

  /**
   * The session's run id, once its first call has made it; `null` before. A caller of the
   * API (`GET /v1/runs/{run_id}/steps`) finds the session's steps there.
   */
  async runId(): Promise<string | null> {
    return this.#run === null ? null : await this.#run.catch(() => null);
  }

  /**
   * Ends the session: the server closes (calls in flight are aborted, so their steps are
   * cancelled), then, once they have ended, the session's run is completed. Resolves once
   * done; calling it again returns the same promise.
   */
  close(): Promise<void> {
    return (this.#closing ??= (async () => {
      await this.server.close().catch((err: unknown) => {
        this.#options.logger.warn({ err }, 'MCP session: its transport did not close cleanly');
      });
      await Promise.allSettled([...this.#open]);
      const runId = await this.runId();
      if (runId === null) return;
      try {
        await this.#options.runtime.completeRun(runId);
      } catch (err) {
        // Ended from the API already, or a step waits in it (an approval): it stays as it is.
        if (!(err instanceof ConflictError)) {
          this.#options.logger.warn({ err, run_id: runId }, 'MCP session: its run not completed');
        }
      }
    })());
  }

  #require(authInfo: AuthInfo | undefined, permission: Permission): void {
    const caller: Caller = {
      userId: this.#options.userId,
      permissions: this.#options.permissions(authInfo),
    };
    try {
      requirePermission(caller, permission);
    } catch (err) {
      throw refusalOf(err, this.#options.logger);
    }
  }

  async #call(
    name: string,
    args: Record<string, unknown>,
    authInfo: AuthInfo | undefined,
    channel: CallChannel,
  ): Promise<CallToolResult> {
    const { catalog, logger } = this.#options;
    this.#require(authInfo, 'write');
    const tool = catalog.find(name);
    if (!tool) {
      throw refusal('NOT_FOUND', `no tool "${name}" (tools/list lists them)`, { tool: name });
    }
    if (this.#options.draining?.() === true) {
      throw refusal('POOL_UNAVAILABLE', 'the server is draining: it takes no new calls');
    }
    if (this.#calls >= this.#options.maxCalls) {
      throw refusal(
        'QUEUE_FULL',
        `this session has ${this.#calls} calls running, its bound; call again as they end`,
        { max_calls: this.#options.maxCalls, retry_after_ms: 1_000 },
      );
    }
    this.#calls += 1;
    try {
      return await this.#begin(tool.target, args, channel);
    } catch (err) {
      throw refusalOf(err, logger);
    } finally {
      this.#calls -= 1;
    }
  }

  /** Begins the call of `target` (refusing what cannot begin) and follows it to its end. */
  async #begin(
    target: McpTarget,
    args: Record<string, unknown>,
    channel: CallChannel,
  ): Promise<CallToolResult> {
    const { runtime, logger } = this.#options;
    if (target.kind === 'actor') {
      const { key, message } = actorArguments(target.name, args);
      const receipt = await runtime.durable.send(
        { name: target.name, key, userId: this.#options.userId },
        message,
      );
      const step = {
        stepId: receipt.step_id,
        runId: receipt.run_id,
        messageId: receipt.message_id,
      };
      return followCall(runtime, step, channel, logger);
    }
    let input: Record<string, unknown>;
    if (target.kind === 'agent') {
      const parsed = agentArgumentsSchema.safeParse(args);
      if (!parsed.success) {
        throw refusal('SCHEMA_VIOLATION', `the arguments of agent ${target.name} are not valid`, {
          issues: zodIssues(parsed.error),
        });
      }
      input = { agent: target.name, ...parsed.data };
    } else {
      checkJsonSchema(`tool ${target.name}`, target.validate, args);
      input = { tool: target.name, args };
    }
    const { submitted, runId } = await this.#submit({
      type: target.kind === 'agent' ? 'agent' : 'tool_call',
      input,
    });
    return followCall(runtime, { stepId: submitted.step_id, runId }, channel, logger);
  }

  /**
   * Submits a step to the session's run, with the session's next client token. A run ended
   * from the API (cancelled, completed) is replaced: the session goes on in a new one.
   */
  async #submit(body: {
    readonly type: 'agent' | 'tool_call';
    readonly input: Record<string, unknown>;
  }): Promise<{ readonly submitted: SubmittedStep; readonly runId: string }> {
    const { runtime } = this.#options;
    for (let attempt = 0; ; attempt++) {
      const runId = await this.#sessionRun();
      this.#tokens += 1;
      try {
        const submitted = await runtime.submitStep(runId, {
          ...body,
          client_token: `mcp-${this.#tokens}`,
        });
        return { submitted, runId };
      } catch (err) {
        if (attempt === 0 && err instanceof ConflictError) {
          const run = await runtime.getRun(runId);
          if (run && run.status !== 'running' && run.status !== 'waiting') {
            this.#run = null;
            continue;
          }
        }
        throw err;
      }
    }
  }

  /** The session's run, made on first use. */
  #sessionRun(): Promise<string> {
    if (this.#run !== null) return this.#run;
    const { runtime, userId, budgets } = this.#options;
    const made = (async () => {
      const { flow } = await runtime.createFlow(MCP_FLOW);
      const run = await runtime.createRun(
        flow.flow_id,
        { entry: MCP_ENTRY, ...(budgets === undefined ? {} : { budgets }) },
        { userId },
      );
      return run.run_id;
    })();
    this.#run = made;
    made.catch(() => {
      if (this.#run === made) this.#run = null;
    });
    return made;
  }
}

/** A durable agent's arguments checked: `{ key, message }`, nothing else. */
function actorArguments(name: string, args: Record<string, unknown>): ActorArguments {
  const extra = Object.keys(args).filter((k) => k !== 'key' && k !== 'message');
  const issues = [
    ...(typeof args['key'] === 'string'
      ? []
      : [{ path: ['key'], message: 'a string is required' }]),
    ...('message' in args ? [] : [{ path: ['message'], message: 'a message is required' }]),
    ...extra.map((k) => ({ path: [k], message: 'not an argument of this tool' })),
  ];
  if (issues.length > 0) {
    throw refusal('SCHEMA_VIOLATION', `the arguments of durable agent ${name} are not valid`, {
      issues,
    });
  }
  return { key: args['key'] as string, message: args['message'] };
}
