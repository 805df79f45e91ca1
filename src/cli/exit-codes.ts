/**
 * @module The exit codes of `axon`, one meaning each, so a script can tell "not there" from
 * "ask again later" from "typed it wrong". `axon --help` and docs/cli.md list them.
 */

/** Exit codes by meaning. */
export const EXIT = {
  /** It did what was asked. */
  OK: 0,
  /** What was asked for failed or does not exist: a failed run, an unknown run id, a refused key. */
  FAILED: 1,
  /**
   * The command line is wrong: an unknown command or option, a bad value — a store or Redis
   * it names that does not answer at start or refuses the connection among them (`serve`,
   * `worker`, `store copy`). Nothing was done.
   */
  USAGE: 2,
  /**
   * `runs`, `trace`, `workflow`, `thread`, `agents`, `schedules`: the server (`--url`) or the
   * data dir (`--data-dir`) could not be reached or read.
   */
  UNREACHABLE: 3,
  /**
   * Stopped by Ctrl-C or SIGTERM before it finished (`main.ts` sets it; `serve` drains and
   * exits 0 once it serves, `serve` and `worker` stopped while they start resolve it).
   */
  INTERRUPTED: 130,
} as const;

/** One of {@link EXIT}. */
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The exit codes as `axon --help` prints them. */
export const EXIT_CODES_HELP = `Exit codes:
  0    it did what was asked
  1    what was asked for failed or does not exist (a failed run or thread, an unknown
       id, a key the server refused, an error the server answered)
  2    usage error: an unknown command or option, a bad value, a store or Redis that
       does not answer or refuses (serve, worker, store copy); nothing was done
  3    runs, trace, workflow, thread, agents, schedules: the server (--url) or the data
       dir (--data-dir) could not be reached or read
  130  stopped by Ctrl-C or SIGTERM before it finished
`;
