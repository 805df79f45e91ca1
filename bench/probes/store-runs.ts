/**
 * A probe beside bench:store, not a benchmark: bench:store's two-step runs (agent `a`
 * delegates to `b`, 16 in flight) on one store for `AXON_PROBE_MS` (8 000), and what the
 * database did meanwhile — where a run's time goes when the store is on a server.
 * `AXON_PROBE_STORE` `redis` (the default) or `postgres`. The CPU a run of this process and of
 * the database's server processes (`/proc`, so the server must run on this machine); for
 * Redis the commands it ran and the script calls it was sent a run (`INFO commandstats`), for
 * PostgreSQL the transactions it committed a run (`pg_stat_database`). With `node --cpu-prof
 * --import tsx bench/probes/store-runs.ts` the profile of the same loop.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import pg from 'pg';
import { defineAgent } from '../../src/actors/define-agent.js';
import { createLogger } from '../../src/observability/logger.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { postgresStore } from '../../src/store/postgres/postgres-store.js';
import { redisStore } from '../../src/store/redis/redis-store.js';

const kind = process.env['AXON_PROBE_STORE'] ?? 'redis';
if (kind !== 'redis' && kind !== 'postgres') {
  throw new Error(`AXON_PROBE_STORE must be redis or postgres, not ${JSON.stringify(kind)}`);
}
const rawMs = process.env['AXON_PROBE_MS'] ?? '8000';
const ms = Number(rawMs);
if (!Number.isFinite(ms) || ms <= 0) {
  throw new Error(
    `AXON_PROBE_MS must be a positive number of milliseconds, not ${JSON.stringify(rawMs)}`,
  );
}
const postgresUrl = 'postgres://postgres@127.0.0.1:5432/postgres';
const prefix = `axon-probe:${randomUUID()}:`;
const schema = `axon_probe_${randomUUID().replaceAll('-', '').slice(0, 12)}`;

const b = defineAgent({ name: 'b', handler: () => 'b' });
const a = defineAgent({
  name: 'a',
  handler: async (input, ctx, runtime) => (await runtime.delegate('b', input, ctx)).output,
});
const runtime = createRuntime({
  agents: [a, b],
  store:
    kind === 'redis' ? redisStore({ prefix }) : postgresStore({ connection: postgresUrl, schema }),
  logger: createLogger({ level: 'warn' }),
});

// Each kind opens only its own database's client.
const redis = kind === 'redis' ? new Redis('redis://127.0.0.1:6379') : null;
const db = kind === 'postgres' ? new pg.Client({ connectionString: postgresUrl }) : null;
await db?.connect();

/** Redis: the commands it ran (scripts' own included) and the script calls it was sent. */
async function redisCounts(r: Redis): Promise<{ commands: number; scripts: number }> {
  const stats = await r.info('commandstats');
  let commands = 0;
  let scripts = 0;
  for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    commands += Number(m[2]);
    if (m[1] === 'evalsha' || m[1] === 'eval') scripts += Number(m[2]);
  }
  return { commands, scripts };
}

/** CPU seconds (user + system) of every process of the database server, from /proc. */
function serverCpu(): number {
  const name = kind === 'redis' ? 'redis-server' : 'postgres';
  const tick = 100; // USER_HZ on Linux
  let total = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (!comm.startsWith(name.slice(0, 15))) continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += (Number(fields[11]) + Number(fields[12])) / tick;
    } catch {
      // the process ended between the listing and the read
    }
  }
  return total;
}

/** PostgreSQL: transactions committed in the whole database. */
async function commits(c: pg.Client): Promise<number> {
  const r = await c.query<{ n: string }>(
    "SELECT xact_commit AS n FROM pg_stat_database WHERE datname = 'postgres'",
  );
  return Number(r.rows[0]?.n ?? 0);
}

const loop = async (until: number): Promise<number> => {
  let runs = 0;
  while (Date.now() < until) {
    const out = await Promise.all(Array.from({ length: 16 }, () => runtime.invoke('a', 'x')));
    if (out.some((r) => r.status !== 'success')) throw new Error('a run failed');
    runs += 16;
  }
  return runs;
};

await loop(Date.now() + 1_000); // warm-up
const r0 = redis ? await redisCounts(redis) : null;
const c0 = db ? await commits(db) : 0;
const s0 = serverCpu();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const runs = await loop(Date.now() + ms);
const wall = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
const own = (cpu.user + cpu.system) / 1e6;
const server = serverCpu() - s0;
console.log(
  `${kind}: ${runs} two-step runs in ${wall.toFixed(1)} s, ${(runs / wall).toFixed(0)}/s`,
);
console.log(
  `  this process: ${((own / wall) * 100).toFixed(0)} % of a core, ${((own / runs) * 1e6).toFixed(0)} µs a run`,
);
console.log(
  `  ${kind}'s server: ${((server / wall) * 100).toFixed(0)} % of a core, ${((server / runs) * 1e6).toFixed(0)} µs a run`,
);
if (redis && r0) {
  const r1 = await redisCounts(redis);
  console.log(
    `  redis: ${((r1.commands - r0.commands) / runs).toFixed(1)} commands a run, ` +
      `${((r1.scripts - r0.scripts) / runs).toFixed(2)} script calls a run`,
  );
}
if (db) console.log(`  postgres: ${(((await commits(db)) - c0) / runs).toFixed(2)} commits a run`);
await runtime.close();
if (redis) {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
  await redis.quit();
}
if (db) {
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await db.end();
}
