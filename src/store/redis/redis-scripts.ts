/**
 * @module The Redis store's Lua: every write is one operation of {@link BATCH}, the one
 * script the store runs. Each operation is a function of its own keys (`k`) and arguments
 * (`a`) and does its check and its write together, so processes sharing the store never
 * interleave inside one; the writes a process makes in one turn of its event loop travel
 * in one call of the script (one socket write, one reply) and run in order. A step's own
 * operations (its one hash, format 2) are in `redis-step-scripts.ts`.
 */

import { ACTOR_HELPERS, ActorOp, actorBodies } from './redis-actor-scripts.js';
import { CALL_STATE, stepBodies } from './redis-step-scripts.js';

/** The store's own operations of {@link BATCH} (durable agents' are {@link ActorOp}). */
const CoreOp = {
  createRun: 1,
  createStep: 2,
  claimStep: 3,
  putFlow: 4,
  appendFact: 5,
  appendIfRun: 6,
  putRecording: 7,
  releaseToken: 8,
  addUsage: 9,
  patch: 10,
  append: 11,
  createApproval: 12,
  swapApproval: 13,
  guard: 14,
  reserve: 15,
  settle: 16,
  patchRun: 17,
  indexRun: 18,
  endStep: 19,
  then: 20,
  stream: 21,
  ended: 22,
  read: 23,
  list: 24,
  take: 25,
  stepPatch: 41,
  readStep: 42,
  events: 43,
  steps: 44,
  watch: 45,
} as const;

/** The operations of {@link BATCH}, by their code in its arguments. */
export const Op = { ...CoreOp, ...ActorOp } as const;

/** The code of one operation of {@link BATCH}. */
export type OpCode = (typeof Op)[keyof typeof Op];

/**
 * The operations that hold their writes for the end of the call (or read nothing another
 * operation holds): any other makes what is held first (see `CALL_STATE`).
 */
const HOLDING: readonly OpCode[] = [
  Op.createStep,
  Op.claimStep,
  Op.stepPatch,
  Op.append,
  Op.endStep,
  Op.ended,
  Op.take,
  Op.watch,
  Op.endMessage,
];

/** What an operation that failed inside the script returns instead of its result. */
export const OP_ERROR = '!err';
/** What an operation returns, not run, when a guard before it did not hold. */
export const OP_FENCED = '!fenced';

/**
 * A fleet step's end, said, as a script of its own runs it (`fleet-relay.ts`; in the store's
 * script, `Op.ended` holds its writes for the call's end): k[1] the fleet's ended stream,
 * k[2] the pool's counters (k[1] for none), k[3] the step's fence (k[1] for none), k[4] the
 * fleet's open steps. a: the step id, its status, the stream's max length, the counter's
 * field, the fence's token. → 1 said, 0 not (the fence holds another's token). The step
 * leaves the open steps. The fence is the step's job lock, which the job's finish deletes:
 * it is not touched here.
 */
export const ENDED = `
if k[3] ~= k[1] and redis.call('GET', k[3]) ~= a[5] then return 0 end
redis.call('ZREM', k[4], a[1])
redis.call('XADD', k[1], 'MAXLEN', '~', a[3], '*', a[1], a[2])
if k[2] ~= k[1] then redis.call('HINCRBY', k[2], a[4], 1) end
return 1`;

const STEP = stepBodies(Op);

// Each body is a Lua function(k, a) and returns a value (never nil: a nil would cut the
// reply's array short).
const BODIES: Record<OpCode, string> = {
  // k[1] the run's hash; k[2] and on, the indexes it goes in (redis-run-index.ts). a[1] its
  // score there (created_at, ms), a[2] its id, then field, value, …  → 1, or 0 if it exists.
  [Op.createRun]: `
if redis.call('EXISTS', k[1]) == 1 then return 0 end
redis.call('HSET', k[1], unpack(a, 3))
for i = 2, #k do redis.call('ZADD', k[i], a[1], a[2]) end
return 1`,

  // k[1] a run's hash, k[2] the index of every run. a[1] the indexes' key prefix, a[2] the
  // run's id, then field, value, … → 1, or 0 if there is no such run. A new status moves the
  // run between the indexes by status (and by user and status), in the same call.
  [Op.patchRun]: `
if redis.call('EXISTS', k[1]) == 0 then return 0 end
local old = redis.call('HGET', k[1], 'status')
redis.call('HSET', k[1], unpack(a, 3))
local new = redis.call('HGET', k[1], 'status')
local score = redis.call('ZSCORE', k[2], a[2])
if old ~= new and score then
  local user = a[1] .. ':u:' .. redis.call('HGET', k[1], 'user_id') .. ':s:'
  local was, is = cjson.decode(old), cjson.decode(new)
  redis.call('ZREM', a[1] .. ':s:' .. was, a[2])
  redis.call('ZREM', user .. was, a[2])
  redis.call('ZADD', a[1] .. ':s:' .. is, score, a[2])
  redis.call('ZADD', user .. is, score, a[2])
end
return 1`,

  // Puts a run stored before the indexes were kept in them. k[1] the run's hash. a[1] the
  // indexes' key prefix, a[2] the run's id, a[3] its score. → 1, or 0 without the run.
  [Op.indexRun]: `
local h = redis.call('HMGET', k[1], 'status', 'user_id', 'entry')
if not h[1] then return 0 end
local status, entry = cjson.decode(h[1]), cjson.decode(h[3])
local user = a[1] .. ':u:' .. h[2]
for _, key in ipairs({a[1], a[1] .. ':s:' .. status, user, user .. ':s:' .. status, a[1] .. ':e:' .. entry}) do
  redis.call('ZADD', key, a[3], a[2])
end
return 1`,

  [Op.createStep]: STEP.createStep,
  [Op.claimStep]: STEP.claimStep,
  [Op.stepPatch]: STEP.stepPatch,
  [Op.append]: STEP.append,
  [Op.endStep]: STEP.endStep,
  [Op.readStep]: STEP.readStep,
  [Op.events]: STEP.events,
  [Op.steps]: STEP.steps,
  [Op.watch]: STEP.watch,
  [Op.ended]: STEP.ended,

  // k[1] the flow-by-hash key, k[2] the flow's hash. a[1] the flow id, then fields.
  // → {'created'}, {'found', id}, {'exists'} (the flow id is taken by other content).
  [Op.putFlow]: `
local found = redis.call('GET', k[1])
if found then return {'found', found} end
if redis.call('EXISTS', k[2]) == 1 then return {'exists'} end
redis.call('HSET', k[2], unpack(a, 2))
redis.call('SET', k[1], a[1])
return {'created'}`,

  // k[1] the run's hash, k[2] the run's facts, k[3] the fact ids, k[4] the flow's facts
  // (or the run's again). a[1] the fact id, a[2] its JSON, a[3] '1' to add to the flow's
  // list. → 1; 0 if the fact id is taken; -1 without the run.
  [Op.appendFact]: `
if redis.call('EXISTS', k[1]) == 0 then return -1 end
if redis.call('SADD', k[3], a[1]) == 0 then return 0 end
redis.call('RPUSH', k[2], a[2])
if a[3] == '1' then redis.call('RPUSH', k[4], a[2]) end
return 1`,

  // k[1] the run's hash, k[2] a list of it. a[1] the JSON. → 1, or -1 without the run.
  [Op.appendIfRun]: `
if redis.call('EXISTS', k[1]) == 0 then return -1 end
redis.call('RPUSH', k[2], a[1])
return 1`,

  // k[1] the run's hash, k[2] its recordings (a hash by call key), k[3] the call keys in
  // the order first stored. a[1] the call key, a[2] the JSON. → 1, or -1 without the run.
  [Op.putRecording]: `
if redis.call('EXISTS', k[1]) == 0 then return -1 end
if redis.call('HSET', k[2], a[1], a[2]) == 1 then redis.call('RPUSH', k[3], a[1]) end
return 1`,

  // k[1] the step's hash. a[1] the prefix of run keys. → 1, or -1 without the step.
  // The run's token key is freed only if it still names this step.
  [Op.releaseToken]: `
local raw = redis.call('HGET', k[1], 'client_token')
if not raw then return -1 end
local token = cjson.decode(raw)
if token ~= cjson.null then
  local run = cjson.decode(redis.call('HGET', k[1], 'run_id'))
  local key = a[1] .. run .. ':token:' .. token
  local id = cjson.decode(redis.call('HGET', k[1], 'step_id'))
  if redis.call('GET', key) == id then redis.call('DEL', key) end
  redis.call('HSET', k[1], 'client_token', 'null')
end
return 1`,

  // k[1] the run's hash, k[2] its budget ledger. a: tokens_in, tokens_out, cost_usd, wall_ms
  // to add; a[5], when given, the step whose use it is: its ledger entry goes (see
  // Op.reserve). → the new usage as JSON, or 0 without the run. Numbers are summed in Lua and
  // written back with string.format('%.17g'), which keeps a double's every digit.
  [Op.addUsage]: `
local raw = redis.call('HGET', k[1], 'budget_usage')
if not raw then return 0 end
local u = cjson.decode(raw)
local function sum(x, y) return string.format('%.17g', (tonumber(x) or 0) + tonumber(y)) end
local out = '{"tokens_in":' .. sum(u.tokens_in, a[1]) ..
  ',"tokens_out":' .. sum(u.tokens_out, a[2]) ..
  ',"cost_usd":' .. sum(u.cost_usd, a[3]) ..
  ',"wall_ms":' .. sum(u.wall_ms, a[4]) .. '}'
redis.call('HSET', k[1], 'budget_usage', out)
if a[5] then redis.call('HDEL', k[2], 's:' .. a[5]) end
return out`,

  // A run's budget ledger (k[2]) holds an entry per running step, 's:<step id>' →
  // '<attempt token> <tokens_in> <tokens_out> <cost_usd>': what that attempt reserved and
  // used so far. k[1] the run's hash. a: the step id, the attempt's token, the amounts to
  // reserve (3), the run's limits (3, '' for none). Fits when the run's ended use
  // (budget_usage), every entry and the amounts stay within each limit; an entry of another
  // attempt at the same step (one lost) is dropped first. → {'ok'}; {'over', dimension
  // (1-3), what was left} and nothing reserved; 0 without the run.
  [Op.reserve]: `
local raw = redis.call('HGET', k[1], 'budget_usage')
if not raw then return 0 end
local u = cjson.decode(raw)
local used = {tonumber(u.tokens_in) or 0, tonumber(u.tokens_out) or 0, tonumber(u.cost_usd) or 0}
local mine = 's:' .. a[1]
local own = {0, 0, 0}
local flat = redis.call('HGETALL', k[2])
for i = 1, #flat, 2 do
  local h, x, y, z = string.match(flat[i + 1], '^(%S+) (%S+) (%S+) (%S+)$')
  local v = {tonumber(x), tonumber(y), tonumber(z)}
  if flat[i] ~= mine then
    for d = 1, 3 do used[d] = used[d] + v[d] end
  elseif h == a[2] then
    own = v
  end
end
for d = 1, 3 do
  local limit = a[5 + d]
  if limit ~= '' then
    local left = tonumber(limit) - used[d] - own[d]
    if tonumber(a[2 + d]) > left + 1e-9 then
      return {'over', d, string.format('%.17g', math.max(0, left))}
    end
  end
end
local f = function(d) return string.format('%.17g', own[d] + tonumber(a[2 + d])) end
redis.call('HSET', k[2], mine, a[2] .. ' ' .. f(1) .. ' ' .. f(2) .. ' ' .. f(3))
return {'ok'}`,

  // k[1] a run's budget ledger (see Op.reserve). a: the step id, the attempt's token, the
  // amounts to add (3; negative gives back, never below 0). → 1, or 0 when the entry is gone
  // or another attempt's.
  [Op.settle]: `
local key = 's:' .. a[1]
local now = redis.call('HGET', k[1], key)
if not now then return 0 end
local h, x, y, z = string.match(now, '^(%S+) (%S+) (%S+) (%S+)$')
if h ~= a[2] then return 0 end
local v = {tonumber(x), tonumber(y), tonumber(z)}
local f = function(d) return string.format('%.17g', math.max(0, v[d] + tonumber(a[2 + d]))) end
redis.call('HSET', k[1], key, h .. ' ' .. f(1) .. ' ' .. f(2) .. ' ' .. f(3))
return 1`,

  // k[1] the hash. a: field, value, …  → 1, or 0 if there is no such record.
  [Op.patch]: `
if redis.call('EXISTS', k[1]) == 0 then return 0 end
if #a > 0 then redis.call('HSET', k[1], unpack(a)) end
return 1`,

  // k[1] a stream. a[1] its approximate max length, a[2] how long it lives past this entry
  // (ms), a[3] the entry's field, a[4] its value. → 1.
  [Op.stream]: `
redis.call('XADD', k[1], 'MAXLEN', '~', a[1], '*', a[3], a[4])
redis.call('PEXPIRE', k[1], a[2])
return 1`,

  // k[1] a hash. → its fields and values, flat (empty without it).
  [Op.read]: `return redis.call('HGETALL', k[1])`,

  // k[1] a list. → its items.
  [Op.list]: `return redis.call('LRANGE', k[1], 0, -1)`,

  // A turn taken (under the guard of its fence): k[1] a mark. → 1 when the mark exists, else 0.
  [Op.take]: `return redis.call('EXISTS', k[1])`,

  ...actorBodies(CoreOp),

  // k[1] the run's hash, k[2] the approval's key, k[3] the run's approval ids.
  // a[1] the approval id, a[2] its JSON. → 1 stored, 0 already there (unchanged), -1
  // without the run.
  [Op.createApproval]: `
if redis.call('EXISTS', k[1]) == 0 then return -1 end
if redis.call('SET', k[2], a[2], 'NX') then
  redis.call('RPUSH', k[3], a[1])
  return 1
end
return 0`,

  // k[1] a fence's key, a[1] the token the writer holds. → 1 when the key holds it, else 0
  // (and the next operation that is not a guard does not run: see BATCH).
  [Op.guard]: `
if fence_holds(k[1], a[1]) then return 1 end
return 0`,

  // k[1] the approval's key. a[1] the JSON it must still hold, a[2] the new JSON.
  // → 1 swapped, 0 it holds something else (decided meanwhile), -1 no such approval.
  // Stops the next operation unless the one before it succeeded (returned 1 or {'ok'}): see
  // BATCH. No keys, no arguments.
  [Op.then]: `return 1`,

  [Op.swapApproval]: `
local now = redis.call('GET', k[1])
if not now then return -1 end
if now ~= a[1] then return 0 end
redis.call('SET', k[1], a[2])
return 1`,
};

/**
 * The store's one script. ARGV[1] the number of operations, ARGV[2] the prefix of the fleet's
 * wake streams (`''`: none is woken), then for each operation: its code, its number of keys,
 * its number of arguments, its arguments; KEYS holds every operation's keys in order. → one
 * result per operation, in order; an operation that raised an error returns `{OP_ERROR,
 * message}` and the ones after it still run. A `guard` that does not hold stops the next
 * operation that is not a guard: it returns `{OP_FENCED}`, not run — the check and the write
 * in one script, so no writer whose turn is over slips in between. A `then` stops the next
 * operation the same way unless the one before it succeeded. What the operations hold is
 * written before an operation not in {@link HOLDING}, and at the end (`CALL_STATE`).
 */
export const BATCH = `
local ops = {}
${CALL_STATE}
${ACTOR_HELPERS}
${Object.entries(BODIES)
  .map(([code, body]) => `ops[${code}] = function(k, a)${body}\nend`)
  .join('\n')}
local holding = {${HOLDING.map((code) => `[${code}] = true`).join(', ')}}
local out = {}
local blocked = false
local ki, ai = 1, 3
for o = 1, tonumber(ARGV[1]) do
  local code = tonumber(ARGV[ai])
  local nk = tonumber(ARGV[ai + 1])
  local na = tonumber(ARGV[ai + 2])
  local k, a = {}, {}
  for j = 1, nk do k[j] = KEYS[ki + j - 1] end
  for j = 1, na do a[j] = ARGV[ai + 2 + j] end
  ki = ki + nk
  ai = ai + 3 + na
  if code == ${Op.guard} then
    out[o] = ops[code](k, a)
    if out[o] == 0 then blocked = true end
  elseif code == ${Op.then} then
    local prev = out[o - 1]
    out[o] = 1
    if not (prev == 1 or (type(prev) == 'table' and prev[1] == 'ok')) then blocked = true end
  elseif blocked then
    out[o] = {'${OP_FENCED}'}
    blocked = false
  else
    if not holding[code] then flush() end
    local ok, res = pcall(ops[code], k, a)
    if ok then out[o] = res else out[o] = {'${OP_ERROR}', tostring(res)} end
  end
end
flush()
return out`;
