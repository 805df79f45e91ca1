/** @module The trace UI asked for where its bundle was never built. */
import { HttpError } from '../http-errors.js';

/**
 * The trace UI's assets are missing: an install from `dist/` whose build did not bundle the
 * UI (`npm run build` does). Answered 503, code `NOT_IMPLEMENTED` (this server has no UI to
 * serve), `details.reason` `ui_not_built` and `details.dir` the folder it looked in; the
 * API is unaffected.
 */
export class UiNotBuiltError extends HttpError {
  constructor(dir: string, options: { readonly cause?: unknown } = {}) {
    super(
      503,
      'NOT_IMPLEMENTED',
      `the trace UI is not built: ${dir} is missing or incomplete; run \`npm run build\` (it bundles src/ui into it)`,
      { reason: 'ui_not_built', dir },
    );
    if (options.cause !== undefined) this.cause = options.cause;
  }
}
