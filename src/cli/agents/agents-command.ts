/**
 * @module `axon agents list | show <name> <key> | send <name> <key> <message>`: the durable
 * agents (docs/durable-agents.md) of a server or a data dir — a table of actors, newest first;
 * one actor with its state, its wakes and its last messages; and a message to one, whose
 * receipt it prints (`--wait`: its end, the exit code by its status). On a data dir a message
 * is handled in this process, which is why it is refused on a data dir a server holds.
 */
import type { Command } from 'commander';
import { commandAction, commandPath, type CommandContext } from '../command-context.js';
import { EXIT } from '../exit-codes.js';
import { addJsonOption, printAnswer, printList } from '../json-output.js';
import { parseLimit, RUNS_LIMIT } from '../runs/runs-command.js';
import { AGENT_STATUSES, type AgentAddress } from '../sources/agent-source.js';
import { addSourceOptions, withAgentSource, type SourceFlags } from '../sources/source-options.js';
import {
  parseAgentName,
  parseAgentStatuses,
  parseClientToken,
  parseKey,
  parseKeyPrefix,
  parseMessage,
  parseUser,
} from './agent-args.js';
import { agentsTable, agentText, endText, receiptText } from './agent-format.js';

/** How many of an actor's last messages `agents show` shows. */
export const SHOWN_MESSAGES = 10;

interface AgentFlags extends SourceFlags {
  readonly json?: boolean | undefined;
  readonly user?: string | undefined;
}

interface ListFlags extends AgentFlags {
  readonly name?: string | undefined;
  readonly status?: string | undefined;
  readonly keyPrefix?: string | undefined;
  readonly limit?: string | undefined;
}

interface SendFlags extends AgentFlags {
  readonly clientToken?: string | undefined;
  readonly wait?: boolean | undefined;
}

const WHERE = `
Without --url it reads the data dir (the store axon serve keeps there), every user's actors;
with --url, the server's actors the key may read (an admin key's: every user's).`;

const USER_HELP =
  "Whose actor: on a data dir default anonymous (the caller of a server without API keys); with --url, an admin key reads another user's";

/** The address of `<name> <key>` and `--user`, checked. */
function addressOf(command: Command, flags: AgentFlags): AgentAddress {
  const [name, key] = command.processedArgs as [string, string];
  const userId = parseUser(flags.user);
  return {
    name: parseAgentName(name),
    key: parseKey(key),
    ...(userId === undefined ? {} : { userId }),
  };
}

/** Resolves once `signal` aborts (never without one). */
function abortedBy(signal: AbortSignal | undefined): Promise<'aborted'> {
  return new Promise((resolve) => {
    if (!signal) return;
    if (signal.aborted) resolve('aborted');
    signal.addEventListener(
      'abort',
      () => {
        resolve('aborted');
      },
      { once: true },
    );
  });
}

/** Adds `axon agents` and its subcommands to `program`. */
export function registerAgentsCommand(program: Command, ctx: CommandContext): void {
  const agents = program
    .command('agents')
    .description('The durable agents of a server or a data dir (see: axon agents list --help)')
    .helpCommand(false);

  const list = agents
    .command('list')
    .description(
      'List actors of durable agents, newest first: agent, key, status, mailbox, next timer',
    )
    .option('--name <agent>', 'Only actors of this durable agent')
    .option('--status <s,...>', `Only actors with these statuses: ${AGENT_STATUSES.join(', ')}`)
    .option('--key-prefix <prefix>', 'Only actors whose key begins with this')
    .option('--user <id>', 'Only the actors of this user (with --url: an admin key)')
    .option(
      '--limit <n>',
      `At most this many actors (1 to ${RUNS_LIMIT.max}, default ${RUNS_LIMIT.default})`,
    );
  addJsonOption(addSourceOptions(list)).addHelpText(
    'after',
    `${WHERE}
STATUS: busy (a message handled or queued), waiting (on a timer or an event), awake (idle,
in the server's memory) or asleep (only in the store). On a data dir an idle actor is
asleep: only a server knows which are awake in it (--status awake needs --url).

Examples:
  axon agents list
  axon agents list --name notebook --status busy,waiting --limit 10
  axon agents list --key-prefix customer- --url http://127.0.0.1:7070 --json
`,
  );
  list.action(
    commandAction(ctx, list, () => {
      const flags = list.opts<ListFlags>();
      const query = {
        limit: parseLimit(flags.limit),
        name: flags.name === undefined ? undefined : parseAgentName(flags.name, '--name'),
        status: parseAgentStatuses(flags.status),
        keyPrefix: parseKeyPrefix(flags.keyPrefix),
        userId: parseUser(flags.user),
      };
      return withAgentSource(flags, ctx, async (source) => {
        const found = await source.listAgents(query);
        const which = [
          query.name === undefined ? '' : ` of ${query.name}`,
          query.keyPrefix === undefined ? '' : ` with a key beginning ${query.keyPrefix}`,
          query.status ? ` with status ${query.status.join(' or ')}` : '',
          query.userId === undefined ? '' : ` of user ${query.userId}`,
        ].join('');
        printList(
          ctx,
          flags.json,
          found,
          `no actors${which} in ${source.description}`,
          agentsTable,
        );
        return EXIT.OK;
      });
    }),
  );

  const show = agents
    .command('show')
    .description(
      'Show an actor: its status, state, wakes (timers, event waits, reminders) and last messages',
    )
    .argument('<name>', 'The durable agent (notebook, follow-up, …)')
    .argument('<key>', 'The actor\'s key: 1 to 128 letters, digits, ".", "_", "~" or "-"')
    .option('--user <id>', USER_HELP);
  addJsonOption(addSourceOptions(show)).addHelpText(
    'after',
    `${WHERE} It shows the actor's last ${SHOWN_MESSAGES} messages (axon trace <run_id> shows all
its steps). Over --url its wakes come from GET /v1/agents/{name}/{key}/wakes.
--json prints { agent, wakes, messages, message_count } (agent: the API's Agent).

Examples:
  axon agents show notebook customer-42
  axon agents show follow-up ticket-7 --url http://127.0.0.1:7070 --json
`,
  );
  show.action(
    commandAction(ctx, show, () => {
      const flags = show.opts<AgentFlags>();
      const address = addressOf(show, flags);
      return withAgentSource(flags, ctx, async (source) => {
        const detail = await source.getAgent(address, SHOWN_MESSAGES);
        printAnswer(ctx, flags.json, detail, (style) => agentText(detail, style));
        return EXIT.OK;
      });
    }),
  );

  const send = agents
    .command('send')
    .description('Send a message to an actor; with --wait, wait for its end and print its output')
    .argument('<name>', 'The durable agent (notebook, follow-up, …)')
    .argument('<key>', 'The actor\'s key: 1 to 128 letters, digits, ".", "_", "~" or "-"')
    .argument('<message>', "The message: one JSON value the agent's input takes")
    .option(
      '--client-token <t>',
      'Sent again with the same token, the message is answered as the first was: nothing twice',
    )
    .option('--wait', 'Wait for the message to end (past its waits too): print its output')
    .option('--user <id>', 'With a data dir: whose actor (default anonymous)');
  addJsonOption(
    addSourceOptions(send).option(
      '--config <file>',
      `With a data dir: the config file of the runtime the message runs on, as axon serve's (default ./axon.yaml if there is one)`,
    ),
  ).addHelpText(
    'after',
    `
With --url the server accepts the message (POST /v1/agents/{name}/{key}/messages) for the
actor of the key's user. Without, the message is handled in this process, on the data dir's
store (made if missing), by a runtime made as axon serve makes it, which also goes on with
what a stopped server left there (its actors' messages, due wakes and schedules); without
--wait it exits once the message has ended or waits (a sleep, an event: axon serve on the
data dir goes on with it). It refuses a data dir a running axon serve holds (exit 2): give
that server's --url instead.
It prints the receipt (--json: { message_id, step_id, run_id, status, created }), exit 0.
With --wait it prints the message's end (--json: the receipt with the end's status, output
and error) and exits 0 when it succeeded, 1 when it failed or was cancelled.
A message the agent's input refuses, a full mailbox or a busy actor under reject is exit 1.

Examples:
  axon agents send notebook customer-42 '{"text":"called back"}'
  axon agents send notebook customer-42 '{"text":"hi"}' --wait --url http://127.0.0.1:7070
  axon agents send follow-up ticket-7 '{"text":"approved","await":"approval"}' --client-token t7-1
`,
  );
  send.action(
    commandAction(ctx, send, () => {
      const flags = send.opts<SendFlags>();
      const address = addressOf(send, flags);
      const message = parseMessage(send.processedArgs[2] as string);
      const token = parseClientToken(flags.clientToken);
      return withAgentSource(flags, ctx, async (source) => {
        const sent = await source.send(address, message, token);
        const { receipt } = sent;
        if (flags.wait !== true) {
          printAnswer(ctx, flags.json, receipt, (style) =>
            receiptText(address, receipt, source.flags, style),
          );
          return EXIT.OK;
        }
        const end = await Promise.race([sent.ended(), abortedBy(ctx.signal)]);
        if (end === 'aborted') {
          // The message is durable: it goes on where it is handled, waited for or not.
          ctx.io.stderr.write(
            `${commandPath(send)}: stopped waiting for message ${receipt.message_id}; it goes on (axon agents show ${address.name} ${address.key} ${source.flags})\n`,
          );
          return EXIT.INTERRUPTED;
        }
        printAnswer(
          ctx,
          flags.json,
          { ...receipt, status: end.status, output: end.output, error: end.error },
          (style) => endText(address, receipt, end, style),
        );
        return end.status === 'succeeded' ? EXIT.OK : EXIT.FAILED;
      });
    }),
  );
}
