// The Lua scripts of jobs::redis_queue (redis_queue.hpp: the data layout). Each names keys of one
// hash tag only; the times they write are Redis's clock (TIME), like every lease.
#include "jobs/redis_queue.hpp"

namespace sluice::jobs {

namespace {

// KEYS[1] the job stream; ARGV: jobs-max-waiting, the response id, the channel that announces a
// queued job (payload 'jobs': idle workers read at once). 1: queued; 0: the queue is full.
constexpr std::string_view enqueue_lua = R"lua(
if redis.call('XLEN', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('XADD', KEYS[1], '*', 'id', ARGV[2])
redis.call('PUBLISH', ARGV[3], 'jobs')
return 1
)lua";

// KEYS[1] a response's hash; ARGV: its ttl (ms), then field/value pairs. 0 when it exists already.
constexpr std::string_view create_lua = R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
)lua";

// KEYS[1] the hash; ARGV: worker, object. 1: taken; 0: not queued (cancelled, taken, gone).
constexpr std::string_view start_lua = R"lua(
if redis.call('HGET', KEYS[1], 'st') ~= 'queued' then return 0 end
redis.call('HSET', KEYS[1], 'st', 'in_progress', 'wk', ARGV[1], 'obj', ARGV[2])
return 1
)lua";

// KEYS[1] the hash, KEYS[2] its events; ARGV: worker, status (''), object (''), final ('1'),
// retention (ms), then sequence number / SSE text pairs. 0 when the response is not this worker's
// to write (another's, finished, gone). An event whose id is not past the last one is skipped. A
// foreground job's front is told on its channel (nf).
constexpr std::string_view append_lua = R"lua(
local h = redis.call('HMGET', KEYS[1], 'wk', 'fin')
if h[1] ~= ARGV[1] or h[2] == '1' then return 0 end
local last = nil
for i = 6, #ARGV, 2 do
  local r = redis.pcall('XADD', KEYS[2], (tonumber(ARGV[i]) + 1) .. '-0', 't', ARGV[i + 1])
  if not (type(r) == 'table' and r.err) then last = ARGV[i] end
end
if last then redis.call('HSET', KEYS[1], 'last', last) end
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
return {1, tonumber(redis.call('HGET', KEYS[1], 'fa') or '0'), tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)}
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

// KEYS[1] the hash; ARGV: the cancelled object, retention (ms). Returns {status before, worker}.
constexpr std::string_view cancel_lua = R"lua(
local h = redis.call('HMGET', KEYS[1], 'st', 'wk')
if not h[1] then return {''} end
if h[1] == 'queued' then
  redis.call('HSET', KEYS[1], 'st', 'cancelled', 'obj', ARGV[1], 'fin', '1')
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'queued', ''}
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
  return {redis::script::make("jobs_enqueue", std::string(enqueue_lua)),
          redis::script::make("response_create", std::string(create_lua)),
          redis::script::make("job_start", std::string(start_lua)),
          redis::script::make("response_append", std::string(append_lua)),
          redis::script::make("response_cancel", std::string(cancel_lua)),
          redis::script::make("job_lost", std::string(lose_lua)),
          redis::script::make("job_leases", std::string(lease_lua)),
          redis::script::make("job_leases_expired", std::string(expired_lua)),
          redis::script::make("response_read", std::string(read_lua)),
          redis::script::make("jobs_take", std::string(take_lua))};
}

}  // namespace sluice::jobs
