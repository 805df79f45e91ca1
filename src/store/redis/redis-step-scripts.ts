/**
 * @module The Lua of a step's one record in the Redis store (format 2, issue 47): a step is
 * one hash — its record's fields (each as JSON), its log (event `seq` → the event's JSON,
 * fields `1` … `n`), `n` (its last `seq`) and `w` (the fleet processes it wakes) — so a short
 * step costs one `HSET` when it is claimed and one when it ends, its events in it.
 *
 * Within one call of the store's script ({@link CALL_STATE}) the writes of its operations to
 * a step, to a run's use and to the fleet's shared keys are held and made once at the end (or
 * before an operation that reads what they change): the started patch and the `started`
 * event of a step are one `HSET`; the ends of eight steps of one run add their use to it with
 * one `HSET` and take their ledger entries off with one `HDEL`; their notices are one `XADD`,
 * one `ZREM` and one `HINCRBY`. A fence checked once in a call holds for the rest of it.
 */
import { STEP_FIELDS } from './redis-fields.js';

/** Entries a process's wake stream keeps (approximately). */
export const WAKE_MAX_LEN = 1000;

/** The most watchers a step keeps: a process gone leaves its id until a newer one pushes it out. */
const MAX_WATCHERS = 16;

/**
 * `migrate_log(key)` (Lua): a step stored in format 1 (its hash without `n`, its log the list
 * `<prefix>log:<id>`) moved into format 2 in place — the list's events into the hash, `n`
 * set, the list deleted; → its `n`. Run at start for every log (`redis-format.ts`), and by
 * the script for a step it finds without `n` (one a store of format 1 left after that).
 */
export const MIGRATE_LOG = `
local function migrate_log(key)
  local log = (string.gsub(key, 'step:([^:]*)$', 'log:%1'))
  local len = redis.call('LLEN', log)
  for from = 0, len - 1, 500 do
    local fv = {}
    for j, item in ipairs(redis.call('LRANGE', log, from, from + 499)) do
      fv[#fv + 1] = tostring(from + j)
      fv[#fv + 1] = item
    end
    redis.call('HSET', key, unpack(fv))
  end
  if len > 0 then redis.call('DEL', log) end
  redis.call('HSET', key, 'n', tostring(len))
  return len
end`;

/**
 * What one call of the script keeps (Lua, defined before the operations): the fences that
 * held, the steps read, the writes held for the end of the call, and `flush()`, which makes
 * them. `ARGV[2]` is the prefix of the watchers' wake streams (`''`: none are woken).
 */
export const CALL_STATE = `${MIGRATE_LOG}
local held = {}
local function fence_holds(key, token)
  if held[key] == token then return true end
  if redis.call('GET', key) == token then
    held[key] = token
    return true
  end
  return false
end
local STEP_FIELDS = {${STEP_FIELDS.map((f) => `'${f}'`).join(', ')}}
local wake_prefix = ARGV[2]
local steps, dirty, runs_seen, usage = {}, {}, {}, {}
local lists, zadds, zrems, xadds, incrs = {}, {}, {}, {}, {}
local pending = false
local function later(t, key, a, b)
  local list = t[key]
  if not list then
    list = {}
    t[key] = list
  end
  list[#list + 1] = a
  if b ~= nil then list[#list + 1] = b end
  pending = true
end
local function chunked(cmd, key, head, list)
  local at = 1
  while at <= #list do
    local to = math.min(#list, at + 999)
    local args = {}
    for _, h in ipairs(head) do args[#args + 1] = h end
    for j = at, to do args[#args + 1] = list[j] end
    redis.call(cmd, key, unpack(args))
    at = to + 1
  end
end
local function run_exists(key)
  local e = runs_seen[key]
  if e == nil then
    e = redis.call('EXISTS', key) == 1
    runs_seen[key] = e
  end
  return e
end
local function step_of(key)
  local s = steps[key]
  if s == nil then
    local f = redis.call('HMGET', key, 'n', 'w', 'step_id')
    if f[1] then
      s = {n = tonumber(f[1]), w = f[2] or false}
    elseif f[3] then
      s = {n = migrate_log(key), w = f[2] or false}
    else
      s = false
    end
    steps[key] = s
  end
  return s
end
local function step_put(key, s, field, value)
  if not s.pend then
    s.pend = {}
    dirty[#dirty + 1] = key
    pending = true
  end
  s.pend[#s.pend + 1] = field
  s.pend[#s.pend + 1] = value
end
local function new_step(key, list, a, from)
  local s = {n = 0, w = false}
  steps[key] = s
  for j = from, #a, 2 do step_put(key, s, a[j], a[j + 1]) end
  step_put(key, s, 'n', '0')
  later(lists, list, a[1])
end
local function stored_event(key, s, seq)
  if s.pend then
    for j = #s.pend - 1, 1, -2 do
      if s.pend[j] == seq then return s.pend[j + 1] end
    end
  end
  return redis.call('HGET', key, seq)
end
local function usage_of(run, ledger)
  local u = usage[run]
  if u == nil then
    local raw = redis.call('HGET', run, 'budget_usage')
    if raw then
      local d = cjson.decode(raw)
      u = {tonumber(d.tokens_in) or 0, tonumber(d.tokens_out) or 0, tonumber(d.cost_usd) or 0,
        tonumber(d.wall_ms) or 0, ledger = ledger, drop = {}, changed = false}
    else
      u = false
    end
    usage[run] = u
  end
  return u
end
local function usage_json(u)
  local function f(x) return string.format('%.17g', x) end
  return '{"tokens_in":' .. f(u[1]) .. ',"tokens_out":' .. f(u[2]) ..
    ',"cost_usd":' .. f(u[3]) .. ',"wall_ms":' .. f(u[4]) .. '}'
end
local function read_step(key)
  local f = redis.call('HMGET', key, unpack(STEP_FIELDS))
  local out = {}
  for j, name in ipairs(STEP_FIELDS) do
    if f[j] then
      out[#out + 1] = name
      out[#out + 1] = f[j]
    end
  end
  return out
end
local function flush()
  if not pending then return end
  local wakes = {}
  for _, key in ipairs(dirty) do
    local s = steps[key]
    if s and s.pend then
      chunked('HSET', key, {}, s.pend)
      if s.woke and s.w and wake_prefix ~= '' then
        local id = string.match(key, '([^:]*)$')
        for watcher in string.gmatch(s.w, '%S+') do later(wakes, wake_prefix .. watcher, id, tostring(s.n)) end
      end
    end
  end
  for key, u in pairs(usage) do
    if u and u.changed then redis.call('HSET', key, 'budget_usage', usage_json(u)) end
    if u and #u.drop > 0 then chunked('HDEL', u.ledger, {}, u.drop) end
  end
  for key, ids in pairs(lists) do chunked('RPUSH', key, {}, ids) end
  for key, flat in pairs(zadds) do chunked('ZADD', key, {}, flat) end
  for key, ids in pairs(zrems) do chunked('ZREM', key, {}, ids) end
  for key, x in pairs(xadds) do chunked('XADD', key, {'MAXLEN', '~', x.len, '*'}, x.flat) end
  for key, fields in pairs(incrs) do
    for field, by in pairs(fields) do redis.call('HINCRBY', key, field, by) end
  end
  for key, flat in pairs(wakes) do
    chunked('XADD', key, {'NOMKSTREAM', 'MAXLEN', '~', '${WAKE_MAX_LEN}', '*'}, flat)
  end
  steps, dirty, runs_seen, usage = {}, {}, {}, {}
  lists, zadds, zrems, xadds, incrs = {}, {}, {}, {}, {}
  pending = false
end`;

/** The codes of the operations a step's bodies call, or are. */
interface StepOps {
  readonly append: number;
}

/**
 * The bodies of a step's operations (Lua `function(k, a)`, each returning a value, never
 * nil), by name: `redis-scripts.ts` puts them in the script under their codes. Those that
 * write hold their writes for the call's `flush()` (see {@link CALL_STATE}).
 */
export function stepBodies(op: StepOps) {
  return {
    // k[1] the run's hash, k[2] the step's hash, k[3] the run's step list.
    // a[1] the step id, then field, value, …  → 1; 0 if the step exists; -1 without the run.
    createStep: `
if not run_exists(k[1]) then return -1 end
if step_of(k[2]) then return 0 end
new_step(k[2], k[3], a, 2)
return 1`,

    // k[1] the run's hash, k[2] the step's hash, k[3] the run's step list, k[4] the
    // step-by-token key (k[1] again for a step without a token: an absent key is named by the
    // operation's first, which is in its slot on a cluster), k[5] (a queued step's) the
    // fleet's open steps. a[1] the step id, a[2] its score there (ms), then field, value, …
    // → {'created'}, {'found', id}, {'exists'} (the step id is taken), {'no-run'}.
    claimStep: `
if not run_exists(k[1]) then return {'no-run'} end
local found = k[4] ~= k[1] and redis.call('GET', k[4])
if found then return {'found', found} end
if step_of(k[2]) then return {'exists'} end
new_step(k[2], k[3], a, 3)
if k[4] ~= k[1] then redis.call('SET', k[4], a[1]) end
if k[5] then later(zadds, k[5], a[2], a[1]) end
return {'created'}`,

    // k[1] the step's hash. a: field, value, …  → 1, or 0 without the step.
    stepPatch: `
local s = step_of(k[1])
if not s then return 0 end
for j = 1, #a, 2 do step_put(k[1], s, a[j], a[j + 1]) end
return 1`,

    // k: the hash of each step in the batch. a: for each event, the index (1-based) of its
    // step in k, its seq, its JSON. The whole batch is checked before anything is written.
    // An event already in the log byte for byte at its seq is skipped: the same append sent
    // again (ioredis resends what a dropped connection left unanswered, though Redis may
    // have made it) changes nothing and is not refused.
    // → {'ok'}, {'missing', i} or {'seq', i, expected, got}.
    append: `
local st, last, prev, skip = {}, {}, {}, {}
local n = #a / 3
for e = 0, n - 1 do
  local i = tonumber(a[e * 3 + 1])
  local seq = tonumber(a[e * 3 + 2])
  if st[i] == nil then
    st[i] = step_of(k[i])
    if not st[i] then return {'missing', i} end
    last[i] = st[i].n
  elseif seq ~= prev[i] + 1 then
    return {'seq', i, prev[i] + 1, seq}
  end
  prev[i] = seq
  if seq >= 1 and seq <= st[i].n and stored_event(k[i], st[i], a[e * 3 + 2]) == a[e * 3 + 3] then
    skip[e] = true
  elseif seq ~= last[i] + 1 then
    return {'seq', i, last[i] + 1, seq}
  else
    last[i] = seq
  end
end
for e = 0, n - 1 do
  if not skip[e] then
    local i = tonumber(a[e * 3 + 1])
    step_put(k[i], st[i], a[e * 3 + 2], a[e * 3 + 3])
  end
end
for i, s in pairs(st) do
  if last[i] > s.n then
    s.n = last[i]
    s.woke = true
    step_put(k[i], s, 'n', tostring(s.n))
  end
end
return {'ok'}`,

    // A step's end in one operation. k[1] the step's hash, k[2] its run's hash, k[3] the
    // run's budget ledger. a[1] n, the events, then each one's seq and JSON (as append);
    // then the patch's field count and its fields, values; then, to add to the run,
    // tokens_in, tokens_out, cost_usd, wall_ms and the step id (its ledger entry goes), or
    // nothing. Checked before anything is written. → {'ok'}, append's refusal, {'missing',
    // 1} without the step, {'no-run'}. Numbers are summed in Lua and written back with
    // string.format('%.17g'), which keeps a double's every digit.
    endStep: `
local n = tonumber(a[1])
local at = 2 + n * 2
local np = tonumber(a[at])
local from = at + np + 1
local s = step_of(k[1])
if not s then return {'missing', 1} end
local u = false
if a[from] then
  u = usage_of(k[2], k[3])
  if not u then return {'no-run'} end
end
if n > 0 then
  local ea = {}
  for e = 0, n - 1 do
    ea[e * 3 + 1], ea[e * 3 + 2], ea[e * 3 + 3] = '1', a[2 + e * 2], a[3 + e * 2]
  end
  local r = ops[${op.append}]({k[1]}, ea)
  if r[1] ~= 'ok' then return r end
end
for j = at + 1, at + np, 2 do step_put(k[1], s, a[j], a[j + 1]) end
if u then
  for d = 1, 4 do u[d] = u[d] + tonumber(a[from + d - 1]) end
  u.changed = true
  u.drop[#u.drop + 1] = 's:' .. a[from + 4]
  pending = true
end
return {'ok'}`,

    // A read: k[1] a step's hash. → its record's fields and values, flat (empty without it).
    readStep: `return read_step(k[1])`,

    // A read: k[1] a step's hash. a[1] the seq after which to read, a[2] how many at most
    // (-1: all). → the events' JSON, in order.
    events: `
local s = step_of(k[1])
if not s then return {} end
local from = tonumber(a[1]) + 1
local to = s.n
if tonumber(a[2]) >= 0 then to = math.min(to, tonumber(a[1]) + tonumber(a[2])) end
local out = {}
while from <= to do
  local upto = math.min(to, from + 999)
  local names = {}
  for seq = from, upto do names[#names + 1] = tostring(seq) end
  for _, v in ipairs(redis.call('HMGET', k[1], unpack(names))) do
    if v then out[#out + 1] = v end
  end
  from = upto + 1
end
return out`,

    // A read: k[1] a run's step list. a[1] the prefix of the steps' hashes. → each step's
    // record fields and values, flat, in the list's order.
    steps: `
local out = {}
for _, id in ipairs(redis.call('LRANGE', k[1], 0, -1)) do out[#out + 1] = read_step(a[1] .. id) end
return out`,

    // k[1] a step's hash. a[1] a watcher (a fleet process's wake stream, after the prefix),
    // a[2] '1' to add it, '0' to take it off. → 1, or 0 without the step. The last
    // ${MAX_WATCHERS} added are kept.
    watch: `
local s = step_of(k[1])
if not s then return 0 end
local list = {}
if s.w then
  for x in string.gmatch(s.w, '%S+') do
    if x ~= a[1] then list[#list + 1] = x end
  end
end
if a[2] == '1' then list[#list + 1] = a[1] end
while #list > ${MAX_WATCHERS} do table.remove(list, 1) end
if #list == 0 then
  redis.call('HDEL', k[1], 'w')
  s.w = false
else
  s.w = table.concat(list, ' ')
  redis.call('HSET', k[1], 'w', s.w)
end
return 1`,

    // A fleet step's end, said (as ENDED, its writes held for the call's end): k[1] the
    // fleet's ended stream, k[2] the pool's counters (k[1] for none), k[3] the step's fence
    // (k[1] for none), k[4] the fleet's open steps. a: the step id, its status, the stream's
    // max length, the counter's field, the fence's token. → 1 said, 0 not (the fence holds
    // another's token). One entry of the stream says every end of the call, pairs of step
    // id and status.
    ended: `
if k[3] ~= k[1] and not fence_holds(k[3], a[5]) then return 0 end
later(zrems, k[4], a[1])
local x = xadds[k[1]]
if not x then
  x = {len = a[3], flat = {}}
  xadds[k[1]] = x
end
x.flat[#x.flat + 1] = a[1]
x.flat[#x.flat + 1] = a[2]
if k[2] ~= k[1] then
  incrs[k[2]] = incrs[k[2]] or {}
  incrs[k[2]][a[4]] = (incrs[k[2]][a[4]] or 0) + 1
end
pending = true
return 1`,
  } as const;
}
