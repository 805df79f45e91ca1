/**
 * @module `axon schedules list | pause <id> | resume <id> | delete <id>`: the schedules of durable
 * agents (a message to an actor at each time of a cron expression; docs/durable-agents.md) on a
 * server or a data dir. On a data dir a schedule is changed in its store, which a running
 * server's clock would learn of late: refused there, through its `--url` instead.
 */
import type { Command } from 'commander';
import { commandAction, type CommandContext } from '../command-context.js';
import { EXIT } from '../exit-codes.js';
import { addJsonOption, printAnswer, printList } from '../json-output.js';
import { addSourceOptions, withAgentSource, type SourceFlags } from '../sources/source-options.js';
import type { AgentSource, ScheduleInfo } from '../sources/agent-source.js';
import { parseScheduleId } from './agent-args.js';
import { scheduleLine, schedulesTable } from './agent-format.js';

interface ScheduleFlags extends SourceFlags {
  readonly json?: boolean | undefined;
}

const CHANGE_AFTER = `
With --url the server changes it (the key's own schedules; an admin key's, any). On a data
dir it is changed in the store; refused (exit 2) while axon serve runs there: give its --url.
A schedule that is not there is exit 1.`;

/** Adds `schedules <action> <id>`, which changes a schedule and prints it. */
function addChange(
  schedules: Command,
  ctx: CommandContext,
  action: 'pause' | 'resume',
  description: string,
  change: (source: AgentSource, id: string) => Promise<ScheduleInfo>,
): void {
  const command = schedules
    .command(action)
    .description(description)
    .argument('<schedule_id>', 'The schedule, as axon schedules list shows it');
  addJsonOption(addSourceOptions(command)).addHelpText(
    'after',
    `${CHANGE_AFTER} --json prints the Schedule.

Examples:
  axon schedules ${action} sched_nightly-notes
  axon schedules ${action} sched_nightly-notes --url http://127.0.0.1:7070
`,
  );
  command.action(
    commandAction(ctx, command, () => {
      const flags = command.opts<ScheduleFlags>();
      const id = parseScheduleId(command.processedArgs[0] as string);
      return withAgentSource(flags, ctx, async (source) => {
        const s = await change(source, id);
        printAnswer(ctx, flags.json, s, (style) => scheduleLine(s, style));
        return EXIT.OK;
      });
    }),
  );
}

/** Adds `axon schedules` and its subcommands to `program`. */
export function registerSchedulesCommand(program: Command, ctx: CommandContext): void {
  const schedules = program
    .command('schedules')
    .description(
      "The durable agents' schedules of a server or a data dir (see: axon schedules list --help)",
    )
    .helpCommand(false);

  const list = schedules
    .command('list')
    .description('List the schedules: id, agent, key, cron, time zone, status, next firing');
  addJsonOption(addSourceOptions(list)).addHelpText(
    'after',
    `
Without --url it reads the data dir: every user's schedules. With --url, the schedules the
key may see (its own; an admin key's, every one). NEXT is "-" for a paused schedule.

Examples:
  axon schedules list
  axon schedules list --url http://127.0.0.1:7070 --json
`,
  );
  list.action(
    commandAction(ctx, list, () => {
      const flags = list.opts<ScheduleFlags>();
      return withAgentSource(flags, ctx, async (source) => {
        const found = await source.listSchedules();
        printList(ctx, flags.json, found, `no schedules in ${source.description}`, schedulesTable);
        return EXIT.OK;
      });
    }),
  );

  addChange(schedules, ctx, 'pause', 'Pause a schedule: it fires no more until resumed', (s, id) =>
    s.pauseSchedule(id),
  );
  addChange(
    schedules,
    ctx,
    'resume',
    'Resume a schedule from its next time after now (what it missed is not sent)',
    (s, id) => s.resumeSchedule(id),
  );

  const remove = schedules
    .command('delete')
    .description('Delete a schedule')
    .argument('<schedule_id>', 'The schedule, as axon schedules list shows it');
  addJsonOption(addSourceOptions(remove)).addHelpText(
    'after',
    `${CHANGE_AFTER} A schedule of axon.yaml's schedules: is made again when axon serve starts.
--json prints { schedule_id, deleted: true }.

Examples:
  axon schedules delete sched_4f2a9c0e1b7d3a5c6e8f0a1b
`,
  );
  remove.action(
    commandAction(ctx, remove, () => {
      const flags = remove.opts<ScheduleFlags>();
      const id = parseScheduleId(remove.processedArgs[0] as string);
      return withAgentSource(flags, ctx, async (source) => {
        await source.deleteSchedule(id);
        printAnswer(
          ctx,
          flags.json,
          { schedule_id: id, deleted: true },
          (style) => `schedule ${style.bold(id)} deleted\n`,
        );
        return EXIT.OK;
      });
    }),
  );
}
