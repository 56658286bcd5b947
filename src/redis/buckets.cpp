#include "redis/buckets.hpp"

#include <array>

namespace sluice::redis {

namespace {

// Every script starts here: Redis's clock, the limits (ARGV[1], ARGV[2]) and the buckets of
// KEYS[1] refilled to now. A missing bucket is full (the hash expires once it would be full again
// and no block is running).
constexpr std::string_view prelude = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rpm, tpm = tonumber(ARGV[1]), tonumber(ARGV[2])
local b = redis.call('HMGET', KEYS[1], 'r', 't', 'ts', 'bu')
local since = math.max(0, now - (tonumber(b[3]) or now))
local blocked = tonumber(b[4]) or 0
local function level(v, limit)
  if limit <= 0 then return 0 end
  local l = tonumber(v)
  if not l then return limit end
  return math.min(limit, l + since * limit / 60000)
end
local r, tk = level(b[1], rpm), level(b[2], tpm)
local function until_full(l, limit)
  if limit <= 0 then return 0 end
  return math.ceil((limit - l) * 60000 / limit)
end
local function store()
  local ttl = math.max(until_full(r, rpm), until_full(tk, tpm), blocked - now)
  if ttl <= 0 and b[1] == false and b[2] == false and b[4] == false then return end
  redis.call('HSET', KEYS[1], 'r', tostring(r), 't', tostring(tk), 'ts', now, 'bu', blocked)
  redis.call('PEXPIRE', KEYS[1], math.max(ttl, 0) + 1000)
end
)lua";

constexpr std::string_view admit_body = R"lua(
local max_slots, cost, member, lease = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local slots = 0
if max_slots > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  slots = redis.call('ZCARD', KEYS[2])
end
local verdict, wait = 0, 0
local need = math.min(cost, tpm)
if blocked > now then
  verdict, wait = 4, blocked - now
elseif max_slots > 0 and slots >= max_slots then
  verdict, wait = 1, 1000
elseif rpm > 0 and r < 1 then
  verdict, wait = 2, math.ceil((1 - r) * 60000 / rpm)
elseif tpm > 0 and tk < need then
  verdict, wait = 3, math.ceil((need - tk) * 60000 / tpm)
else
  if rpm > 0 then r = r - 1 end
  if tpm > 0 then tk = tk - cost end
  if max_slots > 0 then
    redis.call('ZADD', KEYS[2], now + lease, member)
    redis.call('PEXPIRE', KEYS[2], lease * 2)
    slots = slots + 1
  end
end
if rpm > 0 or tpm > 0 then store() end
return {verdict, wait, math.floor(math.max(r, 0)), until_full(r, rpm), math.floor(math.max(tk, 0)),
        until_full(tk, tpm), slots}
)lua";

constexpr std::string_view settle_body = R"lua(
if ARGV[4] ~= '' then redis.call('ZREM', KEYS[2], ARGV[4]) end
local more, back = tonumber(ARGV[3]), tonumber(ARGV[5]) or 0
local changed = false
if tpm > 0 and more ~= 0 then
  tk = math.min(tpm, tk - more)
  changed = true
end
if rpm > 0 and back > 0 then
  r = math.min(rpm, r + back)
  changed = true
end
if changed then store() end
return 1
)lua";

constexpr std::string_view observe_body = R"lua(
local left_r, left_t, block = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if left_r and rpm > 0 then r = math.min(r, left_r) end
if left_t and tpm > 0 then tk = math.min(tk, left_t) end
if block and block > 0 then blocked = math.max(blocked, now + block) end
store()
return 1
)lua";

std::string percent_encoded(std::string_view name) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : name) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                       c == '_' || c == '-';
    if (plain) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xf]);
    }
  }
  return out;
}

}  // namespace

std::optional<bucket_reply> parse_bucket_admit(const reply& r) {
  if (r.type != reply::kind::array || r.elements.size() != 7) return std::nullopt;
  std::array<std::int64_t, 7> v{};
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto n = r.elements[i].as_integer();
    if (!n) return std::nullopt;
    v[i] = *n;
  }
  if (v[0] < 0 || v[0] > 4) return std::nullopt;
  return bucket_reply{static_cast<bucket_verdict>(v[0]), v[1], v[2], v[3], v[4], v[5], v[6]};
}

script bucket_admit_script(std::string name) {
  return script::make(std::move(name), std::string(prelude) + std::string(admit_body));
}
script bucket_settle_script(std::string name) {
  return script::make(std::move(name), std::string(prelude) + std::string(settle_body));
}
script bucket_observe_script(std::string name) {
  return script::make(std::move(name), std::string(prelude) + std::string(observe_body));
}

std::string bucket_key(std::string_view prefix, std::string_view kind, std::string_view name, std::string_view suffix) {
  std::string out(prefix);
  out += '{';
  out += kind;
  out += ':';
  out += percent_encoded(name);
  out += "}:";
  out += suffix;
  return out;
}

}  // namespace sluice::redis
