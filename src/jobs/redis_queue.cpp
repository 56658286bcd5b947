#include "jobs/redis_queue.hpp"

#include <array>
#include <charconv>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace sluice::jobs {

namespace json = boost::json;

namespace {

// How long a live response's keys last at most: a job still queued or running after this is
// abandoned (its keys vanish; a follower's GET is then a 404). Finished ones keep response-retention.
constexpr long long live_ttl_ms = 24LL * 3600 * 1000;

std::optional<status> status_named(std::string_view s) {
  for (auto st : {status::queued, status::in_progress, status::completed, status::failed, status::cancelled, status::incomplete})
    if (to_string(st) == s) return st;
  return std::nullopt;
}

std::int64_t to_int(std::string_view s, std::int64_t fallback) {
  std::int64_t v = fallback;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} && p == s.data() + s.size() ? v : fallback;
}

// An HGETALL reply as a response (`id` given); nullopt when empty.
std::optional<stored_response> from_hash(std::string_view id, const redis::reply& r) {
  if (r.type != redis::reply::kind::array || r.elements.empty()) return std::nullopt;
  stored_response out;
  out.id = std::string(id);
  bool has_state = false;
  for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) {
    const std::string& k = r.elements[i].str;
    std::string v = r.elements[i + 1].str;
    if (k == "st") {
      if (auto s = status_named(v)) {
        out.state = *s;
        has_state = true;
      }
    } else if (k == "obj") {
      out.object = std::move(v);
    } else if (k == "own") {
      out.owner = std::move(v);
    } else if (k == "bg") {
      out.background = v == "1";
    } else if (k == "wk") {
      out.worker = std::move(v);
    } else if (k == "fin") {
      out.finished = v == "1";
    } else if (k == "last") {
      out.last_seq = to_int(v, -1);
    } else if (k == "body") {
      out.body = std::move(v);
    } else if (k == "sec") {
      out.sealed_credential = std::move(v);
    } else if (k == "fg") {
      out.wire = std::move(v);
    } else if (k == "hdr") {
      error_code ec;
      auto parsed = json::parse(v, ec);
      if (!ec && parsed.is_array())
        for (const auto& pair : parsed.as_array())
          if (pair.is_array() && pair.as_array().size() == 2 && pair.as_array()[0].is_string() && pair.as_array()[1].is_string())
            out.headers.emplace_back(std::string(pair.as_array()[0].as_string()), std::string(pair.as_array()[1].as_string()));
    }
  }
  if (!has_state) return std::nullopt;  // a half-written hash is not a response
  return out;
}

// Stream entries ([[id, [field, value, ...]], ...]) of `stream` as jobs (field `id`).
void jobs_from_entries(const redis::reply& entries, const std::string& stream, std::vector<queued_job>& out) {
  if (entries.type != redis::reply::kind::array) return;
  for (const auto& e : entries.elements) {
    if (e.type != redis::reply::kind::array || e.elements.size() < 2) continue;
    const auto& fields = e.elements[1];
    if (fields.type != redis::reply::kind::array) continue;  // deleted meanwhile
    for (std::size_t i = 0; i + 1 < fields.elements.size(); i += 2)
      if (fields.elements[i].str == "id") out.push_back({e.elements[0].str, fields.elements[i + 1].str, stream});
  }
}

std::string ms(std::chrono::milliseconds d) { return std::to_string(d.count()); }

std::chrono::milliseconds in_ms(duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d); }

// Expired ledger entries the metrics sampler drops per read (an enqueue drops up to 1000 itself).
constexpr std::size_t held_prune_batch = 1000;

}  // namespace

error redis_unavailable() {
  auto e = error::make(errc::upstream_connect, "Redis did not answer.");
  e.retryable = true;
  return e;
}

redis_queue::redis_queue(std::string prefix, std::string worker, const options& opts, std::chrono::milliseconds lease,
                         std::uint64_t foreground_max_waiting)
    : prefix_(std::move(prefix)),
      worker_(std::move(worker)),
      opts_(opts),
      lease_(lease),
      foreground_max_waiting_(foreground_max_waiting) {}


std::string redis_key_part(std::string_view s) {
  // Ids are the gateway's own (resp_ + hex), so this is a copy; anything else that ever got here
  // could not close the hash tag ('}'), glob ('*') or add a level (':') to the key's name.
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (plain) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xF]);
    }
  }
  return out;
}

std::string redis_queue::response_key(std::string_view id) const { return prefix_ + "{resp:" + redis_key_part(id) + "}"; }
std::string redis_queue::events_key(std::string_view id) const { return response_key(id) + ":ev"; }
std::vector<std::string> redis_queue::ledger_keys() const {
  return {prefix_ + "{jobs}:held", prefix_ + "{jobs}:held:bytes", prefix_ + "{jobs}:held:total"};
}
std::string redis_queue::cancels_key(std::string_view worker) const {
  return prefix_ + "{worker:" + redis_key_part(worker) + "}:cancels";
}

task<redis::response> redis_queue::run(redis::connection& c, script_index s, std::vector<std::string> keys,
                                       std::vector<std::string> args) {
  std::vector<std::string_view> k(keys.begin(), keys.end()), a(args.begin(), args.end());
  co_return co_await c.run_within(opts_.command_timeout, first_script_ + s, k, a);
}

task<result<store_refusal>> redis_queue::create(redis::connection& c, const new_response& r, std::string_view sealed_credential) {
  json::array hdr;
  for (const auto& [k, v] : r.headers) hdr.push_back(json::array{json::string(k), json::string(v)});
  // (Named vectors: GCC 12 cannot hold a braced list across a co_await.)
  std::vector<std::string> keys{response_key(r.id)};
  std::vector<std::string> args{std::to_string(live_ttl_ms), "st", "queued", "obj", r.object, "own", r.owner, "bg",
                                r.background ? "1" : "0", "hdr", json::serialize(hdr), "body", r.body, "last", "-1"};
  if (!sealed_credential.empty()) {
    args.push_back("sec");
    args.push_back(std::string(sealed_credential));
  }
  // What the ledger charges while it waits: every value stored (the request's bytes above all).
  std::uint64_t bytes = 0;
  for (std::size_t i = 1; i < args.size(); ++i) bytes += args[i].size();
  if (!r.wire.empty()) {
    args.push_back("fg");
    args.push_back(r.wire);
    args.push_back("nf");  // the front relaying it is told of each append
    args.push_back(notify_channel(worker_));
  }
  auto made = co_await run(c, create_hash, std::move(keys), std::move(args));
  if (!made.ok()) co_return redis_unavailable();
  if (made.value.as_integer().value_or(0) != 1) co_return store_refusal::duplicate;
  std::vector<std::string> qkeys{r.wire.empty() ? jobs_key() : foreground_key()};
  for (auto& k : ledger_keys()) qkeys.push_back(std::move(k));
  std::vector<std::string> qargs{std::to_string(r.wire.empty() ? opts_.jobs_max_waiting : foreground_max_waiting_), r.id,
                                 jobs_channel(), std::to_string(opts_.redis_response_bytes), std::to_string(bytes),
                                 std::to_string(live_ttl_ms)};
  auto queued = co_await run(c, enqueue, std::move(qkeys), std::move(qargs));
  const auto answer = queued.ok() ? queued.value.as_integer().value_or(0) : 0;
  if (answer == 1) co_return store_refusal::none;
  // Not queued: the response must not stay behind as a job nobody runs.
  (void)co_await c.command_within(opts_.command_timeout, "DEL", response_key(r.id));
  if (!queued.ok()) co_return redis_unavailable();
  co_return answer == 2 ? store_refusal::store_full : store_refusal::queue_full;
}

task<result<std::optional<stored_response>>> redis_queue::find(redis::connection& c, std::string_view id) {
  auto r = co_await c.command_within(opts_.command_timeout, "HMGET", response_key(id), "st", "obj", "own", "bg", "wk", "fin", "last",
                                     "fg", "up");
  if (!r.ok() || r.value.type != redis::reply::kind::array || r.value.elements.size() != 9) co_return redis_unavailable();
  const auto& e = r.value.elements;
  auto st = e[0].is_nil() ? std::nullopt : status_named(e[0].str);
  if (!st) co_return std::optional<stored_response>();
  stored_response out;
  out.id = std::string(id);
  out.state = *st;
  out.object = e[1].str;
  out.owner = e[2].str;
  out.background = e[3].str == "1";
  out.worker = e[4].str;
  out.finished = e[5].str == "1";
  out.last_seq = to_int(e[6].str, -1);
  out.wire = e[7].str;
  out.upstream_id = e[8].str;
  co_return std::optional(std::move(out));
}

task<result<event_batch>> redis_queue::read_after(redis::connection& c, std::string_view id, std::int64_t after,
                                                  std::size_t count) {
  event_batch out;
  out.last_seq = after;
  // One script: the status and the events read together (a final response has all its events).
  // The first id past `after`, exclusive ("(N-0"), appended to one string: built as
  // `"(" + std::to_string(...)`, an insert at the front that GCC 12 at -O3 misreads as an overflow.
  std::string from = "(";
  from += std::to_string(after + 1);
  from += "-0";
  std::vector<std::string> keys{response_key(id), events_key(id)};
  std::vector<std::string> args{from, std::to_string(count)};
  auto r = co_await run(c, read_events, std::move(keys), std::move(args));
  if (!r.ok() || r.value.type != redis::reply::kind::array || r.value.elements.empty()) co_return redis_unavailable();
  const auto& top = r.value.elements;
  if (top[0].as_integer().value_or(0) != 1 || top.size() < 3) {
    // Gone: expired, or Redis lost it (restarted without its data). Nothing will follow.
    out.missing = true;
    co_return out;
  }
  const bool final = top[1].str == "1";
  if (top.size() > 3)
    if (auto st = status_named(top[3].str)) out.state = *st;
  const auto& entries = top[2].elements;
  for (const auto& e : entries) {
    if (e.type != redis::reply::kind::array || e.elements.size() < 2 || e.elements[1].elements.size() < 2) continue;
    const std::string& entry = e.elements[0].str;
    const auto dash = entry.find('-');
    out.last_seq = to_int(std::string_view(entry).substr(0, dash), after + 1) - 1;
    out.events.push_back(e.elements[1].elements[1].str);
    out.seqs.push_back(out.last_seq);
  }
  // Final, and this read reached the end of the log: nothing follows.
  out.finished = final && entries.size() < count;
  co_return out;
}

task<result<std::optional<status>>> redis_queue::cancel(redis::connection& c, std::string_view id,
                                                        const std::string& cancelled_object) {
  std::vector<std::string> keys{response_key(id)};
  std::vector<std::string> args{cancelled_object, ms(std::chrono::duration_cast<std::chrono::milliseconds>(opts_.response_retention))};
  auto r = co_await run(c, cancel_job, std::move(keys), std::move(args));
  if (!r.ok() || r.value.type != redis::reply::kind::array || r.value.elements.empty()) co_return redis_unavailable();
  auto before = status_named(r.value.elements[0].str);
  if (before == status::queued && r.value.elements.size() > 2) {
    // Its request is gone: the ledger counts its object until its retention ends.
    const auto held = r.value.elements[2].as_integer().value_or(0);
    co_await settle(c, id, static_cast<std::uint64_t>(std::max<std::int64_t>(0, held)), in_ms(opts_.response_retention));
  }
  if (before == status::in_progress && r.value.elements.size() > 1 && !r.value.elements[1].str.empty()) {
    const std::string key = cancels_key(r.value.elements[1].str);
    auto added = co_await c.command_within(opts_.command_timeout, "SADD", key, id);
    (void)co_await c.command_within(opts_.command_timeout, "PEXPIRE", key, std::to_string(live_ttl_ms));
    if (!added.ok()) co_return redis_unavailable();
  }
  co_return before;
}

task<std::optional<std::uint64_t>> redis_queue::waiting(redis::connection& c, bool foreground_only) {
  auto fg = co_await c.command_within(opts_.command_timeout, "XLEN", foreground_key());
  if (!fg.ok()) co_return std::nullopt;
  auto n = static_cast<std::uint64_t>(std::max<std::int64_t>(0, fg.value.as_integer().value_or(0)));
  if (foreground_only) co_return n;
  auto bg = co_await c.command_within(opts_.command_timeout, "XLEN", jobs_key());
  if (!bg.ok()) co_return std::nullopt;
  co_return n + static_cast<std::uint64_t>(std::max<std::int64_t>(0, bg.value.as_integer().value_or(0)));
}

task<void> redis_queue::forget(redis::connection& c, std::string_view id) {
  (void)co_await c.command_within(opts_.command_timeout, "DEL", response_key(id), events_key(id));
  co_await settle(c, id, std::nullopt, {});
}

task<void> redis_queue::settle(redis::connection& c, std::string_view id, std::optional<std::uint64_t> bytes,
                               std::chrono::milliseconds ttl) {
  // Not answered: the entry keeps its charge until its own time passes (never less than the truth
  // for a live response, at most a day for one that ended).
  std::vector<std::string> keys = ledger_keys();
  std::vector<std::string> args{std::string(id), bytes ? std::to_string(*bytes) : std::string(), ms(ttl)};
  (void)co_await run(c, settle_bytes, std::move(keys), std::move(args));
}

task<void> redis_queue::settle_lost(redis::connection& c, std::string_view id) {
  auto sz = co_await c.command_within(opts_.command_timeout, "HGET", response_key(id), "sz");
  auto obj = co_await c.command_within(opts_.command_timeout, "HSTRLEN", response_key(id), "obj");
  if (!sz.ok() || !obj.ok()) co_return;
  const std::int64_t held = to_int(sz.value.str, 0) + obj.value.as_integer().value_or(0);
  co_await settle(c, id, static_cast<std::uint64_t>(std::max<std::int64_t>(0, held)), in_ms(opts_.response_retention));
}

task<std::optional<std::uint64_t>> redis_queue::held_bytes(redis::connection& c) {
  std::vector<std::string> keys = ledger_keys();
  std::vector<std::string> args{std::to_string(held_prune_batch)};
  auto r = co_await run(c, count_held, std::move(keys), std::move(args));
  if (!r.ok()) co_return std::nullopt;
  co_return static_cast<std::uint64_t>(std::max<std::int64_t>(0, r.value.as_integer().value_or(0)));
}

task<bool> redis_queue::ensure_group(redis::connection& c) {
  auto made = [](const redis::response& r) {
    return r.ok() || (r.status == redis::outcome::error_reply && r.value.str.rfind("BUSYGROUP", 0) == 0);
  };
  auto fg = co_await c.command_within(opts_.command_timeout, "XGROUP", "CREATE", foreground_key(), group, "0", "MKSTREAM");
  auto bg = co_await c.command_within(opts_.command_timeout, "XGROUP", "CREATE", jobs_key(), group, "0", "MKSTREAM");
  co_return made(fg) && made(bg);
}

task<result<std::vector<queued_job>>> redis_queue::take(redis::connection& c, std::size_t count) {
  std::vector<queued_job> out;
  if (count == 0) co_return out;
  // A client waits on each foreground job: those first, the rest of the slots for background ones.
  // One script reads both streams (one hash tag): one round trip, exactly `count` at most (one
  // XREADGROUP over two streams could return COUNT from each).
  std::vector<std::string> keys{foreground_key(), jobs_key()};
  std::vector<std::string> args{std::string(group), worker_, std::to_string(count)};
  auto r = co_await run(c, take_jobs, std::move(keys), std::move(args));
  if (!r.ok()) co_return redis_unavailable();
  if (r.value.type == redis::reply::kind::integer) {
    // Redis lost a group (restarted without its data): make them again, read next time.
    (void)co_await ensure_group(c);
    co_return out;
  }
  const auto& e = r.value.elements;
  for (std::size_t i = 0; i + 2 < e.size(); i += 3)
    out.push_back({e[i + 1].str, e[i + 2].str, e[i].as_integer().value_or(2) == 1 ? foreground_key() : jobs_key()});
  co_return out;
}

task<std::vector<queued_job>> redis_queue::claim_stale(redis::connection& c, std::size_t count) {
  std::vector<queued_job> out;
  for (const std::string& stream : {foreground_key(), jobs_key()}) {
    if (out.size() >= count) break;
    const std::string n = std::to_string(count - out.size());
    auto r = co_await c.command_within(opts_.command_timeout, "XAUTOCLAIM", stream, group, worker_, ms(lease_), "0-0", "COUNT", n);
    if (r.ok() && r.value.type == redis::reply::kind::array && r.value.elements.size() >= 2)
      jobs_from_entries(r.value.elements[1], stream, out);
  }
  co_return out;
}

task<result<std::optional<stored_response>>> redis_queue::load(redis::connection& c, std::string_view id) {
  auto r = co_await c.command_within(opts_.command_timeout, "HGETALL", response_key(id));
  if (!r.ok()) co_return redis_unavailable();
  co_return from_hash(id, r.value);
}

task<bool> redis_queue::start(redis::connection& c, const queued_job& j, const std::string& object) {
  // The lease first: a worker that dies after taking the job is then found by the reaper.
  std::vector<std::string> lkeys{running_key()};
  std::vector<std::string> largs{ms(job_lease()), "NX", j.id};
  auto held = co_await run(c, renew_leases, std::move(lkeys), std::move(largs));
  bool started = false;
  if (held.ok() && held.value.as_integer().value_or(0) == 1) {
    std::vector<std::string> skeys{response_key(j.id)};
    std::vector<std::string> sargs{worker_, object};
    auto s = co_await run(c, start_job, std::move(skeys), std::move(sargs));
    started = s.ok() && s.value.as_integer().value_or(0) == 1;
    if (!started) (void)co_await c.command_within(opts_.command_timeout, "ZREM", running_key(), j.id);
  }
  if (held.ok()) {
    // Taken by this worker, or not to be run (cancelled, gone, someone else's): out of the queue.
    // A job whose lease could not be written stays delivered, for a claim after the lease.
    const std::string& stream = j.stream.empty() ? jobs_key() : j.stream;
    (void)co_await c.command_within(opts_.command_timeout, "XACK", stream, group, j.entry);
    (void)co_await c.command_within(opts_.command_timeout, "XDEL", stream, j.entry);
  }
  co_return started;
}

task<result<bool>> redis_queue::append(redis::connection& c, std::string_view id, const std::vector<stored_event>& events,
                                       std::optional<status> st, const std::string& object, bool final,
                                       std::optional<std::int64_t>* followed_ms_ago, bool foreground) {
  std::vector<std::string> args;
  args.reserve(5 + events.size() * 2);
  args.push_back(worker_);
  args.push_back(st ? std::string(to_string(*st)) : std::string());
  args.push_back(object);
  args.push_back(final ? "1" : "0");
  args.push_back(foreground ? ms(foreground_retention)
                            : ms(std::chrono::duration_cast<std::chrono::milliseconds>(opts_.response_retention)));
  for (const auto& e : events) {
    args.push_back(std::to_string(e.seq));
    args.push_back(e.text);
  }
  std::vector<std::string> keys{response_key(id), events_key(id)};
  auto r = co_await run(c, append_events, std::move(keys), std::move(args));
  if (!r.ok()) co_return redis_unavailable();
  if (r.value.type != redis::reply::kind::array || r.value.elements.size() != 4) co_return false;  // 0: not ours
  const auto followed = r.value.elements[1].as_integer().value_or(0);
  const auto now = r.value.elements[2].as_integer().value_or(0);
  if (followed_ms_ago && followed > 0) *followed_ms_ago = std::max<std::int64_t>(0, now - followed);
  if (final) {
    // Its charge becomes what it holds (events and object), for as long as it is kept.
    const auto held = static_cast<std::uint64_t>(std::max<std::int64_t>(0, r.value.elements[3].as_integer().value_or(0)));
    co_await settle(c, id, held, foreground ? foreground_retention : in_ms(opts_.response_retention));
  }
  co_return true;
}

task<bool> redis_queue::open(redis::connection& c, const new_response& r) {
  std::vector<std::string> lkeys{running_key()};
  std::vector<std::string> largs{ms(job_lease()), "NX", r.id};
  auto held = co_await run(c, renew_leases, std::move(lkeys), std::move(largs));
  if (!held.ok() || held.value.as_integer().value_or(0) != 1) co_return false;  // someone else's, or Redis away
  // Charged like a job: refused past redis-response-bytes (the stream stays resumable here only).
  std::vector<std::string> ckeys = ledger_keys();
  std::vector<std::string> cargs{std::to_string(opts_.redis_response_bytes), r.id, std::to_string(r.object.size()),
                                 std::to_string(live_ttl_ms)};
  auto charged = co_await run(c, charge_bytes, std::move(ckeys), std::move(cargs));
  if (!charged.ok() || charged.value.as_integer().value_or(0) != 1) {
    (void)co_await c.command_within(opts_.command_timeout, "ZREM", running_key(), r.id);
    co_return false;
  }
  json::array hdr;
  std::vector<std::string> keys{response_key(r.id)};
  std::vector<std::string> args{std::to_string(live_ttl_ms), "st", "in_progress", "obj", r.object, "own", r.owner, "bg",
                                r.background ? "1" : "0", "hdr", json::serialize(hdr), "body", "", "last", "-1",
                                "wk", worker_, "up", r.upstream_id};
  auto made = co_await run(c, create_hash, std::move(keys), std::move(args));
  if (made.ok() && made.value.as_integer().value_or(0) == 1) co_return true;
  (void)co_await c.command_within(opts_.command_timeout, "ZREM", running_key(), r.id);
  co_await settle(c, r.id, std::nullopt, {});
  co_return false;
}

task<void> redis_queue::note_upstream_id(redis::connection& c, std::string_view id, std::string_view upstream_id) {
  // Only onto a hash that is there: a response that expired meanwhile is not made again (without
  // a TTL). Once per response, so the script goes as text.
  constexpr std::string_view script = "if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'up', ARGV[1]) end";
  (void)co_await c.command_within(opts_.command_timeout, "EVAL", script, "1", response_key(id), upstream_id);
}

task<void> redis_queue::release(redis::connection& c, std::string_view id) {
  (void)co_await c.command_within(opts_.command_timeout, "ZREM", running_key(), id);
}

task<bool> redis_queue::renew(redis::connection& c, const std::vector<std::string>& ids) {
  std::vector<std::string> args;
  args.push_back(ms(job_lease()));
  args.push_back("XX");
  args.insert(args.end(), ids.begin(), ids.end());
  std::vector<std::string> keys{running_key()};
  auto r = co_await run(c, renew_leases, std::move(keys), std::move(args));
  co_return r.ok();
}

task<std::vector<std::string>> redis_queue::cancelled(redis::connection& c) {
  std::vector<std::string> out;
  auto r = co_await c.command_within(opts_.command_timeout, "SPOP", cancels_key(worker_), "256");
  if (r.ok() && r.value.type == redis::reply::kind::array)
    for (auto& e : r.value.elements) out.push_back(std::move(e.str));
  co_return out;
}

task<std::size_t> redis_queue::reap_lost(redis::connection& c, std::size_t limit, const object_editor& failed_object) {
  std::vector<std::string> keys{running_key()};
  std::vector<std::string> args{std::to_string(limit)};
  auto r = co_await run(c, expired, std::move(keys), std::move(args));
  if (!r.ok() || r.value.type != redis::reply::kind::array) co_return 0;
  std::size_t failed = 0;
  const std::string retention = ms(std::chrono::duration_cast<std::chrono::milliseconds>(opts_.response_retention));
  for (const auto& e : r.value.elements) {
    const std::string& id = e.str;
    auto h = co_await c.command_within(opts_.command_timeout, "HMGET", response_key(id), "st", "wk", "last", "obj");
    if (!h.ok() || h.value.elements.size() != 4) continue;
    const auto& f = h.value.elements;
    if (f[0].str != "in_progress") {
      (void)co_await c.command_within(opts_.command_timeout, "ZREM", running_key(), id);  // ended, or never started: nothing to fail
      continue;
    }
    const std::int64_t last = to_int(f[2].str, -1);
    constexpr std::string_view code = "worker_lost";
    constexpr std::string_view message = "The worker running this response stopped (unheard for worker-loss-timeout); retry the request.";
    std::vector<std::string> lkeys{response_key(id), events_key(id)};
    std::vector<std::string> largs{f[1].str, std::to_string(last), error_event_text(last + 1, code, message),
                                   failed_object(f[3].str, code, message), retention};
    auto lost = co_await run(c, lose_job, std::move(lkeys), std::move(largs));
    if (!lost.ok()) continue;
    const auto v = lost.value.as_integer().value_or(0);
    if (v == 2) continue;  // it moved on: its worker lives (its lease will be renewed)
    (void)co_await c.command_within(opts_.command_timeout, "ZREM", running_key(), id);
    if (v == 1) {
      ++failed;
      co_await settle_lost(c, id);
    }
  }
  co_return failed;
}

}  // namespace sluice::jobs
