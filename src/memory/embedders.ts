/**
 * @module Embedders for the cold tier. Semantic quality is the embedder's: the default,
 * `hashedEmbedder`, needs no model — it hashes words and character trigrams into a fixed
 * vector, so texts sharing words and word pieces are near — but knows nothing of meaning
 * (synonyms are strangers to it). For real semantic search use `openAIEmbedder` with an
 * OpenAI-compatible embeddings endpoint.
 */
import OpenAI from 'openai';
import { words } from './bm25.js';

/** Turns texts into vectors of `dimensions` numbers, unit length. */
export interface Embedder {
  readonly name: string;
  readonly dimensions: number;
  embed(texts: readonly string[]): Promise<Float32Array[]>;
}

/** FNV-1a, 32 bits. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** `v` scaled to unit length (a zero vector stays zero). */
export function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += (v[i] ?? 0) * (v[i] ?? 0);
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i] = (v[i] ?? 0) / norm;
  return v;
}

/**
 * The hashed-features embedder (the default): each word adds ±1 and each of its character
 * trigrams ±0.5 at a position its hash picks (the sign from another bit of the hash), then
 * the vector is scaled to unit length. Deterministic, instant, no download.
 */
export function hashedEmbedder(options: { readonly dimensions?: number } = {}): Embedder {
  const dimensions = options.dimensions ?? 256;
  if (!(Number.isInteger(dimensions) && dimensions >= 8)) {
    throw new RangeError(
      `hashedEmbedder: dimensions must be a whole number >= 8, got ${dimensions}`,
    );
  }
  const add = (v: Float32Array, feature: string, weight: number): void => {
    const h = fnv1a(feature);
    v[h % dimensions] = (v[h % dimensions] ?? 0) + (h & 0x80000000 ? -weight : weight);
  };
  const one = (text: string): Float32Array => {
    const v = new Float32Array(dimensions);
    for (const w of words(text)) {
      add(v, `w:${w}`, 1);
      const padded = `^${w}$`;
      for (let i = 0; i + 3 <= padded.length; i++) add(v, `t:${padded.slice(i, i + 3)}`, 0.5);
    }
    return normalize(v);
  };
  return {
    name: `hashed-${dimensions}`,
    dimensions,
    embed: (texts) => Promise.resolve(texts.map(one)),
  };
}

/** Options of {@link openAIEmbedder}. */
export interface OpenAIEmbedderOptions {
  /** Default `text-embedding-3-small`. */
  readonly model?: string;
  /** The vector size the model gives (1 536 for `text-embedding-3-small`). */
  readonly dimensions: number;
  /** An OpenAI-compatible endpoint; default OpenAI's. */
  readonly baseURL?: string;
  /** Default `OPENAI_API_KEY`. */
  readonly apiKey?: string;
  /** Texts per request; default 256. */
  readonly batchSize?: number;
  /** A client to use instead (its own base URL and key). */
  readonly client?: OpenAI;
}

/**
 * Embeddings from an OpenAI-compatible `/embeddings` endpoint, through the `openai` SDK.
 * A vector of another size than `dimensions` is refused (`RangeError`).
 */
export function openAIEmbedder(options: OpenAIEmbedderOptions): Embedder {
  const model = options.model ?? 'text-embedding-3-small';
  const batch = options.batchSize ?? 256;
  const client =
    options.client ??
    new OpenAI({
      apiKey: options.apiKey ?? process.env['OPENAI_API_KEY'] ?? 'missing',
      ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
    });
  return {
    name: `openai:${model}`,
    dimensions: options.dimensions,
    async embed(texts) {
      const out: Float32Array[] = [];
      for (let at = 0; at < texts.length; at += batch) {
        const res = await client.embeddings.create({
          model,
          input: texts.slice(at, at + batch),
          encoding_format: 'float',
        });
        const data = [...res.data].sort((a, b) => a.index - b.index);
        for (const d of data) {
          if (d.embedding.length !== options.dimensions) {
            throw new RangeError(
              `embedding model ${model} gave ${d.embedding.length} dimensions, expected ${options.dimensions}`,
            );
          }
          out.push(normalize(Float32Array.from(d.embedding)));
        }
      }
      return out;
    },
  };
}
