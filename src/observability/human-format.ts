/**
 * @module How figures read to a person, in the CLI's tables and the trace UI alike: one
 * form each for durations (`850ms`, `4.2s`, `2m05s`, `1h02m`), counts (`1,204`), tokens
 * (`1,204 in / 56 out`), dollars (`$0.0123`, `$0.000033`), a run's status with its failed
 * steps (`running · 2 failed steps`) and times (`2026-11-27 18:05:19Z`, UTC). Pure functions,
 * no DOM and no Node: the UI's bundle imports this file too.
 */

/** `412ms`, `3.2s`, `2m05s`, `1h04m`; `-` for none (null, negative or not a number). */
export function formatDuration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms) || ms < 0) return '-';
  const n = Math.round(ms);
  if (n < 1_000) return `${n}ms`;
  if (n < 60_000) return `${(n / 1_000).toFixed(1)}s`;
  const s = Math.floor(n / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3_600)}h${String(Math.floor((s % 3_600) / 60)).padStart(2, '0')}m`;
}

/** `1,204`. */
export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

/** `1,204 in / 56 out`. */
export function formatTokens(tokensIn: number, tokensOut: number): string {
  return `${formatCount(tokensIn)} in / ${formatCount(tokensOut)} out`;
}

/**
 * `$0.0213`: four decimals, and more below a cent, until two significant digits show —
 * `$0.000033`, `$0.00015` — so that a small cost reads as what it is, never as a bound or a
 * zero; `$0` for nothing (zero, negative or not a number).
 */
export function formatCost(usd: number): string {
  if (!(usd > 0)) return '$0';
  if (usd >= 0.01) return `$${usd.toFixed(4)}`;
  if (usd < 1e-15) return `$${usd.toExponential(1)}`;
  // The decimals that reach the second significant digit, at least four; the zeros a
  // fifth and later decimal would add (0.00010) are not figures.
  const decimals = Math.max(4, 1 - Math.floor(Math.log10(usd)));
  const text = usd.toFixed(decimals);
  return `$${decimals > 4 ? text.replace(/(\.\d{4}\d*?)0+$/, '$1') : text}`;
}

/**
 * A run's status with how many of its steps failed, when any did: `running · 2 failed steps`,
 * `completed · 1 failed step`; the status alone otherwise. A run goes on after a failed step
 * (more can be submitted), so its status alone does not tell.
 */
export function formatRunStatus(status: string, failedSteps: number): string {
  return failedSteps > 0 ? `${status} · ${formatFailedSteps(failedSteps)}` : status;
}

/** `1 failed step`, `2 failed steps`: what {@link formatRunStatus} adds to a status. */
export function formatFailedSteps(n: number): string {
  return `${formatCount(n)} failed step${n === 1 ? '' : 's'}`;
}

/** An ISO time as `2026-11-26 03:44:26Z` (UTC, to the second); `-` for none. */
export function formatTime(iso: string | null): string {
  if (iso === null) return '-';
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

/** Milliseconds from `from` to `to` (ISO times); `null` when either is missing. */
export function elapsedMs(from: string | null, to: string | null): number | null {
  if (from === null || to === null) return null;
  const ms = Date.parse(to) - Date.parse(from);
  return Number.isFinite(ms) ? Math.max(0, ms) : null;
}
