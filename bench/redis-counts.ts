/**
 * @module Counting what Redis is asked, for `bench:fleet` and `bench/probes/fleet-calls.ts`:
 * the commands its clients send (MONITOR: a command a script runs is marked `lua` and left
 * out, a MULTI … EXEC transaction counts once, `INFO` not at all) and every command it runs,
 * scripts' included (INFO commandstats).
 */
import { Redis } from 'ioredis';

/** What {@link watchSent} saw between its start and `stop()`. */
export interface SentCommands {
  /** Commands sent, all clients together. */
  readonly total: number;
  /** By command (lower case): how many, and the characters of their arguments. */
  readonly byCommand: ReadonlyMap<string, { readonly count: number; readonly chars: number }>;
  /**
   * By script (its `EVALSHA` and the shape of its first key, ids and numbers as `*`): how many
   * calls, and the commands the script ran in them.
   */
  readonly byScript: ReadonlyMap<string, { readonly calls: number; readonly commands: number }>;
}

/** A script's name for {@link SentCommands.byScript}: its sha's start and its first key's shape. */
function scriptName(args: readonly string[]): string {
  const key = (args[3] ?? '').replace(/[0-9a-z-]{10,}|[0-9]+/gi, '*');
  return `${(args[1] ?? '').slice(0, 8)} ${key}`;
}

/** Starts counting the commands Redis's clients send; `stop()` ends it and says what it saw. */
export async function watchSent(url: string): Promise<{ stop(): Promise<SentCommands> }> {
  const client = new Redis(url);
  const monitor = await client.monitor();
  const byCommand = new Map<string, { count: number; chars: number }>();
  const byScript = new Map<string, { calls: number; commands: number }>();
  let total = 0;
  let script: { calls: number; commands: number } | undefined;
  const inMulti = new Set<string>();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua') {
      // Redis runs one command at a time: a script's commands follow its EVALSHA.
      if (script) script.commands++;
      return;
    }
    const command = (args[0] ?? '').toLowerCase();
    script = undefined;
    if (command === 'evalsha' || command === 'eval') {
      const name = scriptName(args);
      script = byScript.get(name) ?? { calls: 0, commands: 0 };
      script.calls++;
      byScript.set(name, script);
    }
    if (inMulti.has(source)) {
      if (command === 'exec' || command === 'discard') inMulti.delete(source);
      return;
    }
    if (command === 'multi') inMulti.add(source);
    if (command === 'info') return;
    const seen = byCommand.get(command) ?? { count: 0, chars: 0 };
    seen.count++;
    seen.chars += args.reduce((sum, a) => sum + a.length, 0);
    byCommand.set(command, seen);
    total++;
  });
  return {
    stop: async () => {
      // What the clients sent last reaches the monitor a moment later.
      await new Promise((resolve) => setTimeout(resolve, 300));
      monitor.disconnect();
      client.disconnect();
      return { total, byCommand, byScript };
    },
  };
}

/** Every command Redis has run so far, scripts' included, but `INFO` and `MONITOR`. */
export async function commandsRun(client: Redis): Promise<number> {
  let total = 0;
  for (const m of (await client.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (m[1] !== 'info' && m[1] !== 'monitor') total += Number(m[2]);
  }
  return total;
}
