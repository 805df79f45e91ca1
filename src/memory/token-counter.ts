/**
 * @module Token counting for memory budgets: seed 002's four-characters-per-token
 * heuristic by default, or an exact tokenizer (js-tiktoken's BPE ranks, bundled with the
 * package: nothing is downloaded).
 */
import { Tiktoken } from 'js-tiktoken/lite';
import cl100k from 'js-tiktoken/ranks/cl100k_base';
import o200k from 'js-tiktoken/ranks/o200k_base';

/** Counts the tokens of a text. */
export type TokenCounter = (text: string) => number;

/** Seed 002's heuristic: about four characters per token, rounded up. */
export const heuristicTokens: TokenCounter = (text) => Math.ceil(text.length / 4);

/**
 * An exact counter for OpenAI's encodings: `cl100k_base` (GPT-4, GPT-3.5,
 * text-embedding-3) or `o200k_base` (GPT-4o and later).
 *
 * @example
 * const memory = new TieredMemory({ hot, tokenBudget: 4000, countTokens: tiktokenCounter('o200k_base') });
 */
export function tiktokenCounter(
  encoding: 'cl100k_base' | 'o200k_base' = 'cl100k_base',
): TokenCounter {
  const enc = new Tiktoken(encoding === 'cl100k_base' ? cl100k : o200k);
  return (text) => enc.encode(text).length;
}
