// A front's side of a foreground job (--queue redis, --role front; wire_job.hpp): the client's
// request enqueued, then the job's log relayed to the client as the answer it is, reading the next
// batch only once the client took the last one. The client leaving cancels the job; queue-depth
// bounds the fleet's foreground queue and queue-timeout how long a job may wait in it (503 with
// Retry-After from the queue's length); a worker lost, Redis gone or its data lost each end the
// answer with a named error, in-band once the head is out.
#include <charconv>

#include <boost/json/parse.hpp>

#include "http/error_response.hpp"
#include "observability/log.hpp"
#include "proxy/job_sink.hpp"
#include "proxy/outcomes.hpp"
#include "proxy/pipeline.hpp"
#include "proxy/wire_job.hpp"
#include "sse/parser.hpp"

namespace sluice::proxy {

namespace json = boost::json;

namespace {

// How long the relay rides out Redis not answering before it ends the answer with an error.
constexpr auto redis_patience = std::chrono::seconds(2);
// Events (pieces of the answer) read in one go.
constexpr std::size_t batch_events = 128;
// Longest wait for the next piece while Pub/Sub tells of each one: the client leaving and
// queue-timeout are checked this often.
constexpr auto told_wait = std::chrono::milliseconds(100);

// The last `"sequence_number":N` in a piece of a Responses stream (its events' own numbering, for
// an in-band error that continues it); `seq` unchanged when there is none.
void note_sequence_number(std::string_view piece, std::int64_t& seq) {
  constexpr std::string_view key = "\"sequence_number\":";
  const auto at = piece.rfind(key);
  if (at == std::string_view::npos) return;
  const char* p = piece.data() + at + key.size();
  const char* end = piece.data() + piece.size();
  while (p < end && *p == ' ') ++p;
  std::int64_t v = 0;
  if (auto [q, ec] = std::from_chars(p, end, v); ec == std::errc{}) seq = v;
}

// The error code and message a failed job's object names.
error failure_of(const std::string& object) {
  error_code ec;
  auto v = json::parse(object, ec);
  std::string code = "upstream_error", message = "The job running this request failed.";
  if (!ec && v.is_object())
    if (const auto* e = v.as_object().if_contains("error"); e && e->is_object()) {
      if (const auto* c = e->as_object().if_contains("code"); c && c->is_string()) code = std::string(c->as_string());
      if (const auto* m = e->as_object().if_contains("message"); m && m->is_string()) message = std::string(m->as_string());
    }
  const bool lost = code == "worker_lost";
  auto err = error::make(lost ? errc::upstream_connect : errc::upstream_protocol, std::move(message));
  err.api_code = std::move(code);
  return err;
}

}  // namespace

task<void> pipeline::forward_queued(request_context& ctx, http::request& req) {
  auto& queue = *cfg_.svc.queue;
  auto* m = cfg_.svc.jobs;
  const std::string id = new_job_id();
  auto headers = job_headers(req);
  // The worker answers under this request's id.
  std::erase_if(headers, [](const auto& h) { return boost::beast::iequals(h.first, "x-request-id"); });
  headers.emplace_back("x-request-id", ctx.request_id);
  jobs::new_response r{id,      false, "{}", std::move(headers), std::string(req.body()), ctx.tenant,
                       wire_target(req.method(), ctx.path), {}};
  auto sealed = sealed_credential(req, id);
  if (!sealed) co_return co_await send_error(ctx, sealed.err());
  auto* c = cfg_.svc.redis->current();
  jobs::redis_failure failure = jobs::redis_failure::unavailable;
  std::optional<jobs::store_refusal> refusal;
  if (c) {
    failure = jobs::redis_failure::none;
    refusal = co_await queue.create(*c, r, failure, *sealed);
  }
  bhttp::fields extra;
  if (!refusal || *refusal == jobs::store_refusal::duplicate) {
    if (m) {
      m->redis_error(jobs::metrics::redis_op::create);
      m->foreground(jobs::metrics::foreground_outcome::unavailable);
    }
    extra.set(bhttp::field::retry_after, "1");
    co_return co_await refuse(ctx, queue_unavailable_error(), obs::reject_reason::queue_unavailable, &extra);
  }
  if (*refusal == jobs::store_refusal::store_full) {
    if (m) m->foreground(jobs::metrics::foreground_outcome::store_full);
    extra.set(bhttp::field::retry_after, "5");
    co_return co_await refuse(ctx, error::make(errc::overloaded, "The gateway's response store is full; retry later."),
                              obs::reject_reason::queue_full, &extra);
  }
  if (*refusal != jobs::store_refusal::none) {
    if (m) m->foreground(jobs::metrics::foreground_outcome::queue_full);
    std::optional<std::uint64_t> waiting;
    if (c) waiting = co_await queue.waiting(*c, true);
    extra.set(bhttp::field::retry_after,
              std::to_string(queue_retry_after(waiting.value_or(cfg_.svc.admission_opts.queue_depth), *cfg_.jobs)));
    co_return co_await refuse(ctx, admission_error(admission::refusal::queue_full), obs::reject_reason::queue_full, &extra);
  }
  co_await relay_queued(ctx, id);
}

task<void> pipeline::relay_queued(request_context& ctx, const std::string& id) {
  auto& queue = *cfg_.svc.queue;
  auto* m = cfg_.svc.jobs;
  auto count = [m](jobs::metrics::foreground_outcome o) {
    if (m) m->foreground(o);
  };
  jobs::wakeup wake(co_await net::this_coro::executor);
  // Each append to the job's log is announced on this process's channel (Pub/Sub); without it
  // (subscriber reconnecting, or none) the relay polls every queue-poll-interval.
  auto* notifier = cfg_.svc.notifier;
  std::optional<jobs::redis_notifier::watch> told;
  if (notifier) told.emplace(notifier->watch_topic(queue.response_key(id), wake.get_handle()));
  const auto enqueued = runtime::steady::now();
  std::optional<runtime::steady::time_point> failing_since;
  std::optional<wire_head> head;
  bool head_written = false;
  std::int64_t last = -1;          // the last piece relayed (its place in the log)
  std::int64_t responses_seq = -1;  // a Responses stream's own last sequence_number
  std::string out;                  // the write buffer, or the whole body
  auto cancel_job = [&]() -> task<std::optional<jobs::status>> {
    jobs::redis_failure f = jobs::redis_failure::none;
    std::optional<jobs::status> before;
    if (auto* c = cfg_.svc.redis->current()) before = co_await queue.cancel(*c, id, "{}", f);
    co_return before;
  };
  // The answer cannot go on: an error answer while nothing is out, else in-band.
  auto end_with = [&](const error& e, std::string_view reason) -> task<void> {
    if (!head_written) {
      co_await send_error(ctx, e);
    } else {
      const std::string event = ctx.which == api::responses
                                    ? sse::format_event(http::responses_error_event(e, responses_seq + 1), "error")
                                    : sse::format_event(http::error_body(e));
      (void)co_await ctx.conn->write_last_chunk(event);
      ctx.end.outcome = outcome_of_error(e);
    }
    ctx.end.reason = reason;
  };
  for (;;) {
    if (ctx.cancel.cancelled()) {
      // The client left: its job is cancelled (dropped while queued, stopped on its worker).
      (void)co_await cancel_job();
      count(jobs::metrics::foreground_outcome::cancelled);
      ctx.end.outcome = obs::outcome::cancelled;
      ctx.end.reason = to_string(ctx.cancel.reason());
      co_return;
    }
    auto* c = cfg_.svc.redis->current();
    jobs::redis_failure failure = c ? jobs::redis_failure::none : jobs::redis_failure::unavailable;
    jobs::event_batch batch;
    if (c) batch = co_await queue.read_after(*c, id, last, batch_events, failure);
    if (failure != jobs::redis_failure::none) {
      if (m) m->redis_error(jobs::metrics::redis_op::read);
      const auto now = runtime::steady::now();
      if (!failing_since) failing_since = now;
      if (now - *failing_since >= redis_patience) {
        obs::log_warn("foreground job: redis unavailable, ending the answer", {{"request_id", ctx.request_id}, {"job", id}});
        (void)co_await cancel_job();
        count(jobs::metrics::foreground_outcome::unavailable);
        co_return co_await end_with(queue_unavailable_error(), "queue_unavailable");
      }
    } else {
      failing_since.reset();
    }
    if (batch.missing) {
      obs::log_warn("foreground job lost by redis", {{"request_id", ctx.request_id}, {"job", id}});
      if (m) m->vanished(jobs::metrics::vanished_kind::job);
      count(jobs::metrics::foreground_outcome::lost);
      co_return co_await end_with(error::make(errc::internal, "The queue lost this request's job (Redis lost its data); retry the request."),
                                  "response_lost");
    }
    for (std::size_t i = 0; i < batch.events.size(); ++i) {
      std::string& piece = batch.events[i];
      if (!head) {
        head = parse_wire_head(piece);
        if (!head) {
          count(jobs::metrics::foreground_outcome::failed);
          co_return co_await end_with(error::make(errc::internal, "The job's answer could not be read."), "upstream_malformed");
        }
        if (head->stream) {
          bhttp::response<bhttp::empty_body> h{static_cast<bhttp::status>(head->status), ctx.version};
          for (const auto& [k, v] : head->headers)
            if (k != "x-request-id") h.insert(k, v);
          h.set("x-request-id", ctx.request_id);
          h.keep_alive(ctx.keep_alive);
          ctx.end.kind = end_kind::stream;
          ctx.end.status = static_cast<int>(head->status);
          if (!co_await ctx.conn->write_head(h)) {
            (void)co_await cancel_job();
            count(jobs::metrics::foreground_outcome::cancelled);
            ctx.end.outcome = obs::outcome::cancelled;
            ctx.end.reason = to_string(cancel_reason::client_gone);
            co_return;
          }
          head_written = true;
          out.clear();
        }
        continue;
      }
      if (head->stream && ctx.which == api::responses) note_sequence_number(piece, responses_seq);
      out += piece;
    }
    if (!batch.events.empty()) last = batch.last_seq;
    if (head && head->stream && !out.empty()) {
      // One write for the batch: what the client has not read stays in Redis.
      if (!co_await ctx.conn->write_chunk(out)) {
        (void)co_await cancel_job();
        count(jobs::metrics::foreground_outcome::cancelled);
        ctx.end.outcome = obs::outcome::cancelled;
        ctx.end.reason = to_string(cancel_reason::client_gone);
        co_return;
      }
      ctx.end.bytes_out += out.size();
      out.clear();
    }
    if (batch.finished) {
      const auto st = batch.state;
      if (st == jobs::status::completed && head) {
        if (head->stream) {
          ctx.end.written = (co_await ctx.conn->finish_chunks()).has_value();
          ctx.end.outcome = head->status / 100 == 2 ? obs::outcome::ok : outcome_of_status(head->status);
        } else {
          http::response res{static_cast<bhttp::status>(head->status), ctx.version};
          for (const auto& [k, v] : head->headers)
            if (k != "x-request-id") res.insert(k, v);
          res.set("x-request-id", ctx.request_id);
          res.body() = std::move(out);
          res.keep_alive(ctx.keep_alive);
          res.prepare_payload();
          ctx.end.status = static_cast<int>(head->status);
          ctx.end.outcome = outcome_of_status(head->status);
          ctx.end.bytes_out = res.body().size();
          ctx.end.written = (co_await ctx.conn->write(res)).has_value();
        }
        count(jobs::metrics::foreground_outcome::completed);
      } else {
        // Failed (worker_lost, too large, ...) or cancelled from elsewhere: the object says why.
        std::optional<jobs::stored_response> found;
        jobs::redis_failure f = jobs::redis_failure::none;
        if (auto* now = cfg_.svc.redis->current()) found = co_await queue.find(*now, id, f);
        const error e = found ? failure_of(found->object) : error::make(errc::internal, "The job running this request ended without an answer.");
        const bool lost = e.api_code == "worker_lost";
        count(lost ? jobs::metrics::foreground_outcome::lost : jobs::metrics::foreground_outcome::failed);
        if (lost) obs::log_warn("foreground job's worker lost", {{"request_id", ctx.request_id}, {"job", id}});
        co_await end_with(e, lost ? std::string_view("worker_lost") : std::string_view("job_failed"));
      }
      if (auto* now = cfg_.svc.redis->current()) co_await queue.forget(*now, id);
      co_return;
    }
    if (!batch.events.empty()) continue;
    if (!head && batch.state == jobs::status::queued &&
        runtime::steady::now() - enqueued >= cfg_.svc.admission_opts.queue_timeout) {
      // Waited queue-timeout for a worker slot: dropped, unless a worker took it meanwhile.
      const auto before = co_await cancel_job();
      if (before == jobs::status::queued) {
        count(jobs::metrics::foreground_outcome::queue_timeout);
        std::optional<std::uint64_t> waiting;
        if (auto* now = cfg_.svc.redis->current()) waiting = co_await queue.waiting(*now, true);
        bhttp::fields extra;
        extra.set(bhttp::field::retry_after,
                  std::to_string(queue_retry_after(waiting.value_or(cfg_.svc.admission_opts.queue_depth), *cfg_.jobs)));
        co_return co_await refuse(ctx, admission_error(admission::refusal::queue_timeout), obs::reject_reason::queue_timeout,
                                  &extra);
      }
    }
    if (cfg_.svc.drain.cutting.load(std::memory_order_relaxed) && head_written) {
      (void)co_await cancel_job();
      count(jobs::metrics::foreground_outcome::cancelled);
      co_return co_await end_with(error::make(errc::overloaded, "The gateway is shutting down; retry the request."), "draining");
    }
    // Told: a long wait (it still ends for queue-timeout and a client that left); else a poll.
    co_await wake.wait(notifier && notifier->live() ? told_wait : cfg_.jobs->poll_interval);
  }
}

}  // namespace sluice::proxy
