/**
 * @module `axon thread list | show <id> | inspect <id> | kill <id>`: the threads of a server
 * or a data dir — a table of them, one thread's turns (role, status, duration, tokens, cost,
 * the text cut to a line), everything of a thread (each turn's full raw and typed output),
 * and killing one. A thread is a run, so `axon trace <thread_id>` shows its steps.
 */
import type { Command } from 'commander';
import type { ThreadStatus } from '../../workflows/thread-records.js';
import { commandAction, type CommandContext } from '../command-context.js';
import { EXIT } from '../exit-codes.js';
import { addJsonOption, printAnswer, printList } from '../json-output.js';
import { parseLimit, parseStatusList, RUNS_LIMIT } from '../runs/runs-command.js';
import {
  addThreadSourceOptions,
  withThreadSource as withSource,
  type SourceFlags,
} from '../sources/source-options.js';
import { threadInspectText, threadLine, threadsTable, threadText } from './thread-format.js';
import { THREAD_STATUSES } from '../sources/thread-source.js';

interface ThreadFlags extends SourceFlags {
  readonly json?: boolean | undefined;
}

interface ThreadListFlags extends ThreadFlags {
  readonly workflow?: string | undefined;
  readonly status?: string | undefined;
  readonly limit?: string | undefined;
}

/** `--status` of `thread list`, checked: thread statuses, comma-separated. */
export function parseThreadStatuses(value: string | undefined): ThreadStatus[] | undefined {
  return parseStatusList<ThreadStatus>(value, THREAD_STATUSES);
}

const WHERE = `
Without --url it reads the data dir (the store axon serve keeps there); with --url, the
server's threads that the key may see.`;

/** Adds `axon thread` and its subcommands to `program`. */
export function registerThreadCommand(program: Command, ctx: CommandContext): void {
  const thread = program
    .command('thread')
    .description('The threads of workflows (see: axon thread list --help)')
    .helpCommand(false);

  const list = thread
    .command('list')
    .description(
      'List recent threads, newest first: id, workflow, status, turns, duration, tokens, cost',
    )
    .option('--workflow <name>', 'Only threads of this workflow')
    .option('--status <s,...>', `Only threads with these statuses: ${THREAD_STATUSES.join(', ')}`)
    .option(
      '--limit <n>',
      `At most this many threads (1 to ${RUNS_LIMIT.max}, default ${RUNS_LIMIT.default})`,
    );
  addJsonOption(addThreadSourceOptions(list)).addHelpText(
    'after',
    `${WHERE}

Examples:
  axon thread list
  axon thread list --workflow code-review --status failed,crashed --limit 10
`,
  );
  list.action(
    commandAction(ctx, list, () => {
      const flags = list.opts<ThreadListFlags>();
      const query = {
        limit: parseLimit(flags.limit),
        status: parseThreadStatuses(flags.status),
        workflow: flags.workflow,
      };
      return withSource(flags, ctx, async (source) => {
        const threads = await source.listThreads(query);
        const which = [
          query.workflow === undefined ? '' : ` of ${query.workflow}`,
          query.status ? ` with status ${query.status.join(' or ')}` : '',
        ].join('');
        printList(
          ctx,
          flags.json,
          threads,
          `no threads${which} in ${source.description}`,
          threadsTable,
        );
        return EXIT.OK;
      });
    }),
  );

  const show = thread
    .command('show')
    .description('Show a thread and its turns: role, status, duration, tokens, cost, text')
    .argument('<thread_id>', 'The thread, as axon thread list shows it');
  addJsonOption(addThreadSourceOptions(show)).addHelpText(
    'after',
    `${WHERE} Each turn's text is cut to one line: axon thread inspect shows it whole,
and axon trace <thread_id> the steps under each turn.

Examples:
  axon thread show run_01a2160372e9fc093fcb3e6458cb9c0e
`,
  );
  show.action(
    commandAction(ctx, show, () => {
      const flags = show.opts<ThreadFlags>();
      return withSource(flags, ctx, async (source) => {
        const t = await source.getThread(show.processedArgs[0] as string);
        printAnswer(ctx, flags.json, t, (style) => threadText(t, style));
        return EXIT.OK;
      });
    }),
  );

  const inspect = thread
    .command('inspect')
    .description(
      "Show everything of a thread: its lifecycle, each turn's full raw and typed output",
    )
    .argument('<thread_id>', 'The thread, as axon thread list shows it');
  addJsonOption(addThreadSourceOptions(inspect)).addHelpText(
    'after',
    `${WHERE} --json prints the whole Thread (docs/http-api.md).

Examples:
  axon thread inspect run_01a2160372e9fc093fcb3e6458cb9c0e
`,
  );
  inspect.action(
    commandAction(ctx, inspect, () => {
      const flags = inspect.opts<ThreadFlags>();
      return withSource(flags, ctx, async (source) => {
        const t = await source.getThread(inspect.processedArgs[0] as string);
        printAnswer(ctx, flags.json, t, (style) => threadInspectText(t, style));
        return EXIT.OK;
      });
    }),
  );

  const kill = thread
    .command('kill')
    .description(
      'Kill a thread: a queued one leaves its queue, a running one has its turn cancelled',
    )
    .argument('<thread_id>', 'The thread, as axon thread list shows it');
  addJsonOption(addThreadSourceOptions(kill)).addHelpText(
    'after',
    `
With --url the server kills it (POST /v1/threads/{id}/kill). On a data dir it marks a thread
that no process runs killed: a thread a server is running there is the server's to kill
(give --url). A thread that has ended is exit 1.

Examples:
  axon thread kill run_01a2160372e9fc093fcb3e6458cb9c0e --url http://127.0.0.1:7070
`,
  );
  kill.action(
    commandAction(ctx, kill, () => {
      const flags = kill.opts<ThreadFlags>();
      return withSource(flags, ctx, async (source) => {
        const t = await source.kill(kill.processedArgs[0] as string);
        printAnswer(ctx, flags.json, t, (style) => threadLine(t, style));
        return EXIT.OK;
      });
    }),
  );
}
