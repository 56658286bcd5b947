// The routes of stored responses (stored_responses.hpp).
#include <charconv>
#include <sstream>

#include <boost/json/parse.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/serialize.hpp>

#include "http/error_response.hpp"
#include "jobs/wakeup.hpp"
#include "observability/gauge_hold.hpp"
#include "observability/log.hpp"
#include "jobs/redis_outage.hpp"
#include "proxy/relay/in_band.hpp"
#include "proxy/responses/job_sink.hpp"
#include "proxy/answers.hpp"
#include "proxy/responses/stored_responses.hpp"
#include "sse/parser.hpp"

namespace sluice::proxy {

namespace json = boost::json;

namespace {

// A follower re-checks its client and the drain this often while no event comes.
constexpr auto follow_recheck = std::chrono::milliseconds(250);
// Bytes of stored events a follower takes and writes in one go.
constexpr std::size_t follow_batch_bytes = 64 * 1024;

// The value of `name` in the target's query ("" when absent).
std::string_view query_value(std::string_view target, std::string_view name) {
  auto q = target.find('?');
  if (q == std::string_view::npos) return {};
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    auto amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    auto eq = pair.find('=');
    if (pair.substr(0, eq) == name) return eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
  }
  return {};
}


// The body the job sends upstream: the client's, streamed, without `background` (upstreams
// without background responses would refuse it; the gateway is the one running it in the background).
std::string job_body(std::string_view body) {
  error_code ec;
  auto v = json::parse(body, ec);
  if (ec || !v.is_object()) return std::string(body);  // validated before: not reached
  auto& o = v.as_object();
  o.erase("background");
  o["stream"] = true;
  return json::serialize(o);
}


// The largest sequence number a client may name: 2^53 - 1, the largest integer every JSON reader
// holds exactly. Checked before use: the stores add one to it (Redis stream entry ids).
constexpr std::int64_t max_starting_after = (std::int64_t{1} << 53) - 1;

// `starting_after` of a stream's query: -1 when absent; nullopt when not a sequence number in range.
std::optional<std::int64_t> starting_after(std::string_view target) {
  std::int64_t after = -1;
  if (auto v = query_value(target, "starting_after"); !v.empty()) {
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), after);
    if (ec != std::errc{} || p != v.data() + v.size() || after < 0 || after > max_starting_after) return std::nullopt;
  }
  return after;
}

error bad_starting_after() {
  return error::make(errc::bad_request,
                     "starting_after must be a sequence number: an integer from 0 to " + std::to_string(max_starting_after) + ".",
                     "starting_after");
}


// How long a follower rides out its store not answering (Redis) before it ends the stream in-band
// (the client resumes with starting_after).
constexpr auto follow_store_patience = std::chrono::seconds(2);
// Events a follower of a Redis-held response takes in one read.
constexpr std::size_t follow_batch_events = 128;

error not_found(std::string_view id) {
  return error::make(errc::not_found, "No response found with id '" + std::string(id) + "'.", "response_id");
}

// A response a client may see: its own tenant's (docs/security.md), and a response rather than a
// front's foreground job.
bool retrievable_by(const jobs::response_view& r, const request_context& ctx) {
  return r.owner == ctx.tenant && !r.foreground_job;
}

}  // namespace

stored_responses::stored_responses(const shared_config& cfg) : cfg_(cfg) {
  if (cfg.svc.responses) memory_.emplace(*cfg.svc.responses, follow_batch_bytes, follow_recheck);
  if (cfg.svc.queue && cfg.svc.redis && cfg.jobs)
    queue_.emplace(*cfg.svc.queue, [r = cfg.svc.redis] { return r->current(); }, cfg.svc.jobs, cfg.jobs->poll_interval,
                   follow_batch_events);
}

task<void> stored_responses::refuse_background(request_context& ctx, jobs::store_refusal why, std::uint64_t waiting) {
  if (cfg_.svc.jobs) cfg_.svc.jobs->refused(why);
  bhttp::fields extra;
  if (why == jobs::store_refusal::queue_full) {
    extra.set(bhttp::field::retry_after, std::to_string(queue_retry_after(waiting, *cfg_.jobs)));
    co_return co_await refuse(ctx, error::make(errc::rate_limited, "Too many background responses are waiting; retry later."),
                              obs::reject_reason::queue_full, &extra);
  }
  extra.set(bhttp::field::retry_after, "5");
  co_await refuse(ctx, error::make(errc::overloaded, "The gateway's response store is full; retry later."),
                  obs::reject_reason::queue_full, &extra);
}

task<void> stored_responses::map_previous_response(request_context& ctx, http::request& req) {
  const std::string& id = ctx.previous_response_id;
  if (!is_gateway_response_id(id)) co_return;  // an upstream's own id, or one the gateway never gave
  std::string upstream;
  for (jobs::response_backend* b : {in_memory(), in_queue()}) {
    if (!b || !upstream.empty()) continue;
    auto found = co_await b->find(id);
    if (found && *found && retrievable_by(**found, ctx)) upstream = std::move((*found)->upstream_id);
  }
  // Unknown here (another tenant's, expired, not begun yet, or its store did not answer): it goes
  // on as it is, and the upstream answers for it.
  if (upstream.empty()) co_return;
  error_code ec;
  auto v = json::parse(req.body(), ec);
  if (ec || !v.is_object()) co_return;  // validated before: not reached
  v.as_object()["previous_response_id"] = upstream;
  req.body() = json::serialize(v);
  req.prepare_payload();
}

task<void> stored_responses::create_background(request_context& ctx, http::request& req) {
  auto* store = cfg_.svc.responses;
  if (!store && !cfg_.svc.queue)
    co_return co_await send_error(ctx, error::make(errc::bad_request, "Background responses are not enabled on this gateway.",
                                                   "background"));
  const std::string id = new_response_id();
  std::string queued = queued_response_object(id, ctx.model, true, req.body());
  auto headers = job_headers(req);
  ctx.trace.carry_into(headers);  // the job's run continues this request's trace
  jobs::new_response r{id, true, queued, std::move(headers), job_body(req.body()), ctx.tenant, {}, {}};
  if (cfg_.svc.queue) {
    auto sealed = sealed_credential(req, id);
    if (!sealed) co_return co_await send_error(ctx, sealed.err());
    co_return co_await create_queued(ctx, std::move(r), std::move(*sealed));
  }
  // In-process: the client's own upstream key (pass-through) stays in this process's memory.
  if (auto key = upstream_credential(req); !key.empty()) r.headers.emplace_back("Authorization", std::move(key));
  auto made = store->create(std::move(r), true);
  if (auto* why = std::get_if<jobs::store_refusal>(&made)) co_return co_await refuse_background(ctx, *why, store->waiting());
  auto rec = std::get<std::shared_ptr<jobs::response_record>>(std::move(made));
  // background + stream: the client follows its job from the start; leaving does not cancel it.
  if (ctx.stream) co_return co_await follow(ctx, *in_memory(), rec->id(), -1);
  // As it was queued (a job slot may have taken it already: GET says so).
  co_await send_json(ctx, bhttp::status::ok, std::move(queued), "application/json");
}

std::string stored_responses::upstream_credential(const http::request& req) const {
  if (cfg_.svc.keys) return {};  // with client keys, the client's key is sluice's own: never sent on
  bool keyless = false;
  for (std::size_t i = 0; i < cfg_.router.size(); ++i) keyless = keyless || cfg_.router.at(i).authorization.empty();
  if (!keyless) return {};
  auto it = req.find(bhttp::field::authorization);
  return it == req.end() ? std::string() : std::string(it->value());
}

result<std::string> stored_responses::sealed_credential(const http::request& req, std::string_view id) const {
  const std::string key = upstream_credential(req);
  if (key.empty()) return std::string();
  if (!cfg_.svc.seal) {
    auto e = error::make(errc::overloaded,
                         "This gateway passes clients' own keys upstream, and a job queued through Redis carries the key only "
                         "sealed under the fleet's queue secret (queue-secret-env), which is not configured; the job was not "
                         "queued.");
    e.api_code = "queue_secret_missing";
    return e;
  }
  return cfg_.svc.seal->seal(key, id);
}

task<void> stored_responses::create_queued(request_context& ctx, jobs::new_response r, std::string sealed) {
  auto& queue = *cfg_.svc.queue;
  auto* c = cfg_.svc.redis->current();
  std::optional<jobs::store_refusal> refusal;
  if (c)
    if (auto made = co_await queue.create(*c, r, sealed)) refusal = *made;
  if (!refusal || *refusal == jobs::store_refusal::duplicate) {
    if (cfg_.svc.jobs) cfg_.svc.jobs->redis_error(jobs::metrics::redis_op::create);
    bhttp::fields extra;
    extra.set(bhttp::field::retry_after, "1");
    co_return co_await refuse(ctx, queue_unavailable_error(), obs::reject_reason::queue_unavailable, &extra);
  }
  if (*refusal != jobs::store_refusal::none) {
    // (No co_await inside a conditional expression: GCC 12 miscompiles it.)
    std::optional<std::uint64_t> waiting;
    if (c) waiting = co_await queue.waiting(*c);
    co_return co_await refuse_background(ctx, *refusal, waiting.value_or(queue.settings().jobs_max_waiting));
  }
  if (ctx.stream) co_return co_await follow(ctx, *in_queue(), r.id, -1);
  co_await send_json(ctx, bhttp::status::ok, std::move(r.object), "application/json");
}

task<void> stored_responses::serve(request_context& ctx, const http::request& req) {
  jobs::response_backend* holder = nullptr;
  std::optional<jobs::response_view> found;
  if (auto* m = in_memory()) {
    auto local = co_await m->find(ctx.response_id);  // the memory store always answers
    if (local && *local) found = std::move(*local), holder = m;
  }
  // Held by another worker process of the pod: the connection goes there, once (a connection that
  // came from another worker is answered here, whatever its store says).
  if (!found && cfg_.svc.handover && ctx.socket && !ctx.socket->handed_over()) {
    if (auto row = cfg_.svc.handover->holder(ctx.response_id)) co_return co_await hand_over(ctx, req, *row);
  }
  // Not a stream recorded here: a background response in the fleet's queue.
  if (!found && in_queue()) {
    auto read = co_await in_queue()->find(ctx.response_id);
    if (!read) co_return co_await send_error(ctx, queue_unavailable_error());
    found = std::move(*read), holder = in_queue();
  }
  // Another key's response, and a front's foreground job, are as unknown as a missing one.
  if (!found || !retrievable_by(*found, ctx)) co_return co_await send_error(ctx, not_found(ctx.response_id));
  if (ctx.response_cancel) co_return co_await cancel(ctx, *holder, *found);
  const std::string_view target = req.target();
  if (query_value(target, "stream") == "true") {
    const auto after = starting_after(target);
    if (!after) co_return co_await send_error(ctx, bad_starting_after());
    co_return co_await follow(ctx, *holder, ctx.response_id, *after);
  }
  co_await send_json(ctx, bhttp::status::ok, std::move(found->object), "application/json");
}

task<void> stored_responses::cancel(request_context& ctx, jobs::response_backend& holder, const jobs::response_view& found) {
  if (!found.background)
    co_return co_await send_error(ctx, error::make(errc::bad_request, "Only background responses can be cancelled.", "response_id"));
  if (jobs::is_final(found.state) && found.state != jobs::status::cancelled)
    co_return co_await send_error(ctx, error::make(errc::bad_request, "Cannot cancel a response that has already finished (status " +
                                                                       std::string(jobs::to_string(found.state)) + ").",
                                                   "response_id"));
  const auto as_cancelled = [](std::string_view object) { return response_object_with(object, jobs::status::cancelled); };
  auto done = co_await holder.cancel(ctx.response_id, found, as_cancelled);
  if (!done) co_return co_await send_error(ctx, queue_unavailable_error());
  // A running job ends where it runs; the answer already says what it will say.
  co_await send_json(ctx, bhttp::status::ok, as_cancelled(found.object), "application/json");
}

task<void> stored_responses::hand_over(request_context& ctx, const http::request& req, std::size_t row) {
  // The request as it was read (its body whole: a cancel's, if any), then what the client sent
  // after it; the other worker reads them as if they had just arrived.
  http::request copy = req;
  copy.prepare_payload();
  std::ostringstream raw;
  raw << copy;
  std::string bytes = std::move(raw).str();
  bytes.append(ctx.socket->unread());
  if (cfg_.svc.handover->hand_over(row, ctx.socket->socket().native_handle(), bytes)) {
    ctx.socket->let_go();
    ctx.handed_over = true;
    ctx.keep_alive = false;
    co_return;
  }
  bhttp::fields extra;
  extra.set(bhttp::field::retry_after, "1");
  error e = error::make(errc::overloaded, "The worker process holding this response could not take the request; retry.",
                        "response_id");
  co_await send_error(ctx, e, &extra);
}

task<void> stored_responses::follow(request_context& ctx, jobs::response_backend& holder, std::string_view id,
                                    std::int64_t after) {
  std::optional<obs::gauge_hold> following;
  if (cfg_.svc.jobs) following.emplace(cfg_.svc.jobs->followers());
  if (!co_await open_event_stream(ctx)) co_return;
  auto feed = co_await holder.follow(id);
  follow_cursor cur{after, {}};
  jobs::redis_outage outage(follow_store_patience);
  for (;;) {
    auto read = co_await feed->read_after(cur.last);
    if (read) {
      outage.answered();
    } else if (outage.failed(runtime::steady::now()).give_up) {
      // The store stayed away: an in-band error, never a silent end; the client resumes from `last`.
      const auto e = error::make(errc::overloaded, "The response store is unavailable; resume this stream with starting_after.");
      co_return co_await end_follow(ctx, e, cur.last, "queue_unavailable");
    }
    jobs::event_batch batch = read ? std::move(*read) : jobs::event_batch{};
    if (batch.missing) co_return co_await lost_under_follower(ctx, id, cur.last);
    switch (co_await deliver(ctx, batch, cur)) {
      case follow_next::more: continue;
      case follow_next::done: co_return;
      case follow_next::wait: break;
    }
    co_await feed->wait();
  }
}

task<void> stored_responses::lost_under_follower(request_context& ctx, std::string_view id, std::int64_t last) {
  // Its keys vanished under a live follow (Redis restarted without its data, evicted them, or
  // someone deleted them): said in-band, counted and logged.
  if (cfg_.svc.jobs) cfg_.svc.jobs->vanished(jobs::metrics::vanished_kind::response);
  obs::log_warn("response missing from redis under its follower",
                {{"request_id", ctx.request_id}, {"trace_id", ctx.trace.trace().hex()}, {"response", id}});
  const auto e = error::make(errc::internal, "The response was lost by the store (Redis lost its data); retry the request.");
  co_await end_follow(ctx, e, last, "response_lost");
}

task<void> stored_responses::end_follow(request_context& ctx, const error& e, std::int64_t last, std::string_view reason) {
  co_await end_in_band(*ctx.conn, e, true, last + 1);
  ctx.end.outcome = obs::outcome::internal;
  ctx.end.reason = reason;
}

task<stored_responses::follow_next> stored_responses::deliver(request_context& ctx, jobs::event_batch& batch, follow_cursor& cur) {
  if (!batch.events.empty()) {
    cur.out.clear();
    for (const auto& e : batch.events) cur.out += e;
    if (!co_await ctx.conn->write_chunk(cur.out)) co_return left_follow(ctx);
    cur.last = batch.last_seq;
    ctx.end.bytes_out += cur.out.size();
  }
  if (batch.finished) {
    ctx.end.written = (co_await ctx.conn->finish_chunks()).has_value();
    co_return follow_next::done;
  }
  if (!batch.events.empty()) co_return follow_next::more;
  if (ctx.cancel.cancelled()) co_return left_follow(ctx);
  if (cfg_.svc.drain.cutting.load(std::memory_order_relaxed)) {
    co_await cut_follow(ctx, cur.last);
    co_return follow_next::done;
  }
  co_return follow_next::wait;
}

stored_responses::follow_next stored_responses::left_follow(request_context& ctx) noexcept {
  ctx.end.outcome = obs::outcome::cancelled;
  ctx.end.reason = to_string(cancel_reason::client_gone);
  return follow_next::done;
}

task<bool> stored_responses::open_event_stream(request_context& ctx) {
  bhttp::response<bhttp::empty_body> head{bhttp::status::ok, ctx.version};
  head.set(bhttp::field::content_type, "text/event-stream");
  head.set(bhttp::field::cache_control, "no-cache");
  head.set("x-accel-buffering", "no");
  head.set("x-request-id", ctx.request_id);
  head.keep_alive(ctx.keep_alive);
  ctx.end.kind = end_kind::stream;
  ctx.end.status = 200;
  if (co_await ctx.conn->write_head(head)) co_return true;
  ctx.end.outcome = obs::outcome::cancelled;
  ctx.end.reason = to_string(cancel_reason::client_gone);
  co_return false;
}

task<void> stored_responses::cut_follow(request_context& ctx, std::int64_t last) {
  // The drain's cut: an in-band error, so the client resumes from `last` on another replica.
  const auto e = error::make(errc::overloaded, "The gateway is shutting down; resume this stream with starting_after.");
  co_await end_in_band(*ctx.conn, e, true, last + 1);
  ctx.end.outcome = obs::outcome::cancelled;
  ctx.end.reason = to_string(cancel_reason::draining);
}

}  // namespace sluice::proxy
