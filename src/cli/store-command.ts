/**
 * @module `axon store copy`: a data dir's SQLite store into PostgreSQL (or any of the two into
 * the other), through `copyStore` — the migration from one machine's store to the database a
 * team backs up and replicates.
 */
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { ConflictError } from '../errors/conflict-error.js';
import type { RunStore } from '../store/run-store.js';
import { CliError } from './cli-error.js';
import { commandAction, type CommandContext } from './command-context.js';
import { EXIT } from './exit-codes.js';
import { addJsonOption, printAnswer } from './json-output.js';
import { STORE_FILE } from './cli-defaults.js';

interface StoreCopyFlags {
  readonly from: string;
  readonly to: string;
  readonly fromSchema?: string;
  readonly toSchema?: string;
  readonly json?: boolean;
}

const POSTGRES_URL = /^postgres(ql)?:\/\/\S+$/;

/** A store named on the command line, and how to show it. */
interface Named {
  readonly store: RunStore;
  readonly shown: string;
}

/**
 * `sqlite:<data dir or file>` or a `postgres://` URL (its tables in `schema`). A source must
 * exist: a SQLite path that does not is refused rather than made empty.
 */
async function openStore(
  flag: string,
  spec: string,
  schema: string,
  cwd: string,
  source: boolean,
): Promise<Named> {
  if (POSTGRES_URL.test(spec)) {
    const [{ postgresStore }, { shownPostgres }, { connectionCause }] = await Promise.all([
      import('../store/postgres/postgres-store.js'),
      import('../store/postgres/postgres-url.js'),
      import('./connection-cause.js'),
    ]);
    // A schema the store refuses throws here (RangeError: a usage error, its own line).
    const store = postgresStore({ connection: spec, schema });
    try {
      // Connected and migrated before anything is read or written: a wrong URL is one line.
      await store.ready();
    } catch (err) {
      await store.close().catch(() => undefined);
      throw new CliError(
        'NOT_REACHED',
        `cannot reach PostgreSQL at ${shownPostgres(spec)} (${flag}): ${connectionCause(err)}`,
      );
    }
    return { store, shown: `${shownPostgres(spec)} schema ${schema}` };
  }
  if (!spec.startsWith('sqlite:') || spec.length === 'sqlite:'.length) {
    throw new CliError(
      'USAGE',
      `${flag} must be sqlite:<data dir or .db file> or a postgres:// URL, got "${spec}"`,
    );
  }
  let path = resolve(cwd, spec.slice('sqlite:'.length));
  if (existsSync(path) && statSync(path).isDirectory()) path = join(path, STORE_FILE);
  if (source && !existsSync(path)) {
    throw new CliError('NOT_FOUND', `${flag}: there is no SQLite store at ${path}`);
  }
  const { sqliteStore } = await import('../store/sqlite/sqlite-store.js');
  return { store: sqliteStore(path), shown: `sqlite:${path}` };
}

/** Registers `axon store copy`. */
export function registerStoreCommand(program: Command, ctx: CommandContext): void {
  const store = program
    .command('store')
    .description(
      'Move a store: copy a SQLite data dir into PostgreSQL (see: axon store copy --help)',
    )
    .helpCommand(false);
  const copy = store
    .command('copy')
    .description(
      'Copy every flow, run, step, log, fact, checkpoint, recording and approval of one store into an empty one',
    )
    .requiredOption(
      '--from <store>',
      'the store copied: sqlite:<data dir or .db file>, or a postgres:// URL',
    )
    .requiredOption(
      '--to <store>',
      'the empty store it goes to: a postgres:// URL, or sqlite:<path>',
    )
    .option('--from-schema <name>', 'the schema of a PostgreSQL source', 'axon')
    .option('--to-schema <name>', 'the schema of a PostgreSQL target (made if missing)', 'axon');
  addJsonOption(copy).addHelpText(
    'after',
    `
Stop the servers and workers writing to the source first: a run that changes while it is
copied may be copied half old, half new. The target must hold no runs; on a failure, drop
what it holds (DROP SCHEMA … CASCADE) and copy again.

Examples:
  axon store copy --from sqlite:./.axon --to postgres://localhost/app
  axon store copy --from sqlite:./data/axon.db --to postgres://u:p@db/app --to-schema axon_prod
`,
  );
  copy.action(
    commandAction(ctx, copy, async () => {
      const flags = copy.opts<StoreCopyFlags>();
      const cwd = process.cwd();
      let from: Named | null = null;
      let to: Named | null = null;
      try {
        from = await openStore('--from', flags.from, flags.fromSchema ?? 'axon', cwd, true);
        to = await openStore('--to', flags.to, flags.toSchema ?? 'axon', cwd, false);
        const { copyStore } = await import('../store/store-copy.js');
        const counts = await copyStore(from.store, to.store);
        const { shown: fromShown } = from;
        const { shown: toShown } = to;
        printAnswer(
          ctx,
          flags.json,
          { from: fromShown, to: toShown, ...counts },
          () =>
            `copied ${counts.runs} runs (${counts.steps} steps, ${counts.events} events, ${counts.facts} facts, ${counts.checkpoints} checkpoints, ${counts.recordings} recordings, ${counts.approvals} approvals), ${counts.flows} flows, ${counts.actors} durable actors (${counts.wakes} wakes) and ${counts.schedules} schedules from ${fromShown} to ${toShown}\n`,
        );
        return EXIT.OK;
      } catch (err) {
        if (err instanceof ConflictError) throw new CliError('REQUEST_FAILED', err.message);
        if (err instanceof RangeError) throw new CliError('USAGE', err.message);
        throw err;
      } finally {
        await Promise.allSettled([from?.store.close(), to?.store.close()]);
      }
    }),
  );
}
