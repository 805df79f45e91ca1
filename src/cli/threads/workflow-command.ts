/**
 * @module `axon workflow list | status <name> | trigger <name>`: the workflows a server (or a
 * data dir) runs, one workflow with its threads by status, and starting a thread — on a
 * server over `POST /v1/workflows/{name}/threads` (`--wait` follows its stream), on a data dir
 * in this process, to its end. `npx axon workflow trigger code-review` is the first thing a
 * new user runs.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError } from '../cli-error.js';
import { commandAction, type CommandContext } from '../command-context.js';
import { EXIT } from '../exit-codes.js';
import { addJsonOption, printAnswer, printList, writeJson } from '../json-output.js';
import {
  addThreadSourceOptions,
  dataDirOf,
  withThreadSource as withSource,
  type SourceFlags,
} from '../sources/source-options.js';
import { DEFAULT_INPUTS, EXAMPLE_WORKFLOW } from '../cli-defaults.js';
import {
  concurrencyText,
  ProgressLine,
  threadPaint,
  threadsTable,
  threadText,
  workflowsTable,
} from './thread-format.js';
import { THREAD_STATUSES, type ThreadInfo, type ThreadSource } from '../sources/thread-source.js';
import { createTerminalStyle } from '../terminal-style.js';

interface WorkflowFlags extends SourceFlags {
  readonly json?: boolean | undefined;
}

interface TriggerFlags extends WorkflowFlags {
  readonly input?: string | undefined;
  readonly wait?: boolean | undefined;
}

/** How many threads `workflow status` lists, and reads to count. */
const STATUS_LATEST = 10;
const STATUS_COUNTED = 500;

/**
 * Refuses to run a thread in this process on a data dir a running `axon serve` holds: it
 * would write the server's store beside it and take the server's running threads for ones
 * a stopped process left. `CliError` `USAGE` naming `--url <the server>`.
 */
async function refuseServedDataDir(flags: SourceFlags, ctx: CommandContext): Promise<void> {
  const dir = dataDirOf(flags, ctx);
  if (dir === undefined) return;
  const { serverOn } = await import('../serve/data-dir-lock.js');
  const server = serverOn(resolve(ctx.cwd, dir));
  if (server === null) return;
  throw new CliError(
    'USAGE',
    `axon serve (pid ${server.pid}) is running on the data dir ${dir}: trigger through it with --url ${server.url} (or stop it first)`,
  );
}

/** A role as `workflow status` shows it: `coder (engine)`, `judge (engine, pool:gpu)`. */
function roleText(r: {
  readonly name: string;
  readonly kind: string;
  readonly placement: string;
}): string {
  return `${r.name} (${r.kind}${r.placement === 'inline' ? '' : `, ${r.placement}`})`;
}

/** The exit code of an ended thread: 0 completed, 1 otherwise. */
export function threadExit(t: ThreadInfo): number {
  return t.status === 'completed' ? EXIT.OK : EXIT.FAILED;
}

/**
 * Follows `thread` to its end, with a progress line on stderr when it is a terminal; prints
 * the ended thread (or its JSON) and resolves its exit code.
 */
async function followAndPrint(
  source: ThreadSource,
  thread: ThreadInfo,
  json: boolean,
  ctx: CommandContext,
): Promise<number> {
  const { io } = ctx;
  const tty = io.stderr.isTTY === true;
  const progress = new ProgressLine();
  const line = { shown: false };
  if (tty) io.stderr.write(`thread ${thread.thread_id} of ${thread.workflow}: ${thread.status}\n`);
  let ended: ThreadInfo;
  try {
    ended = await source.follow(thread.thread_id, (p) => {
      if (!tty) return;
      io.stderr.write(`\r\u001b[K${progress.update(p)}`);
      line.shown = true;
    });
  } finally {
    if (line.shown) io.stderr.write('\r\u001b[K');
  }
  printAnswer(ctx, json, ended, (style) => threadText(ended, style));
  return threadExit(ended);
}

/** Adds `axon workflow` and its subcommands to `program`. */
export function registerWorkflowCommand(program: Command, ctx: CommandContext): void {
  const workflow = program
    .command('workflow')
    .description('The workflows a server or a data dir runs (see: axon workflow list --help)')
    .helpCommand(false);

  const list = workflow
    .command('list')
    .description('List the workflows: roles, max rounds, concurrency, threads running and queued');
  addJsonOption(addThreadSourceOptions(list)).addHelpText(
    'after',
    `
With --url, the server's workflows (GET /v1/workflows). Without, those a server on the
data dir would run: the config file's workflows: plus the example ${EXAMPLE_WORKFLOW}; RUNNING
and QUEUED are the threads the store holds started and queued.

Examples:
  axon workflow list
  axon workflow list --url http://127.0.0.1:7070 --json
`,
  );
  list.action(
    commandAction(ctx, list, () => {
      const flags = list.opts<WorkflowFlags>();
      return withSource(flags, ctx, async (source) => {
        const workflows = await source.listWorkflows();
        printList(
          ctx,
          flags.json,
          workflows,
          `no workflows at ${source.description}`,
          workflowsTable,
        );
        return EXIT.OK;
      });
    }),
  );

  const status = workflow
    .command('status')
    .description('Show a workflow, its threads by status and its latest threads')
    .argument('<name>', 'The workflow, as axon workflow list shows it');
  addJsonOption(addThreadSourceOptions(status)).addHelpText(
    'after',
    `
The counts are of the workflow's latest ${STATUS_COUNTED} threads.

Examples:
  axon workflow status code-review
  axon workflow status code-review --url http://127.0.0.1:7070 --json
`,
  );
  status.action(
    commandAction(ctx, status, () => {
      const flags = status.opts<WorkflowFlags>();
      const name = status.processedArgs[0] as string;
      return withSource(flags, ctx, async (source) => {
        const w = await source.getWorkflow(name);
        const threads = await source.listThreads({ workflow: name, limit: STATUS_COUNTED });
        const counts = Object.fromEntries(
          THREAD_STATUSES.map((s) => [s, threads.filter((t) => t.status === s).length]),
        );
        const latest = threads.slice(0, STATUS_LATEST);
        const { io } = ctx;
        if (flags.json === true) {
          writeJson(io, { workflow: w, threads_by_status: counts, latest_threads: latest });
          return EXIT.OK;
        }
        const style = createTerminalStyle(io.stdout, ctx.env);
        const byStatus = THREAD_STATUSES.filter((s) => (counts[s] ?? 0) > 0)
          .map((s) => `${counts[s] ?? 0} ${threadPaint(style, s)(s)}`)
          .join(', ');
        io.stdout.write(
          `workflow ${style.bold(w.name)}${w.description === '' ? '' : `: ${w.description}`}\n` +
            `  roles        ${w.roles.map(roleText).join(', ')}\n` +
            `  max rounds   ${w.max_rounds}\n` +
            `  concurrency  ${concurrencyText(w)}; ${w.running} running, ${w.queued} queued\n` +
            `  threads      ${threads.length === 0 ? 'none' : byStatus}\n`,
        );
        if (latest.length > 0) io.stdout.write(`\n${threadsTable(latest, style)}`);
        return EXIT.OK;
      });
    }),
  );

  const trigger = workflow
    .command('trigger')
    .description('Start a thread of a workflow; on a data dir, run it here to its end')
    .argument('<name>', 'The workflow, as axon workflow list shows it')
    .option(
      '--input <text>',
      `The thread's input (${EXAMPLE_WORKFLOW}'s default: "${DEFAULT_INPUTS[EXAMPLE_WORKFLOW] ?? ''}")`,
    )
    .option('--wait', 'With --url: follow the thread to its end (a data dir always does)');
  addJsonOption(addThreadSourceOptions(trigger)).addHelpText(
    'after',
    `
With --url the server runs the thread; --wait follows its stream. Without --url the thread
runs in this process on the data dir's store (made if missing), after picking up what a
stopped process left. It refuses a data dir a running axon serve holds (exit 2): give
that server's --url instead.
While it waits, a terminal's stderr shows the turn, its role and its tokens so far.
It exits 0 when the thread completed, 1 when it failed, crashed or was killed.

Examples:
  axon workflow trigger code-review
  axon workflow trigger code-review --input "Write sub(a, b) in JavaScript" --json
  axon workflow trigger review --url http://127.0.0.1:7070 --input "..." --wait
`,
  );
  trigger.action(
    commandAction(ctx, trigger, async () => {
      const flags = trigger.opts<TriggerFlags>();
      const name = trigger.processedArgs[0] as string;
      const input = flags.input ?? DEFAULT_INPUTS[name];
      await refuseServedDataDir(flags, ctx);
      return withSource(flags, ctx, async (source) => {
        if (input === undefined) {
          // An unknown workflow is named as such (exit 1), not asked for an input.
          await source.getWorkflow(name);
          throw new CliError('USAGE', `--input is needed: workflow "${name}" has no default input`);
        }
        const started = await source.trigger(name, input);
        const wait = flags.wait === true || flags.url === undefined;
        if (wait) return followAndPrint(source, started, flags.json === true, ctx);
        printAnswer(
          ctx,
          flags.json,
          started,
          (style) =>
            `thread ${style.bold(started.thread_id)} of ${started.workflow}: ${started.status}\n` +
            `follow it: axon thread show ${started.thread_id} --url ${source.description}\n`,
        );
        return EXIT.OK;
      });
    }),
  );
}
