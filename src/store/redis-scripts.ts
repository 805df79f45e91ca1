/**
 * @module The Redis store's Lua scripts: every check-then-write is one script, so processes
 * sharing the store never interleave inside one.
 */

// KEYS[1] the record's hash. ARGV field, value, field, value, …  → 1, or 0 if it exists.
export const CREATE_RUN = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1`;

// KEYS[1] the run's hash, KEYS[2] the step's hash, KEYS[3] the run's step list.
// ARGV[1] the step id, then field, value, …  → 1; 0 if the step exists; -1 if the run does not.
export const CREATE_STEP = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('HSET', KEYS[2], unpack(ARGV, 2))
redis.call('RPUSH', KEYS[3], ARGV[1])
return 1`;

// KEYS[1] the run's hash, KEYS[2] the step's hash, KEYS[3] the run's step list, KEYS[4] the
// step-by-token key. ARGV[1] the step id, then field, value, …
// → {'created'}, {'found', id}, {'exists'} (the step id is taken), {'no-run'}.
export const CLAIM_STEP = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {'no-run'} end
local found = redis.call('GET', KEYS[4])
if found then return {'found', found} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {'exists'} end
redis.call('HSET', KEYS[2], unpack(ARGV, 2))
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('SET', KEYS[4], ARGV[1])
return {'created'}`;

// KEYS[1] the flow-by-hash key, KEYS[2] the flow's hash. ARGV[1] the flow id, then fields.
// → {'created'}, {'found', id}, {'exists'} (the flow id is taken by other content).
export const PUT_FLOW = `
local found = redis.call('GET', KEYS[1])
if found then return {'found', found} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {'exists'} end
redis.call('HSET', KEYS[2], unpack(ARGV, 2))
redis.call('SET', KEYS[1], ARGV[1])
return {'created'}`;

// KEYS[1] the run's hash, KEYS[2] the run's facts, KEYS[3] the fact ids, KEYS[4] the flow's
// facts (or the run's again). ARGV[1] the fact id, ARGV[2] its JSON, ARGV[3] '1' to add to
// the flow's list. → 1; 0 if the fact id is taken; -1 without the run.
export const APPEND_FACT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('SADD', KEYS[3], ARGV[1]) == 0 then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[2])
if ARGV[3] == '1' then redis.call('RPUSH', KEYS[4], ARGV[2]) end
return 1`;

// KEYS[1] the run's hash, KEYS[2] its checkpoint list. ARGV[1] the JSON. → 1, or -1.
export const APPEND_IF_RUN = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
redis.call('RPUSH', KEYS[2], ARGV[1])
return 1`;

// KEYS[1] the run's hash, KEYS[2] its recordings (a hash by call key), KEYS[3] the call keys
// in the order first stored. ARGV[1] the call key, ARGV[2] the JSON. → 1, or -1 without the run.
export const PUT_RECORDING = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) == 1 then redis.call('RPUSH', KEYS[3], ARGV[1]) end
return 1`;

// KEYS[1] the step's hash. ARGV[1] the prefix of run keys. → 1, or -1 without the step.
// The run's token key is freed only if it still names this step.
export const RELEASE_TOKEN = `
local raw = redis.call('HGET', KEYS[1], 'client_token')
if not raw then return -1 end
local token = cjson.decode(raw)
if token ~= cjson.null then
  local run = cjson.decode(redis.call('HGET', KEYS[1], 'run_id'))
  local key = ARGV[1] .. run .. ':token:' .. token
  local id = cjson.decode(redis.call('HGET', KEYS[1], 'step_id'))
  if redis.call('GET', key) == id then redis.call('DEL', key) end
  redis.call('HSET', KEYS[1], 'client_token', 'null')
end
return 1`;

// KEYS[1] the run's hash. ARGV tokens_in, tokens_out, cost_usd, wall_ms to add.
// → the new usage as JSON, or false without the run. Numbers are summed in Lua and written
// back with string.format('%.17g'), which keeps a double's every digit.
export const ADD_USAGE = `
local raw = redis.call('HGET', KEYS[1], 'budget_usage')
if not raw then return false end
local u = cjson.decode(raw)
local function sum(a, b) return string.format('%.17g', (tonumber(a) or 0) + tonumber(b)) end
local out = '{"tokens_in":' .. sum(u.tokens_in, ARGV[1]) ..
  ',"tokens_out":' .. sum(u.tokens_out, ARGV[2]) ..
  ',"cost_usd":' .. sum(u.cost_usd, ARGV[3]) ..
  ',"wall_ms":' .. sum(u.wall_ms, ARGV[4]) .. '}'
redis.call('HSET', KEYS[1], 'budget_usage', out)
return out`;

// KEYS[1] the hash. ARGV field, value, …  → 1, or 0 if there is no such record.
export const PATCH = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if #ARGV > 0 then redis.call('HSET', KEYS[1], unpack(ARGV)) end
return 1`;

// KEYS: for each step in the batch, its hash then its log. ARGV: for each event, the index
// (1-based) of its step among KEYS pairs, its seq, its JSON. The whole batch is checked
// before anything is written. → {'ok'}, {'missing', i} or {'seq', i, expected, got}.
export const APPEND = `
local last = {}
local n = #ARGV / 3
for e = 0, n - 1 do
  local i = tonumber(ARGV[e * 3 + 1])
  local seq = tonumber(ARGV[e * 3 + 2])
  if last[i] == nil then
    if redis.call('EXISTS', KEYS[i * 2 - 1]) == 0 then return {'missing', i} end
    last[i] = redis.call('LLEN', KEYS[i * 2])
  end
  if seq ~= last[i] + 1 then return {'seq', i, last[i] + 1, seq} end
  last[i] = seq
end
for e = 0, n - 1 do
  local i = tonumber(ARGV[e * 3 + 1])
  redis.call('RPUSH', KEYS[i * 2], ARGV[e * 3 + 3])
end
return {'ok'}`;

// KEYS[1] the run's hash, KEYS[2] the approval's key, KEYS[3] the run's approval ids.
// ARGV[1] the approval id, ARGV[2] its JSON. → 1 stored, 0 already there (unchanged), -1
// without the run.
export const CREATE_APPROVAL = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('SET', KEYS[2], ARGV[2], 'NX') then
  redis.call('RPUSH', KEYS[3], ARGV[1])
  return 1
end
return 0`;

// KEYS[1] the approval's key. ARGV[1] the JSON it must still hold, ARGV[2] the new JSON.
// → 1 swapped, 0 it holds something else (decided meanwhile), -1 no such approval.
export const SWAP_APPROVAL = `
local now = redis.call('GET', KEYS[1])
if not now then return -1 end
if now ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1`;
