/**
 * @module The Lua of durable agents' records in the Redis store (issue 46): the operations
 * `redis-actors.ts` queues in the store's one script (`redis-scripts.ts` puts them in
 * `BATCH`), each a check and its write together — an actor and its run created once, a
 * message accepted under its mailbox's bound, a wake fired once, a message's end with its
 * actor's state and mailbox. Keys a body builds from the prefix (`p`) are those of
 * `redis-actor-keys.ts`, all under the store's prefix and so in its one slot on a cluster.
 */

/** The durable agents' operations of the store's script, by their code. */
export const ActorOp = {
  openActor: 26,
  acceptMessage: 27,
  takeMessage: 28,
  setActorStatus: 29,
  endMessage: 30,
  putWake: 31,
  fireWake: 32,
  rearmWake: 33,
  deleteWakes: 34,
  putSchedule: 35,
  updateSchedule: 36,
  deleteSchedule: 37,
  range: 38,
  hashes: 39,
  actorsWith: 40,
} as const;

/** The code of one of {@link ActorOp}. */
export type ActorOpCode = (typeof ActorOp)[keyof typeof ActorOp];

/**
 * What a taken message's score in its mailbox is below a queued one's (its place in its
 * run's step list): taken ones sort first and `ZCOUNT (0 +inf` counts the queued.
 */
export const TAKEN_OFFSET = 1e15;

/**
 * Functions the actor operations share, defined in the script after `ops` (local to it).
 * `actor_status` moves an actor between the status indexes `sk` (idle, live, waiting);
 * `wake_index` adds a wake to (or takes it off) the indexes its fields put it in;
 * `drop_wake` removes a wake; `schedule_due` puts a schedule in the due index or takes it
 * off; `hashes_of` reads the hash of each id under a key prefix (a step's record fields
 * only, for steps: `read_step` of the store's `CALL_STATE`).
 */
export const ACTOR_HELPERS = `
local STATUS_AT = {idle = 1, live = 2, waiting = 3}
local function actor_status(key, sk, id, status)
  local old = cjson.decode(redis.call('HGET', key, 'status'))
  if old == status then return end
  if STATUS_AT[old] then redis.call('ZREM', sk[STATUS_AT[old]], id) end
  redis.call('ZADD', sk[STATUS_AT[status]], 0, id)
  redis.call('HSET', key, 'status', cjson.encode(status))
end
local function wake_index(p, key, id, add)
  local f = redis.call('HMGET', key, 'status', 'due_at', 'kind', 'event', 'user_id', 'actor_id', 'fired_at', 'created_at')
  if not f[1] then return end
  local function put(zkey, score)
    if add then redis.call('ZADD', zkey, score, id) else redis.call('ZREM', zkey, id) end
  end
  if f[2] == 'null' then put(p .. 'actor:' .. cjson.decode(f[6]) .. ':wakes', '+inf')
  else put(p .. 'actor:' .. cjson.decode(f[6]) .. ':wakes', f[2]) end
  if cjson.decode(f[1]) == 'pending' then
    if f[2] ~= 'null' then put(p .. 'wakes:due', f[2]) end
    if f[4] ~= 'null' then put(p .. 'wakes:ev:' .. f[5] .. ':' .. f[4], f[8]) end
  elseif cjson.decode(f[3]) ~= 'reminder' and f[7] ~= 'null' then
    put(p .. 'wakes:fired', f[7])
  end
end
local function drop_wake(p, id)
  local key = p .. 'wake:' .. id
  wake_index(p, key, id, false)
  redis.call('DEL', key)
end
local function schedule_due(key, due, id)
  local f = redis.call('HMGET', key, 'status', 'next_at')
  if f[1] and cjson.decode(f[1]) == 'active' and f[2] ~= 'null' then
    redis.call('ZADD', due, f[2], id)
  else
    redis.call('ZREM', due, id)
  end
end
local function hashes_of(prefix, ids, from, to, step)
  local out = {}
  for j = from, to do
    if step then out[#out + 1] = read_step(prefix .. ids[j])
    else out[#out + 1] = redis.call('HGETALL', prefix .. ids[j]) end
  end
  return out
end`;

/** The codes of the store's own operations the actor operations call. */
interface CoreOps {
  readonly createRun: number;
  readonly claimStep: number;
  readonly append: number;
  readonly endStep: number;
  readonly stepPatch: number;
}

/**
 * The bodies of {@link ActorOp}, each a Lua `function(k, a)` returning a value (never nil),
 * calling the store's own operations by their codes in `core`.
 */
export function actorBodies(core: CoreOps): Record<ActorOpCode, string> {
  return {
    // k[1] the actor's hash, k[2] its run's hash, k[3] the actors' creation counter, k[4..6]
    // the indexes by creation (all, user, name), k[7] the keys' index, k[8] its status's
    // index, k[9] on the run's indexes. a[1] the run's score there, a[2] its id, a[3] n, its
    // n fields and values; then the actor's member of the keys' index, its id, its fields and
    // values. → {'found', the actor's hash}, {'created'} or {'run-exists'}.
    [ActorOp.openActor]: `
if redis.call('EXISTS', k[1]) == 1 then return {'found', redis.call('HGETALL', k[1])} end
local n = tonumber(a[3])
local rk = {k[2]}
for j = 9, #k do rk[#rk + 1] = k[j] end
if ops[${core.createRun}](rk, {a[1], a[2], unpack(a, 4, 3 + n)}) == 0 then return {'run-exists'} end
local seq = redis.call('INCR', k[3])
local id = a[5 + n]
redis.call('HSET', k[1], unpack(a, 6 + n))
for j = 4, 6 do redis.call('ZADD', k[j], seq, id) end
redis.call('ZADD', k[7], 0, a[4 + n])
redis.call('ZADD', k[8], 0, id)
return {'created'}`,

    // k[1] the actor's hash, k[2] its mailbox, k[3] its run's hash, k[4] the step's hash,
    // k[5] the run's step list, k[6] the step's token key (k[3] without a token), k[7..9]
    // the status indexes. a[1] the mailbox's bound, a[2] the actor's id, a[3] the step's id,
    // then its fields and values. A token seen before answers before the bound is checked.
    // → Op.claimStep's answer, {'no-actor'} or {'full', name, key}.
    [ActorOp.acceptMessage]: `
if redis.call('EXISTS', k[1]) == 0 then return {'no-actor'} end
local seen = k[6] ~= k[3] and redis.call('GET', k[6])
if seen then return {'found', seen} end
if redis.call('ZCOUNT', k[2], '(0', '+inf') >= tonumber(a[1]) then
  return {'full', redis.call('HGET', k[1], 'name'), redis.call('HGET', k[1], 'key')}
end
local r = ops[${core.claimStep}]({k[3], k[4], k[5], k[6]}, {a[3], '0', unpack(a, 4)})
if r[1] ~= 'created' then return r end
flush()
redis.call('ZADD', k[2], redis.call('LLEN', k[5]), a[3])
if cjson.decode(redis.call('HGET', k[1], 'status')) == 'idle' then
  actor_status(k[1], {k[7], k[8], k[9]}, a[2], 'live')
end
return r`,

    // k[1] a mailbox. a[1] a step id. → 1; a queued message becomes taken, nothing else does.
    [ActorOp.takeMessage]: `
local s = redis.call('ZSCORE', k[1], a[1])
if s and tonumber(s) > 0 then
  redis.call('ZADD', k[1], string.format('%.17g', tonumber(s) - ${TAKEN_OFFSET}), a[1])
end
return 1`,

    // k[1] the actor's hash, k[2..4] the status indexes. a[1] its id, a[2] the status,
    // a[3] updated_at as JSON. → 1, or 0 without the actor.
    [ActorOp.setActorStatus]: `
if redis.call('EXISTS', k[1]) == 0 then return 0 end
actor_status(k[1], {k[2], k[3], k[4]}, a[1], a[2])
redis.call('HSET', k[1], 'updated_at', a[3])
return 1`,

    // A message's end with its actor's (StepEnd.actor), in one operation. k[1..3] as
    // Op.endStep's (the step's hash, the run's hash and ledger), k[4] the actor's hash, k[5]
    // its mailbox, k[6..8] the status indexes, k[9] the actor's wakes, then each merged
    // step's hash. a: the prefix, the actor's id, the step's id; n and Op.endStep's n
    // arguments (with no events); the number of events, then each one's step (1 the ended
    // one, 2 on the merged ones), seq and JSON; the number of merged steps, then each one's
    // id, n and its n patch fields and values; '1' and the new state and version (else '0',
    // '', ''); updated_at as JSON. Checked before anything is written. → Op.endStep's answer
    // (its append's refusal naming the step by that order), or {'no-actor'}.
    [ActorOp.endMessage]: `
local i = 0
local function nxt() i = i + 1 return a[i] end
local function take(n) local t = {unpack(a, i + 1, i + n)} i = i + n return t end
local p, id, main = nxt(), nxt(), nxt()
local sub = take(tonumber(nxt()))
local ne = tonumber(nxt())
local events = take(ne * 3)
local merged = {}
for m = 1, tonumber(nxt()) do
  local sid = nxt()
  merged[m] = {sid, take(tonumber(nxt()))}
end
local has, state, version, updated = nxt(), nxt(), nxt(), nxt()
if redis.call('EXISTS', k[4]) == 0 then return {'no-actor'} end
if not step_of(k[1]) then return {'missing', 1} end
if #sub > 2 + tonumber(sub[2]) and not run_exists(k[2]) then return {'no-run'} end
if ne > 0 then
  local ak = {k[1]}
  for j = 10, #k do ak[#ak + 1] = k[j] end
  local r = ops[${core.append}](ak, events)
  if r[1] ~= 'ok' then return r end
end
local r = ops[${core.endStep}]({k[1], k[2], k[3]}, sub)
if r[1] ~= 'ok' then return r end
local gone = {[main] = true}
redis.call('ZREM', k[5], main)
for m, entry in ipairs(merged) do
  gone[entry[1]] = true
  redis.call('ZREM', k[5], entry[1])
  ops[${core.stepPatch}]({k[9 + m]}, entry[2])
end
for _, w in ipairs(redis.call('ZRANGE', k[9], 0, -1)) do
  local s = redis.call('HGET', p .. 'wake:' .. w, 'step_id')
  if s and s ~= 'null' and gone[cjson.decode(s)] then drop_wake(p, w) end
end
if has == '1' then redis.call('HSET', k[4], 'state', state, 'version', version) end
redis.call('HSET', k[4], 'updated_at', updated)
local queued = redis.call('ZCOUNT', k[5], '(0', '+inf')
actor_status(k[4], {k[6], k[7], k[8]}, id, queued > 0 and 'live' or 'idle')
return {'ok'}`,

    // k[1] the wake's hash. a[1] the prefix, a[2] its id, then its fields and values.
    // → {'created'}, or {'found', its hash} (nothing written).
    [ActorOp.putWake]: `
if redis.call('EXISTS', k[1]) == 1 then return {'found', redis.call('HGETALL', k[1])} end
redis.call('HSET', k[1], unpack(a, 3))
wake_index(a[1], k[1], a[2], true)
return {'created'}`,

    // k[1] the wake's hash. a[1] the prefix, a[2] its id, a[3] data, a[4] fired_at, a[5]
    // timed_out (JSON each). → its hash fired, or 0 when it was not pending.
    [ActorOp.fireWake]: `
local s = redis.call('HGET', k[1], 'status')
if not s or cjson.decode(s) ~= 'pending' then return 0 end
wake_index(a[1], k[1], a[2], false)
redis.call('HSET', k[1], 'status', '"fired"', 'data', a[3], 'fired_at', a[4], 'timed_out', a[5])
wake_index(a[1], k[1], a[2], true)
return redis.call('HGETALL', k[1])`,

    // k[1] the wake's hash. a[1] the prefix, a[2] its id, a[3] its new due time. → 1, or 0
    // without the wake.
    [ActorOp.rearmWake]: `
if redis.call('EXISTS', k[1]) == 0 then return 0 end
wake_index(a[1], k[1], a[2], false)
redis.call('HSET', k[1], 'status', '"pending"', 'due_at', a[3], 'fired_at', 'null')
wake_index(a[1], k[1], a[2], true)
return 1`,

    // k[1] the due wakes' index (where the call goes on a cluster). a[1] the prefix, then
    // wake ids. → 1; an unknown id is passed over.
    [ActorOp.deleteWakes]: `
for j = 2, #a do drop_wake(a[1], a[j]) end
return 1`,

    // k[1] the schedule's hash, k[2] the schedules' creation counter, k[3..4] the indexes
    // by creation (all, user), k[5] the due index. a[1] its id, then its fields and values.
    // → {'created'}, or {'found', its hash} (nothing written).
    [ActorOp.putSchedule]: `
if redis.call('EXISTS', k[1]) == 1 then return {'found', redis.call('HGETALL', k[1])} end
redis.call('HSET', k[1], unpack(a, 2))
local seq = redis.call('INCR', k[2])
redis.call('ZADD', k[3], seq, a[1])
redis.call('ZADD', k[4], seq, a[1])
schedule_due(k[1], k[5], a[1])
return {'created'}`,

    // k[1] the schedule's hash, k[2] the due index. a[1] its id, then fields and values.
    // → 1, or 0 without the schedule.
    [ActorOp.updateSchedule]: `
if redis.call('EXISTS', k[1]) == 0 then return 0 end
if #a > 1 then redis.call('HSET', k[1], unpack(a, 2)) end
schedule_due(k[1], k[2], a[1])
return 1`,

    // k[1] the schedule's hash, k[2] the index of all, k[3] the due index. a[1] its id,
    // a[2] the prefix of the by-user indexes. → 1, or 0 without the schedule.
    [ActorOp.deleteSchedule]: `
local u = redis.call('HGET', k[1], 'user_id')
if not u then return 0 end
redis.call('ZREM', k[2], a[1])
redis.call('ZREM', k[3], a[1])
redis.call('ZREM', a[2] .. u, a[1])
redis.call('DEL', k[1])
return 1`,

    // A read: k[1] a sorted set. a[1] the key prefix of its members' hashes, a[2] 'rank' or
    // 'score', a[3] and a[4] the range (start, stop; min, max), a[5] a count for 'score'
    // (-1 all), a[6] '1' when the members are steps. → each member's hash (flat; a step's
    // record fields), in the set's order.
    [ActorOp.range]: `
local ids
if a[2] == 'score' then
  ids = redis.call('ZRANGE', k[1], a[3], a[4], 'BYSCORE', 'LIMIT', 0, a[5])
else
  ids = redis.call('ZRANGE', k[1], a[3], a[4])
end
return hashes_of(a[1], ids, 1, #ids, a[6] == '1')`,

    // A read: k[1] a key in the slot (on a cluster). a[1] a key prefix, then ids. → the hash
    // of each, flat (empty for none), in order.
    [ActorOp.hashes]: `
local ids = {unpack(a, 2)}
return hashes_of(a[1], ids, 1, #ids)`,

    // A read: k the status indexes asked. a[1] the lexical start ('-', or '(' and an id),
    // a[2] the count, a[3] the prefix of actors' hashes. → the actors' hashes in id order.
    [ActorOp.actorsWith]: `
local ids = {}
for _, key in ipairs(k) do
  for _, id in ipairs(redis.call('ZRANGE', key, a[1], '+', 'BYLEX', 'LIMIT', 0, a[2])) do
    ids[#ids + 1] = id
  end
end
table.sort(ids)
return hashes_of(a[3], ids, 1, math.min(#ids, tonumber(a[2])))`,
  };
}
