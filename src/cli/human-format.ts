/**
 * @module How the CLI's tables show figures to a person: durations, token counts, dollars
 * and times, each in one short, fixed form. `--json` prints the raw numbers instead.
 */

/** `412ms`, `3.2s`, `2m05s`, `1h04m`; `-` for none. */
export function formatDuration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return '-';
  const n = Math.max(0, Math.round(ms));
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

/** `$0.0213` (four decimals), `$0` for nothing, `<$0.0001` for less than shows. */
export function formatCost(usd: number): string {
  if (usd <= 0) return '$0';
  if (usd < 0.00005) return '<$0.0001';
  return `$${usd.toFixed(4)}`;
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
