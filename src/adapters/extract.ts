/**
 * @module The extract layer (seed 001): an agent's raw text turned into typed data with a
 * zod schema. JSON is looked for in the text itself, in fenced code blocks, then in its
 * outermost braces; on failure the engine is asked once to correct it, with the error fed
 * back; then `ExtractError` with both attempts.
 */
import { z } from 'zod';
import type { ExecContext } from '../context/exec-context.js';
import type { ChatRequest, Engine } from '../engines/chat-request.js';
import { createContext } from '../context/create-context.js';
import { chatTokens } from '../engines/chat-tokens.js';
import { ExtractError, type ExtractAttempt } from '../errors/extract-error.js';
import type { SchemaIssue } from '../errors/schema-violation-error.js';

/** Settings of the extract layer; a role's override the global ones field by field. */
export interface ExtractConfig {
  /** The engine asked to correct output that did not parse; without one, no retry. */
  readonly engine?: Engine;
  /** The model of that engine to ask; default the engine's. */
  readonly model?: string;
  /** Its `max_tokens`; default the engine's. */
  readonly maxTokens?: number;
  /** Its temperature; default 0. */
  readonly temperature?: number;
}

/** Options of one {@link extract} call. */
export interface ExtractOptions extends ExtractConfig {
  /**
   * The context the correcting call is made in (its budget is charged); without one the
   * engine is called directly.
   */
  readonly ctx?: ExecContext;
  readonly signal?: AbortSignal;
}

/** Seed 001's two-level merge: `role` settings over `global` ones. */
export function mergeExtractConfig(
  global: ExtractConfig = {},
  role: ExtractConfig = {},
): ExtractConfig {
  return { ...global, ...definedOnly(role) };
}

function definedOnly(config: ExtractConfig): ExtractConfig {
  return Object.fromEntries(Object.entries(config).filter(([, v]) => v !== undefined));
}

const FENCE = /```[A-Za-z0-9_-]*\s*\n([\s\S]*?)```/g;

/** Where JSON may be in `raw`, most likely first. */
export function jsonCandidates(raw: string): string[] {
  const candidates = [raw.trim()];
  for (const m of raw.matchAll(FENCE)) candidates.push((m[1] ?? '').trim());
  for (const [open, close] of [
    ['{', '}'],
    ['[', ']'],
  ] as const) {
    const start = raw.indexOf(open);
    const end = raw.lastIndexOf(close);
    if (start !== -1 && end > start) candidates.push(raw.slice(start, end + 1));
  }
  return [...new Set(candidates.filter((c) => c !== ''))];
}

type Parsed<T> = { ok: true; value: T } | { ok: false; error: string; issues: SchemaIssue[] };

/** The first candidate that is JSON and matches `schema`, or why none did. */
function parseInto<T>(raw: string, schema: z.ZodType<T>): Parsed<T> {
  let firstMismatch: { error: string; issues: SchemaIssue[] } | null = null;
  let firstSyntax: string | null = null;
  for (const text of jsonCandidates(raw)) {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      firstSyntax ??= err instanceof Error ? err.message : String(err);
      continue;
    }
    const checked = schema.safeParse(json);
    if (checked.success) return { ok: true, value: checked.data };
    firstMismatch ??= {
      error: 'the JSON does not match the schema',
      issues: checked.error.issues.map((i) => ({
        path: i.path.map((p) => (typeof p === 'symbol' ? String(p) : p)),
        message: i.message,
      })),
    };
  }
  if (firstMismatch) {
    const where = firstMismatch.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    return {
      ok: false,
      error: `${firstMismatch.error}: ${where.join('; ')}`,
      issues: firstMismatch.issues,
    };
  }
  return { ok: false, error: `no JSON found${firstSyntax ? ` (${firstSyntax})` : ''}`, issues: [] };
}

/** The engine's corrected answer to a failed attempt. */
async function askAgain(
  engine: Engine,
  raw: string,
  failure: string,
  schema: z.ZodType,
  options: ExtractOptions,
): Promise<string> {
  const request: ChatRequest = {
    messages: [
      {
        role: 'system',
        content: `You convert text into JSON. Reply with one JSON value and nothing else. It must match this JSON Schema:\n${JSON.stringify(z.toJSONSchema(schema, { io: 'input' }))}`,
      },
      { role: 'user', content: raw },
      {
        role: 'user',
        content: `That text could not be used: ${failure}. Reply with the corrected JSON only.`,
      },
    ],
    ...(options.model === undefined ? {} : { model: options.model }),
    params: {
      temperature: options.temperature ?? 0,
      ...(options.maxTokens === undefined ? {} : { max_tokens: options.maxTokens }),
    },
  };
  // Every engine call goes through a budget ledger: the caller's context's when given,
  // else one of its own (no limits, but reserved, committed and costed all the same).
  const ctx = options.ctx ?? createContext(options.signal ? { signal: options.signal } : {});
  const stream = chatTokens(engine, request, ctx);
  for (;;) {
    const r = await stream.next();
    if (r.done) return r.value.text;
  }
}

/**
 * Extracts typed data from an agent's raw output.
 *
 * @example
 * const meta = await extract(raw, z.object({ done: z.boolean(), files: z.array(z.string()) }), { engine });
 */
export async function extract<T>(
  raw: string,
  schema: z.ZodType<T>,
  options: ExtractOptions = {},
): Promise<T> {
  const first = parseInto(raw, schema);
  if (first.ok) return first.value;
  const attempts: ExtractAttempt[] = [{ raw, error: first.error, issues: first.issues }];
  if (!options.engine) throw new ExtractError(attempts);
  const corrected = await askAgain(options.engine, raw, first.error, schema, options);
  const second = parseInto(corrected, schema);
  if (second.ok) return second.value;
  attempts.push({ raw: corrected, error: second.error, issues: second.issues });
  throw new ExtractError(attempts);
}
