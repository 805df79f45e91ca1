/** @module The determinism facts of an engine call, as a context keeps them for its step. */

/**
 * What identifies an engine call for provenance and replay (NERVE-4012, NERVE-4020): the
 * hashes of its normalized prompt and parameters, its engine and model, the seed it was
 * given, how long it decoded, and the version of the price table its cost came from.
 */
export interface CallFacts {
  readonly seed: number | null;
  readonly promptHash: string;
  readonly paramsHash: string;
  readonly engine: string;
  readonly modelHash: string;
  readonly decodeTimeMs: number;
  readonly priceTable: string | null;
}
