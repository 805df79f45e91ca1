/**
 * @module How the CLI's tables show figures to a person: the forms of
 * `observability/human-format.ts`, which the trace UI shows too (one format for durations,
 * tokens, dollars and times). `--json` prints the raw numbers instead.
 */
export {
  elapsedMs,
  formatCost,
  formatCount,
  formatDuration,
  formatRunStatus,
  formatTime,
  formatTokens,
} from '../observability/human-format.js';
