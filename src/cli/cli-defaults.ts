/**
 * @module The constants the commands' options and help show, in a module that imports
 * nothing: `axon --help` and every command's definition read them without loading what the
 * commands run (the store, the server, the examples). Each copy of a value that lives in a
 * heavier module is checked against it by test/cli/cli-defaults.test.ts.
 */

/** The defaults of API.md's "Running, and the embedded defaults". */
export const SERVE_DEFAULTS = {
  host: '127.0.0.1',
  port: 7070,
  dataDir: './.axon',
  configFile: 'axon.yaml',
  model: 'gpt-4o-mini',
  /** How long `serve` and `worker` wait at start for their Redis and PostgreSQL to answer, ms. */
  connectTimeoutMs: 5000,
} as const;

/** The SQLite store's file inside the data dir. */
export const STORE_FILE = 'axon.db';

/** The file a running `axon serve` keeps in its data dir (`data-dir-lock.ts`). */
export const SERVER_LOCK_FILE = 'server.json';

/** The examples `axon run` knows (`examples/index.ts`'s `EXAMPLES`, by name). */
export const EXAMPLE_NAMES: readonly string[] = ['trip-planner', 'help-desk'];

/** How `axon run` routes a message: the example's rules, or its agents' descriptions. */
export const RUN_ROUTERS = ['rules', 'embedding'] as const;

/** One of {@link RUN_ROUTERS}. */
export type RunRouter = (typeof RUN_ROUTERS)[number];

/** The example workflow served beside the configured ones. */
export const EXAMPLE_WORKFLOW = 'code-review';

/** The input of a thread triggered without `--input`, by workflow (`CODE_REVIEW_INPUT`). */
export const DEFAULT_INPUTS: Readonly<Record<string, string>> = {
  [EXAMPLE_WORKFLOW]: 'Write add(a, b) in JavaScript',
};

/** The levels of `AXON_LOG_LEVEL` (`observability/logger.ts`'s `LOG_LEVELS`). */
export const LOG_LEVEL_NAMES: readonly string[] = [
  'trace',
  'debug',
  'info',
  'warn',
  'error',
  'fatal',
  'silent',
];
