/**
 * @module The `axon` command tree on commander: the program, its commands (`core-commands.ts`:
 * `run`, `serve`, `worker`, `list`; `new-commands.ts`: `new`, `generate`;
 * `mcp-command.ts`: `mcp`; `runs-command.ts`: `runs list`;
 * `trace-command.ts`: `trace`; `workflow-command.ts`: `workflow list|status|trigger`;
 * `thread-command.ts`: `thread list|show|inspect|kill`; `agents-command.ts`: `agents
 * list|show|send`; `schedules-command.ts`: `schedules list|pause|resume|delete`;
 * `image-command.ts`: `image build`; `store-command.ts`: `store copy`; `help` here), the
 * help's layout, and the checks commander does not make the way axon wants them (an option
 * of another command, an extra argument, an unknown command: one line naming it, the
 * command's help, exit 2). A new command is a `registerXCommand(program,
 * ctx)` like `registerRunsCommand`, called from {@link createProgram}; what it reads runs from
 * comes from `source-options.ts`, its `--json` from `json-output.ts`. Defining the program
 * loads only commander and these definitions: an action imports what it runs (the store, the
 * server, an HTTP client) when it runs, so `axon --help` and `axon runs list --url` start fast.
 */
import { Command, Help, Option } from 'commander';
import { LOG_LEVEL_NAMES } from './cli-defaults.js';
import { CliError } from './cli-error.js';
import type { CliStream } from './cli-io.js';
import { commandAction, commandPath, type CommandContext } from './command-context.js';
import { EXIT, EXIT_CODES_HELP } from './exit-codes.js';
import {
  registerListCommand,
  registerRunCommand,
  registerServeCommand,
  registerWorkerCommand,
} from './core-commands.js';
import { registerAgentsCommand } from './agents/agents-command.js';
import { registerSchedulesCommand } from './agents/schedules-command.js';
import { registerImageCommand } from './image-command.js';
import { registerMcpCommand } from './mcp-command.js';
import { registerGenerateCommand, registerNewCommand } from './new/new-commands.js';
import { registerRunsCommand } from './runs/runs-command.js';
import { registerStoreCommand } from './store-command.js';
import { registerThreadCommand } from './threads/thread-command.js';
import { registerTraceCommand } from './runs/trace-command.js';
import { registerWorkflowCommand } from './threads/workflow-command.js';

/** The help's width where the stream is not a terminal (a pipe, a test). */
const PLAIN_HELP_WIDTH = 90;

const widthOf = (stream: CliStream): number =>
  stream.isTTY === true && stream.columns !== undefined ? stream.columns : PLAIN_HELP_WIDTH;

const ROOT_BEFORE = 'axon — an actor-model runtime for LLM agents\n';

const ROOT_AFTER = `
Run \`axon <command> --help\` for a command's options.

${EXIT_CODES_HELP}
Environment:
  AXON_LOG_LEVEL          level of the logs on stderr (default warn): one of
                          ${LOG_LEVEL_NAMES.join(', ')}
  AXON_ENGINE_URL         an OpenAI-compatible endpoint, registered as the engine openai;
                          AXON_ENGINE_MODEL (default gpt-4o-mini), AXON_ENGINE_KEY and
                          AXON_PRICE_TABLE (a YAML price table file) go with it
  AXON_SCRIPTED_TOKEN_MS  delay per scripted token of the examples' engine (default 5)
  AXON_DATA_DIR           run, serve, mcp, runs, trace, workflow, thread, agents,
                          schedules: the data dir (as --data-dir)
  AXON_API_KEY            runs, trace, workflow, thread, agents, schedules: the key --url
                          sends (as --api-key)
  NO_COLOR                set (to anything but "") for no colour; there is none unless
                          the output is a terminal
serve and worker read more; their --help lists them.
`;

/** Whether `command` runs something itself (the program and `runs` only hold commands). */
const runnable = (command: Command): boolean => command.commands.length === 0;

/** Every command under `program`, depth first. */
function descendants(program: Command): Command[] {
  return program.commands.flatMap((c) => [c, ...descendants(c)]);
}

/** `axon run` → `run`. */
const shortPath = (command: Command): string => commandPath(command).replace(/^axon ?/, '');

/** `a`, `a and b`, `a, b and c`. */
function listOf(names: readonly string[]): string {
  return names.length <= 1
    ? (names[0] ?? '')
    : `${names.slice(0, -1).join(', ')} and ${names.at(-1) ?? ''}`;
}

/**
 * The help of the program lists every runnable command by its full name (`runs list`) with
 * its arguments, not commander's `runs [options] [command]`.
 */
class AxonHelp extends Help {
  override visibleCommands(command: Command): Command[] {
    return super
      .visibleCommands(command)
      .flatMap((c) => (runnable(c) ? [c] : this.visibleCommands(c)));
  }

  override subcommandTerm(command: Command): string {
    const args = command.registeredArguments.map((a) => {
      const name = `${a.name()}${a.variadic ? '...' : ''}`;
      return a.required ? `<${name}>` : `[${name}]`;
    });
    return [shortPath(command), ...args].join(' ');
  }
}

/** Commands that make their subcommands and their help axon's way. */
class AxonCommand extends Command {
  override createCommand(name?: string): AxonCommand {
    return new AxonCommand(name);
  }

  override createHelp(): Help {
    return Object.assign(new AxonHelp(), this.configureHelp());
  }
}

/** The command `path` names (`['runs', 'list']`), or `undefined`. */
function findCommand(program: Command, path: readonly string[]): Command | undefined {
  let at: Command | undefined = program;
  for (const name of path) at = at?.commands.find((c) => c.name() === name);
  return at;
}

function addHelp(program: Command, ctx: CommandContext): void {
  const help = program
    .command('help')
    .description('Show the help of axon, or of a command (axon help runs list)')
    .argument('[command...]');
  help.action(
    commandAction(ctx, help, () => {
      const path = help.processedArgs[0] as string[];
      const target = findCommand(program, path);
      if (!target) throw new CliError('USAGE', `unknown command "${path.join(' ')}"`);
      target.outputHelp();
      return Promise.resolve(EXIT.OK);
    }),
  );
}

/**
 * `paths` with the commands of a group named by the group when all of them are there:
 * `workflow list, workflow status, workflow trigger` → `workflow`.
 */
function grouped(program: Command, paths: readonly string[]): string[] {
  const out = [...paths];
  for (const group of program.commands) {
    const members = group.commands.filter(runnable).map(shortPath);
    if (members.length < 2 || !members.every((m) => out.includes(m))) continue;
    const at = out.indexOf(members[0] ?? '');
    const rest = out.filter((p) => !members.includes(p));
    rest.splice(at, 0, group.name());
    out.splice(0, out.length, ...rest);
  }
  return out;
}

/**
 * Gives every runnable command the options of the others, hidden, so that one given to the
 * wrong command is parsed (its value too) and refused with a line naming the commands it
 * belongs to — not commander's "unknown option" — and refuses extra arguments the same way.
 */
function refuseMisplaced(program: Command): void {
  const commands = descendants(program).filter(runnable);
  const owners = new Map<string, { readonly flags: string; readonly paths: string[] }>();
  for (const command of commands) {
    for (const option of command.options) {
      if (option.long === undefined) continue;
      const entry = owners.get(option.long) ?? { flags: option.flags, paths: [] };
      entry.paths.push(shortPath(command));
      owners.set(option.long, entry);
    }
  }
  const foreign = new Map<Command, Map<string, string>>();
  for (const command of commands) {
    const own = new Set(command.options.map((o) => o.long));
    const theirs = new Map<string, string>();
    for (const [long, { flags }] of owners) {
      if (own.has(long)) continue;
      const option = new Option(flags).hideHelp();
      command.addOption(option);
      theirs.set(option.attributeName(), long);
    }
    foreign.set(command, theirs);
  }
  program.hook('preAction', (_program, action) => {
    if (action === program) return;
    const expected = action.registeredArguments;
    const extra = action.args[expected.length];
    if (extra !== undefined && expected.at(-1)?.variadic !== true) {
      action.error(`error: unexpected argument "${extra}"`, {
        exitCode: EXIT.USAGE,
        code: 'axon.unexpectedArgument',
      });
    }
    for (const [attribute, long] of foreign.get(action) ?? []) {
      if (action.getOptionValueSource(attribute) !== 'cli') continue;
      const paths = grouped(program, owners.get(long)?.paths ?? []);
      action.error(`error: ${long} applies to ${listOf(paths)} only`, {
        exitCode: EXIT.USAGE,
        code: 'axon.misplacedOption',
      });
    }
  });
}

/**
 * The `axon` program. Parse it with `parseAsync(argv, { from: 'user' })`: its actions set
 * the exit code through `ctx.setExitCode`, and a usage error is thrown as commander's
 * `CommanderError` (exit override) after its line and the help went to stderr.
 */
export function createProgram(ctx: CommandContext): Command {
  const { io } = ctx;
  const program = new AxonCommand('axon');
  // Settings a subcommand copies when it is made: set before any command is added.
  program
    .configureOutput({
      writeOut: (s) => {
        io.stdout.write(s);
      },
      writeErr: (s) => {
        io.stderr.write(s);
      },
      getOutHelpWidth: () => widthOf(io.stdout),
      getErrHelpWidth: () => widthOf(io.stderr),
      getOutHasColors: () => false,
      getErrHasColors: () => false,
    })
    .exitOverride()
    .showHelpAfterError()
    .allowExcessArguments()
    .helpOption('-h, --help', 'Show this help')
    .version(ctx.version, '-v, --version', 'Show the version')
    .usage('<command> [options]')
    .argument('[command]')
    .addHelpText('before', ROOT_BEFORE)
    .addHelpText('after', ROOT_AFTER);
  registerRunCommand(program, ctx);
  registerServeCommand(program, ctx);
  registerMcpCommand(program, ctx);
  registerWorkerCommand(program, ctx);
  registerListCommand(program, ctx);
  registerNewCommand(program, ctx);
  registerGenerateCommand(program, ctx);
  registerRunsCommand(program, ctx);
  registerTraceCommand(program, ctx);
  registerWorkflowCommand(program, ctx);
  registerThreadCommand(program, ctx);
  registerAgentsCommand(program, ctx);
  registerSchedulesCommand(program, ctx);
  registerImageCommand(program, ctx);
  registerStoreCommand(program, ctx);
  addHelp(program, ctx);
  program.action(() => {
    const [name] = program.processedArgs as (string | undefined)[];
    if (name !== undefined) {
      program.error(`error: unknown command "${name}"`, {
        exitCode: EXIT.USAGE,
        code: 'commander.unknownCommand',
      });
    }
    program.outputHelp();
    ctx.setExitCode(EXIT.OK);
  });
  refuseMisplaced(program);
  // Commander's errors start `error: `; axon's name the command: `axon run: …`.
  for (const command of [program, ...descendants(program)]) {
    const prefix = `${commandPath(command)}: `;
    command.configureOutput({
      outputError: (text, write) => {
        write(text.replace(/^error: /, prefix));
      },
    });
  }
  return program;
}
