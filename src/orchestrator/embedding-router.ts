/**
 * @module The embedding router (Nerva's `EmbeddingRouter`): a message goes to the handlers
 * whose descriptions its embedding is nearest, by cosine similarity, above a threshold,
 * best `topK`. Handler embeddings are cached by name and description, so a call embeds
 * only its message.
 */
import type { ExecContext } from '../context/exec-context.js';
import { hashedEmbedder, type Embedder } from '../memory/embedders.js';
import {
  clampScore,
  routeResult,
  uniqueHandlers,
  type HandlerDescription,
  type HandlerSource,
  type RouteCandidate,
  type RouteResult,
  type Router,
} from './route-result.js';

/** Options of {@link createEmbeddingRouter}. */
export interface EmbeddingRouterOptions {
  /** Where the handlers come from, asked at each `classify`. */
  readonly handlers: HandlerSource;
  /** Default {@link hashedEmbedder} (256 dimensions, no model, no network). */
  readonly embedder?: Embedder;
  /** The least similarity, in [0, 1], a handler needs to be a candidate; default 0.3. */
  readonly threshold?: number;
  /** The most candidates a result has, a whole number >= 1; default 5. */
  readonly topK?: number;
}

/** Nerva's threshold: handlers less similar than this are left out. */
export const EMBEDDING_DEFAULT_THRESHOLD = 0.3;
/** Nerva's top-k. */
export const EMBEDDING_DEFAULT_TOP_K = 5;

interface CachedVector {
  readonly description: string;
  readonly vector: Float32Array;
}

/**
 * A router by embedding similarity. At each `classify` it asks `handlers` for the current
 * handlers (one registered since the last call is routable at once), embeds the message —
 * and any handler description it has not embedded yet, in the same `embed` call — and
 * scores each handler by the dot product of the two unit vectors (their cosine), held in
 * [0, 1]. Handlers scoring at least `threshold` are candidates, the best `topK` of them in
 * the result; `rawScores` has every handler's score, passed or not.
 *
 * Gotchas: the quality is the embedder's. The default {@link hashedEmbedder} matches
 * shared words and word pieces, not meanings — write descriptions with the words users
 * say, or pass a real embedder (`openAIEmbedder`). A handler's vector is re-embedded when
 * its description changes. Of handlers sharing a name, the first is used.
 *
 * @example
 * const router = createEmbeddingRouter({ handlers: registryHandlers(registry) });
 * const { bestHandler, confidence } = await router.classify('will it rain in Berlin?', ctx);
 */
export function createEmbeddingRouter(options: EmbeddingRouterOptions): Router {
  if (typeof options !== 'object' || (options as unknown) === null) {
    throw new TypeError('createEmbeddingRouter: options must be an object');
  }
  const source = options.handlers;
  if (typeof source !== 'object' || (source as unknown) === null) {
    throw new TypeError('createEmbeddingRouter: options.handlers must be a HandlerSource');
  }
  if (typeof source.handlers !== 'function') {
    throw new TypeError('createEmbeddingRouter: options.handlers must be a HandlerSource');
  }
  const embedder = options.embedder ?? hashedEmbedder();
  if (typeof embedder !== 'object' || typeof embedder.embed !== 'function') {
    throw new TypeError('createEmbeddingRouter: options.embedder must be an Embedder');
  }
  const threshold = options.threshold ?? EMBEDDING_DEFAULT_THRESHOLD;
  if (typeof threshold !== 'number' || !(threshold >= 0 && threshold <= 1)) {
    throw new RangeError(
      `createEmbeddingRouter: options.threshold must be a number in [0, 1], got ${String(threshold)}`,
    );
  }
  const topK = options.topK ?? EMBEDDING_DEFAULT_TOP_K;
  if (!(Number.isInteger(topK) && topK >= 1)) {
    throw new RangeError(
      `createEmbeddingRouter: options.topK must be a whole number >= 1, got ${String(topK)}`,
    );
  }
  const cache = new Map<string, CachedVector>();

  const classify = async (message: string, ctx: ExecContext): Promise<RouteResult> => {
    if (typeof message !== 'string') throw new TypeError('classify: message must be a string');
    const handlers = uniqueHandlers(await source.handlers(ctx));
    // Each handler's vector, from the cache or from this call's own `embed`: a concurrent
    // call that caches another description meanwhile cannot mix them up.
    const vectors: Float32Array[] = new Array<Float32Array>(handlers.length);
    const texts = [message];
    const missing: number[] = [];
    for (let i = 0; i < handlers.length; i++) {
      const h = handlers[i] as HandlerDescription;
      const cached = cache.get(h.name);
      if (cached?.description === h.description) vectors[i] = cached.vector;
      else {
        missing.push(i);
        texts.push(h.description);
      }
    }
    const embedded = await embedder.embed(texts);
    if (embedded.length !== texts.length) {
      throw new RangeError(
        `embedder ${embedder.name} gave ${embedded.length} vectors for ${texts.length} texts`,
      );
    }
    const query = embedded[0] as Float32Array;
    for (let j = 0; j < missing.length; j++) {
      const i = missing[j] as number;
      const h = handlers[i] as HandlerDescription;
      const vector = embedded[j + 1] as Float32Array;
      if (vector.length !== query.length) {
        throw new RangeError(
          `embedder ${embedder.name} gave vectors of ${vector.length} and ${query.length} dimensions`,
        );
      }
      vectors[i] = vector;
      cache.set(h.name, { description: h.description, vector });
    }
    // Handlers that were removed are let go once they outnumber the live ones.
    if (cache.size > 2 * handlers.length + 64) prune(cache, handlers);

    // Null prototype: a handler may be called `__proto__`.
    const raw = Object.create(null) as Record<string, number>;
    const candidates: RouteCandidate[] = [];
    for (let i = 0; i < handlers.length; i++) {
      const name = (handlers[i] as HandlerDescription).name;
      const score = clampScore(dot(query, vectors[i] as Float32Array));
      raw[name] = score;
      if (score >= threshold) {
        candidates.push({ name, score, reason: `embedding similarity ${score.toFixed(3)}` });
      }
    }
    return routeResult(candidates, raw, topK);
  };

  return { name: 'embedding', classify };
}

/** The dot product of two vectors of the same length: their cosine, when both are unit. */
function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] as number) * (b[i] as number);
  return sum;
}

/** In [0, 1]; NaN (a degenerate embedder) counts as 0. Float rounding can pass 1 a little. */
function prune(cache: Map<string, CachedVector>, live: readonly HandlerDescription[]): void {
  const names = new Set(live.map((h) => h.name));
  for (const name of cache.keys()) if (!names.has(name)) cache.delete(name);
}
