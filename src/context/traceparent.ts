/** @module W3C `traceparent` headers: parse and format. */

/** The parts of a W3C trace context. */
export interface TraceParent {
  readonly traceId: string;
  readonly spanId: string;
  readonly sampled: boolean;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** Parses a version-00 `traceparent`; `null` when it is malformed or all-zero. */
export function parseTraceparent(header: string): TraceParent | null {
  const m = TRACEPARENT.exec(header.trim());
  if (!m) return null;
  const [, traceId, spanId, flags] = m as unknown as [string, string, string, string];
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

/** Formats a version-00 `traceparent`. */
export function formatTraceparent(tp: TraceParent): string {
  return `00-${tp.traceId}-${tp.spanId}-${tp.sampled ? '01' : '00'}`;
}
