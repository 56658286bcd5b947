// The Lua scripts of jobs::redis_queue (redis_queue.hpp: the data layout). Each names keys of one
// hash tag only; the times they write are Redis's clock (TIME), like every lease.
#include "jobs/redis_queue.hpp"

namespace sluice::jobs {

namespace {

// The fleet's byte ledger (redis-response-bytes), in the queue's slot: KEYS[l] the zset of charged
// ids (score: when their bytes stop counting, Redis's clock), KEYS[l+1] the hash id -> bytes,
// KEYS[l+2] the total. Entries whose time passed are dropped a bounded batch per call (their keys
// have expired by then: the score is never earlier than the response's own expiry).
constexpr std::string_view ledger_lua = R"lua(
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function ledger_prune(l, now, n)
  local gone = redis.call('ZRANGEBYSCORE', KEYS[l], '-inf', now, 'LIMIT', 0, n)
  local freed = 0
  for _, id in ipairs(gone) do
    freed = freed + tonumber(redis.call('HGET', KEYS[l + 1], id) or '0')
    redis.call('HDEL', KEYS[l + 1], id)
  end
  if #gone > 0 then redis.call('ZREM', KEYS[l], unpack(gone)) end
  if freed > 0 then redis.call('DECRBY', KEYS[l + 2], freed) end
  return #gone
end
-- Charges `bytes` to `id` until now + ttl unless that passes `bound`: true when charged.
local function ledger_charge(l, bound, id, bytes, ttl)
  local now = now_ms()
  for _ = 1, 10 do
    if ledger_prune(l, now, 100) < 100 then break end
  end
  local total = tonumber(redis.call('GET', KEYS[l + 2]) or '0')
  local old = tonumber(redis.call('HGET', KEYS[l + 1], id) or '0')
  if total - old + bytes > bound then return false end
  redis.call('HSET', KEYS[l + 1], id, bytes)
  redis.call('ZADD', KEYS[l], now + ttl, id)
  redis.call('INCRBY', KEYS[l + 2], bytes - old)
  return true
end
)lua";

// KEYS[1] the job stream, KEYS[2..4] the ledger; ARGV: jobs-max-waiting, the response id, the
// channel that announces a queued job (payload 'jobs': idle workers read at once), redis-response-
// bytes, the job's bytes, their ttl (ms). 1: queued; 0: the queue is full; 2: the bytes are.
constexpr std::string_view enqueue_lua = R"lua(
if redis.call('XLEN', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
if not ledger_charge(2, tonumber(ARGV[4]), ARGV[2], tonumber(ARGV[5]), tonumber(ARGV[6])) then return 2 end
redis.call('XADD', KEYS[1], '*', 'id', ARGV[2])
redis.call('PUBLISH', ARGV[3], 'jobs')
return 1
)lua";

// KEYS[1..3] the ledger; ARGV: redis-response-bytes, id, bytes, ttl (ms). 1: charged; 0: past the bound.
constexpr std::string_view charge_lua = R"lua(
if ledger_charge(1, tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])) then return 1 end
return 0
)lua";

// KEYS[1..3] the ledger; ARGV: id, the bytes it holds now ('': drop it), how long they count (ms).
// Only an id charged still is settled (never one already dropped). 1: settled.
constexpr std::string_view settle_lua = R"lua(
local old = redis.call('HGET', KEYS[2], ARGV[1])
if not old then return 0 end
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('DECRBY', KEYS[3], tonumber(old))
  return 1
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], now_ms() + tonumber(ARGV[3]), ARGV[1])
redis.call('INCRBY', KEYS[3], tonumber(ARGV[2]) - tonumber(old))
return 1
)lua";

// KEYS[1..3] the ledger; ARGV: at most this many expired entries dropped. The total held.
constexpr std::string_view held_lua = R"lua(
ledger_prune(1, now_ms(), tonumber(ARGV[1]))
return tonumber(redis.call('GET', KEYS[3]) or '0')
)lua";

// KEYS[1] a response's hash; ARGV: its ttl (ms), then field/value pairs. 0 when it exists already.
constexpr std::string_view create_lua = R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
)lua";

// KEYS[1] the hash; ARGV: worker, object. 1: taken; 0: not queued (cancelled, taken, gone). The
// request (body, headers, sealed credential) is the worker's now: Redis keeps no copy of it.
constexpr std::string_view start_lua = R"lua(
if redis.call('HGET', KEYS[1], 'st') ~= 'queued' then return 0 end
redis.call('HSET', KEYS[1], 'st', 'in_progress', 'wk', ARGV[1], 'obj', ARGV[2])
redis.call('HDEL', KEYS[1], 'body', 'hdr', 'sec')
return 1
)lua";

// KEYS[1] the hash, KEYS[2] its events; ARGV: worker, status (''), object (''), final ('1'),
// retention (ms), then sequence number / SSE text pairs. 0 when the response is not this worker's
// to write (another's, finished, gone). An event whose id is not past the last one is skipped. A
// foreground job's front is told on its channel (nf). `sz` counts the events' bytes; the reply's
// fourth element is what the response holds (events and object), for the ledger.
constexpr std::string_view append_lua = R"lua(
local h = redis.call('HMGET', KEYS[1], 'wk', 'fin')
if h[1] ~= ARGV[1] or h[2] == '1' then return 0 end
local last = nil
local added = 0
for i = 6, #ARGV, 2 do
  local r = redis.pcall('XADD', KEYS[2], (tonumber(ARGV[i]) + 1) .. '-0', 't', ARGV[i + 1])
  if not (type(r) == 'table' and r.err) then
    last = ARGV[i]
    added = added + #ARGV[i + 1]
  end
end
if last then redis.call('HSET', KEYS[1], 'last', last) end
local sz = redis.call('HINCRBY', KEYS[1], 'sz', added)
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'obj', ARGV[3]) end
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'st', ARGV[2]) end
if ARGV[4] == '1' then
  redis.call('HSET', KEYS[1], 'fin', '1')
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
elseif last then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
end
local nf = redis.call('HGET', KEYS[1], 'nf')
if nf then redis.call('PUBLISH', nf, KEYS[1]) end
local t = redis.call('TIME')
return {1, tonumber(redis.call('HGET', KEYS[1], 'fa') or '0'), tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),
        sz + redis.call('HSTRLEN', KEYS[1], 'obj')}
)lua";

// KEYS[1] the hash, KEYS[2] its events; ARGV: the first entry id to read (exclusive form), at most
// this many. {0}: gone. Else {1, fin, entries, st}; a live response also notes when it was last
// followed (fa, Redis's clock), for the process relaying a recorded stream (orphan-timeout).
constexpr std::string_view read_lua = R"lua(
local h = redis.call('HMGET', KEYS[1], 'st', 'fin')
if not h[1] then return {0} end
if h[2] ~= '1' then
  local t = redis.call('TIME')
  redis.call('HSET', KEYS[1], 'fa', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
return {1, h[2] or '0', redis.call('XRANGE', KEYS[2], ARGV[1], '+', 'COUNT', tonumber(ARGV[2])), h[1]}
)lua";

// KEYS[1] the hash; ARGV: the cancelled object, retention (ms). Returns {status before, worker}; a
// queued job cancelled drops its request and answers the bytes it still holds, for the ledger.
constexpr std::string_view cancel_lua = R"lua(
local h = redis.call('HMGET', KEYS[1], 'st', 'wk')
if not h[1] then return {''} end
if h[1] == 'queued' then
  redis.call('HSET', KEYS[1], 'st', 'cancelled', 'obj', ARGV[1], 'fin', '1')
  redis.call('HDEL', KEYS[1], 'body', 'hdr', 'sec')
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'queued', '', #ARGV[1]}
end
if h[1] == 'in_progress' then redis.call('HSET', KEYS[1], 'cx', '1') end
return {h[1], h[2] or ''}
)lua";

// KEYS[1] the hash, KEYS[2] its events; ARGV: the lost worker, the last sequence number it had
// stored, the error event's SSE text, the failed object, retention (ms). 1: failed now; 0: no
// longer that worker's running job (finished, gone); 2: it moved on meanwhile (alive after all).
// A foreground job's log is its answer's bytes: no Responses event is added (its front writes the
// error in its API's form).
constexpr std::string_view lose_lua = R"lua(
local h = redis.call('HMGET', KEYS[1], 'st', 'wk', 'last', 'fin', 'fg')
if h[1] ~= 'in_progress' or h[2] ~= ARGV[1] or h[4] == '1' then return 0 end
if (h[3] or '-1') ~= ARGV[2] then return 2 end
local last = ARGV[2]
if not h[5] then
  redis.pcall('XADD', KEYS[2], (tonumber(ARGV[2]) + 2) .. '-0', 't', ARGV[3])
  last = tostring(tonumber(ARGV[2]) + 1)
end
redis.call('HSET', KEYS[1], 'st', 'failed', 'obj', ARGV[4], 'fin', '1', 'last', last)
local nf = redis.call('HGET', KEYS[1], 'nf')
if nf then redis.call('PUBLISH', nf, KEYS[1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return 1
)lua";

// KEYS[1] the running set; ARGV: lease (ms), 'NX' (take) or 'XX' (renew), then ids. Scores are
// Redis's clock, like every lease. Returns how many were added or renewed.
constexpr std::string_view lease_lua = R"lua(
local t = redis.call('TIME')
local until_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
local n = 0
for i = 3, #ARGV do n = n + redis.call('ZADD', KEYS[1], ARGV[2], 'CH', until_ms, ARGV[i]) end
return n
)lua";

// KEYS[1] the running set; ARGV: at most this many. The ids whose lease has ended.
constexpr std::string_view expired_lua = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
)lua";

// KEYS[1] the foreground stream, KEYS[2] the background one (one hash tag); ARGV: group, consumer,
// at most this many. New entries for the consumer, foreground ones first, never more than asked:
// {stream index (1 or 2), entry id, response id, ...}. -1 when a consumer group is missing (Redis
// lost it).
constexpr std::string_view take_lua = R"lua(
local want = tonumber(ARGV[3])
local out = {}
for s = 1, 2 do
  if want <= 0 then break end
  local ok, r = pcall(redis.call, 'XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', want, 'STREAMS', KEYS[s], '>')
  if not ok then
    if string.find(tostring(r.err or r), 'NOGROUP') then return -1 end
    return redis.error_reply(tostring(r.err or r))
  end
  if r then
    for _, e in ipairs(r[1][2]) do
      local f = e[2]
      for i = 1, #f, 2 do
        if f[i] == 'id' then
          out[#out + 1] = s
          out[#out + 1] = e[1]
          out[#out + 1] = f[i + 1]
          want = want - 1
        end
      end
    end
  end
end
return out
)lua";

}  // namespace

std::vector<redis::script> redis_queue::scripts() {
  // The order of script_index.
  const std::string ledger(ledger_lua);
  return {redis::script::make("jobs_enqueue", ledger + std::string(enqueue_lua)),
          redis::script::make("response_create", std::string(create_lua)),
          redis::script::make("job_start", std::string(start_lua)),
          redis::script::make("response_append", std::string(append_lua)),
          redis::script::make("response_cancel", std::string(cancel_lua)),
          redis::script::make("job_lost", std::string(lose_lua)),
          redis::script::make("job_leases", std::string(lease_lua)),
          redis::script::make("job_leases_expired", std::string(expired_lua)),
          redis::script::make("response_read", std::string(read_lua)),
          redis::script::make("jobs_take", std::string(take_lua)),
          redis::script::make("ledger_charge", ledger + std::string(charge_lua)),
          redis::script::make("ledger_settle", ledger + std::string(settle_lua)),
          redis::script::make("ledger_held", ledger + std::string(held_lua))};
}

}  // namespace sluice::jobs
