/**
 * @module The two LLM step behaviours of NERVE-4010. `llm_plan` asks the engine for tool
 * suggestions over a menu of registered tools (JSON Schema 2020-12, NERVE-4011) and emits
 * the valid ones as `tool_suggest` events, never running them; `llm_call` runs the model's
 * tool calls (arguments checked first) and feeds the results back until it answers.
 */
import { z } from 'zod';
import type { ExecContext } from '../context/exec-context.js';
import type { ChatMessage, ChatParams, ChatTool, ChatToolCall } from '../engines/chat-request.js';
import type { ChatResult } from '../engines/chat-tokens.js';
import { NotFoundError } from '../errors/not-found-error.js';
import { PermissionDeniedError } from '../errors/permission-denied-error.js';
import { SchemaViolationError, type SchemaIssue } from '../errors/schema-violation-error.js';
import { toAxonError } from '../errors/to-error-payload.js';
import { toolRefusal, type ToolInfo } from '../tools/tool-manager.js';
import type { ToolResult } from '../tools/tool-result.js';
import {
  chatMessageSchema,
  chatParamsSchema,
  type ChatCall,
  type ChatCallOptions,
} from '../engines/chat-call.js';
import { parseBody } from '../runs/request-bodies.js';

/** Rounds of tool calls an `llm_call` makes at most before it stops. */
export const MAX_TOOL_ROUNDS = 8;

/** The input of an `llm_call` or `llm_plan` step (API.md). */
export const llmStepInputSchema = z
  .object({
    engine: z.string().min(1).optional(),
    model: z.string().min(1).optional(),
    messages: z.array(chatMessageSchema).min(1),
    params: chatParamsSchema
      .extend({ max_tokens: z.number().int().positive().optional() })
      .optional(),
    tools: z.array(z.string().min(1)).optional(),
  })
  .strict();
/**
 * The checked input. (zod leaves absent optional keys out, so its output fits the engine's
 * request types, which do not admit `undefined` values.)
 */
export type LlmStepInput = Omit<z.infer<typeof llmStepInputSchema>, 'messages' | 'params'> & {
  readonly messages: readonly ChatMessage[];
  readonly params?: ChatParams;
};

/** A tool call of the model that was checked and run (`llm_call`). */
export interface LlmToolRun {
  readonly tool: string;
  readonly args: unknown;
  readonly status: ToolResult['status'];
  readonly output: unknown;
  readonly error: { readonly code: string; readonly message: string } | null;
}

/** What an `llm_call` step returns. */
export interface LlmCallOutput {
  readonly text: string;
  readonly tool_runs: readonly LlmToolRun[];
  /** `stop`, `length`, … from the engine, or `max_tool_rounds` when the model kept calling tools. */
  readonly finish_reason: string | null;
}

/** A suggestion the engine made that was not valid (`llm_plan`): reported, never run. */
export interface RejectedSuggestion {
  readonly tool: string;
  /** The arguments as the model wrote them. */
  readonly arguments: string;
  readonly errors: readonly SchemaIssue[];
}

/** What an `llm_plan` step returns. */
export interface LlmPlanOutput {
  readonly text: string;
  readonly suggestions: readonly { readonly tool: string; readonly args: unknown }[];
  readonly rejected: readonly RejectedSuggestion[];
}

/** The runtime's tools as the LLM steps see them: described and checked by name. */
export interface ToolCatalog {
  /** The tool named `name` (of any manager), or `null`. */
  describe(name: string): Promise<ToolInfo | null>;
  /** The arguments checked against the tool's schema; `SchemaViolationError` otherwise. */
  validate(name: string, args: unknown): Promise<unknown>;
}

/** What the behaviours need: the engine call and tool calls of the runtime, and its tools. */
export interface LlmStepDeps {
  readonly tools: ToolCatalog;
  chat(call: ChatCall, ctx: ExecContext, options?: ChatCallOptions): Promise<ChatResult>;
  callTool(name: string, args: unknown, ctx: ExecContext): Promise<ToolResult>;
}

/** The input, checked; `SchemaViolationError` listing each problem's path otherwise. */
export function parseLlmStepInput(type: 'llm_call' | 'llm_plan', input: unknown): LlmStepInput {
  const parsed = parseBody(llmStepInputSchema, `${type} input`, input);
  if (type === 'llm_plan' && !parsed.tools?.length) {
    throw new SchemaViolationError('llm_plan input', [
      { path: ['tools'], message: 'llm_plan needs at least one tool to plan with' },
    ]);
  }
  return parsed as LlmStepInput;
}

/**
 * The tool menu of a step: each named tool's JSON Schema from the registry. An unknown
 * tool is `NotFoundError`, one the context may not use `PermissionDeniedError`: the engine
 * is not called.
 */
export async function toolMenu(
  tools: ToolCatalog,
  names: readonly string[],
  ctx: ExecContext,
): Promise<ChatTool[]> {
  const menu: ChatTool[] = [];
  for (const name of names) {
    const info = await tools.describe(name);
    if (!info) throw new NotFoundError('tool', name);
    if (toolRefusal(info, ctx) !== null) throw new PermissionDeniedError('tool', name);
    menu.push({ name, description: info.description, parameters: info.parameters });
  }
  return menu;
}

function chatCall(
  input: LlmStepInput,
  messages: readonly ChatMessage[],
  tools: ChatTool[],
): ChatCall {
  return {
    messages,
    ...(input.engine === undefined ? {} : { engine: input.engine }),
    ...(input.model === undefined ? {} : { model: input.model }),
    ...(input.params === undefined ? {} : { params: input.params }),
    ...(tools.length > 0 ? { tools } : {}),
  };
}

/** The arguments of a call as JSON, or the issue that they are not. */
function parseArguments(
  call: ChatToolCall,
): { ok: true; value: unknown } | { ok: false; issue: SchemaIssue } {
  try {
    return {
      ok: true,
      value: JSON.parse(call.arguments === '' ? '{}' : call.arguments) as unknown,
    };
  } catch (err) {
    return {
      ok: false,
      issue: {
        path: [],
        message: `arguments are not JSON: ${err instanceof Error ? err.message : String(err)}`,
      },
    };
  }
}

/**
 * `llm_plan`: one engine call over the tool menu. Each tool call of the answer is checked
 * against its tool's schema: a valid one is emitted as `tool_suggest`; an invalid one (an
 * unknown tool, arguments that are not JSON or break the schema) is reported in a
 * `narration` and in `rejected`. Nothing is run.
 */
export async function llmPlan(
  deps: LlmStepDeps,
  raw: unknown,
  ctx: ExecContext,
): Promise<LlmPlanOutput> {
  const input = parseLlmStepInput('llm_plan', raw);
  const menu = await toolMenu(deps.tools, input.tools ?? [], ctx);
  const reply = await deps.chat(chatCall(input, input.messages, menu), ctx);
  const offered = new Set(menu.map((t) => t.name));
  const suggestions: { tool: string; args: unknown }[] = [];
  const rejected: RejectedSuggestion[] = [];
  for (const call of reply.toolCalls) {
    const errors = await suggestionErrors(deps.tools, offered, call);
    if (errors.issues.length > 0) {
      rejected.push({ tool: call.name, arguments: call.arguments, errors: errors.issues });
      ctx.stream.emit({
        type: 'narration',
        text: `rejected suggestion ${call.name}: ${errors.issues.map((i) => `${i.path.join('.') || '(arguments)'}: ${i.message}`).join('; ')}`,
      });
      continue;
    }
    suggestions.push({ tool: call.name, args: errors.args });
    ctx.stream.emit({
      type: 'tool_suggest',
      tool: call.name,
      args: errors.args,
      ...(reply.text === '' ? {} : { reason: reply.text }),
    });
  }
  return { text: reply.text, suggestions, rejected };
}

/** What is wrong with a suggested call (no issues: it is valid, with its parsed args). */
async function suggestionErrors(
  tools: ToolCatalog,
  offered: ReadonlySet<string>,
  call: ChatToolCall,
): Promise<{ issues: SchemaIssue[]; args: unknown }> {
  if (!offered.has(call.name)) {
    return {
      issues: [{ path: [], message: `"${call.name}" is not a tool on the menu` }],
      args: null,
    };
  }
  const parsed = parseArguments(call);
  if (!parsed.ok) return { issues: [parsed.issue], args: null };
  try {
    return { issues: [], args: await tools.validate(call.name, parsed.value) };
  } catch (err) {
    if (err instanceof SchemaViolationError) return { issues: [...err.issues], args: null };
    throw err;
  }
}

/**
 * `llm_call`: calls the engine; when tools are offered and the model calls them, runs each
 * call as a `tool_call` child step (its arguments validated first — a call that fails them
 * is answered with the error and never runs), feeds the results back, and calls again, up
 * to {@link MAX_TOOL_ROUNDS} rounds.
 */
export async function llmCall(
  deps: LlmStepDeps,
  raw: unknown,
  ctx: ExecContext,
): Promise<LlmCallOutput> {
  const input = parseLlmStepInput('llm_call', raw);
  const menu = await toolMenu(deps.tools, input.tools ?? [], ctx);
  const messages: ChatMessage[] = [...input.messages];
  const runs: LlmToolRun[] = [];
  let text = '';
  for (let round = 0; round < MAX_TOOL_ROUNDS; round++) {
    const reply = await deps.chat(chatCall(input, messages, menu), ctx);
    text += reply.text;
    if (reply.toolCalls.length === 0 || menu.length === 0) {
      return { text, tool_runs: runs, finish_reason: reply.finishReason };
    }
    messages.push({ role: 'assistant', content: reply.text, tool_calls: reply.toolCalls });
    for (const call of reply.toolCalls) {
      const run = await runToolCall(deps, call, ctx);
      runs.push(run);
      messages.push({
        role: 'tool',
        tool_call_id: call.id,
        content: JSON.stringify(run.status === 'success' ? run.output : { error: run.error }),
      });
    }
  }
  return { text, tool_runs: runs, finish_reason: 'max_tool_rounds' };
}

async function runToolCall(
  deps: LlmStepDeps,
  call: ChatToolCall,
  ctx: ExecContext,
): Promise<LlmToolRun> {
  const parsed = parseArguments(call);
  if (!parsed.ok) {
    return {
      tool: call.name,
      args: call.arguments,
      status: 'error',
      output: null,
      error: { code: 'SCHEMA_VIOLATION', message: parsed.issue.message },
    };
  }
  // callTool checks permissions and the schema before the tool runs. What it refuses
  // before any step (a tool the model made up, one it may not call) goes back to the model
  // as that status, as a failed call does.
  let result: ToolResult;
  try {
    result = await deps.callTool(call.name, parsed.value, ctx);
  } catch (err) {
    const error = toAxonError(err);
    return {
      tool: call.name,
      args: parsed.value,
      status:
        error instanceof NotFoundError
          ? 'not_found'
          : error instanceof PermissionDeniedError
            ? 'permission_denied'
            : 'error',
      output: null,
      error: { code: error.code, message: error.message },
    };
  }
  return {
    tool: call.name,
    args: parsed.value,
    status: result.status,
    output: result.output,
    error: result.error ? { code: result.error.code, message: result.error.message } : null,
  };
}
