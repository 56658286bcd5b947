// A front's side of a foreground job (queued_front.hpp). The client leaving cancels the job; queue-depth
// bounds the fleet's foreground queue and queue-timeout how long a job may wait in it (503 with
// Retry-After from the queue's length); a worker lost, Redis gone or its data lost each end the
// answer with a named error, in-band once the head is out.
#include <charconv>

#include <boost/json/parse.hpp>

#include "http/error_response.hpp"
#include "observability/log.hpp"
#include "jobs/redis_outage.hpp"
#include "proxy/relay/in_band.hpp"
#include "proxy/responses/job_sink.hpp"
#include "proxy/outcomes.hpp"
#include "proxy/answers.hpp"
#include "proxy/responses/queued_front.hpp"
#include "proxy/responses/wire_job.hpp"
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

task<void> queued_front::forward(request_context& ctx, http::request& req) {
  auto& queue = *cfg_.svc.queue;
  auto* m = cfg_.svc.jobs;
  const std::string id = new_job_id();
  auto headers = job_headers(req);
  // The worker answers under this request's id.
  std::erase_if(headers, [](const auto& h) { return boost::beast::iequals(h.first, "x-request-id"); });
  headers.emplace_back("x-request-id", ctx.request_id);
  ctx.trace.carry_into(headers);  // the worker's spans join this request's trace
  jobs::new_response r{id,      false, "{}", std::move(headers), std::string(req.body()), ctx.tenant,
                       wire_target(req.method(), ctx.path), {}};
  auto sealed = responses_.sealed_credential(req, id);
  if (!sealed) co_return co_await send_error(ctx, sealed.err());
  auto* c = cfg_.svc.redis->current();
  std::optional<jobs::store_refusal> refusal;
  if (c)
    if (auto made = co_await queue.create(*c, r, *sealed)) refusal = *made;
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
  co_await relay(ctx, id);
}

// The relay of one foreground job's log to its client (queued_front::relay): what it keeps
// between batches, and its steps. Lives in relay_queued's frame, on the client's thread; each step
// that ends the answer says so (false, or nullopt) and has set how the request ended.
class queued_relay {
 public:
  queued_relay(const shared_config& cfg, request_context& ctx, const std::string& id, net::any_io_executor ex);
  queued_relay(const queued_relay&) = delete;
  queued_relay& operator=(const queued_relay&) = delete;

  task<void> run();

 private:
  void count(jobs::metrics::foreground_outcome o) const {
    if (m_) m_->foreground(o);
  }
  // The job cancelled (dropped while queued, stopped on its worker); the status it had.
  task<std::optional<jobs::status>> cancel_job();
  // The client left (`reason`): its job is cancelled.
  task<void> left(std::string_view reason);
  // The answer cannot go on: an error answer while nothing is out, else in-band.
  task<void> end_with(const error& e, std::string_view reason);
  // The next batch of the log; nullopt once Redis stayed away for redis_patience (answer ended).
  task<std::optional<jobs::event_batch>> read();
  // The batch's pieces to the client: the head first, then the body (a stream's in one write).
  task<bool> relay_batch(jobs::event_batch& batch);
  // The head (the log's first piece): a stream's goes out at once, a whole answer's with its body.
  task<bool> open(std::string_view piece);
  // The log is complete: the answer's end, or the job's failure; then its keys go.
  task<void> conclude(jobs::status st);
  task<void> complete();
  task<void> fail();
  task<void> lost();
  // Still queued after queue-timeout: dropped and refused (true), unless a worker took it.
  task<bool> timed_out(const jobs::event_batch& batch);
  // The drain's cut of an answer under way.
  task<void> cut();

  const shared_config& cfg_;
  request_context& ctx_;
  const std::string& id_;
  jobs::redis_queue& queue_;
  jobs::metrics* m_;
  jobs::wakeup wake_;
  // Each append to the job's log is announced on this process's channel (Pub/Sub); without it
  // (subscriber reconnecting, or none) the relay polls every queue-poll-interval.
  jobs::redis_notifier* notifier_;
  std::optional<jobs::redis_notifier::watch> told_;
  runtime::steady::time_point enqueued_{};  // when the relay began: queue-timeout counts from here
  jobs::redis_outage outage_{redis_patience};
  std::optional<wire_head> head_;
  bool head_written_ = false;
  std::int64_t last_ = -1;           // the last piece relayed (its place in the log)
  std::int64_t responses_seq_ = -1;  // a Responses stream's own last sequence_number
  std::string out_;                  // the write buffer, or the whole body
};

namespace {

// The head's fields on `res`, under this request's id.
template <class Body>
void fill_head(bhttp::response<Body>& res, const wire_head& head, const request_context& ctx) {
  for (const auto& [k, v] : head.headers)
    if (k != "x-request-id") res.insert(k, v);
  res.set("x-request-id", ctx.request_id);
  res.keep_alive(ctx.keep_alive);
}

}  // namespace

queued_relay::queued_relay(const shared_config& cfg, request_context& ctx, const std::string& id,
                           net::any_io_executor ex)
    : cfg_(cfg),
      ctx_(ctx),
      id_(id),
      queue_(*cfg.svc.queue),
      m_(cfg.svc.jobs),
      wake_(std::move(ex)),
      notifier_(cfg.svc.notifier) {
  if (notifier_) told_.emplace(notifier_->watch_topic(queue_.response_key(id), wake_.get_handle()));
  enqueued_ = runtime::steady::now();
}

task<void> queued_relay::run() {
  for (;;) {
    if (ctx_.cancel.cancelled()) co_return co_await left(to_string(ctx_.cancel.reason()));
    auto batch = co_await read();
    if (!batch) co_return;
    if (batch->missing) co_return co_await lost();
    if (!co_await relay_batch(*batch)) co_return;
    if (batch->finished) co_return co_await conclude(batch->state);
    if (!batch->events.empty()) continue;
    if (co_await timed_out(*batch)) co_return;
    if (cfg_.svc.drain.cutting.load(std::memory_order_relaxed) && head_written_) co_return co_await cut();
    // Told: a long wait (it still ends for queue-timeout and a client that left); else a poll.
    co_await wake_.wait(notifier_ && notifier_->live() ? told_wait : cfg_.jobs->poll_interval);
  }
}

task<std::optional<jobs::status>> queued_relay::cancel_job() {
  std::optional<jobs::status> before;
  if (auto* c = cfg_.svc.redis->current())
    if (auto r = co_await queue_.cancel(*c, id_, "{}")) before = *r;
  co_return before;
}

task<void> queued_relay::left(std::string_view reason) {
  (void)co_await cancel_job();
  count(jobs::metrics::foreground_outcome::cancelled);
  ctx_.end.outcome = obs::outcome::cancelled;
  ctx_.end.reason = reason;
}

task<void> queued_relay::end_with(const error& e, std::string_view reason) {
  if (!head_written_) {
    co_await send_error(ctx_, e);
  } else {
    co_await end_in_band(*ctx_.conn, e, ctx_.which == api::responses, responses_seq_ + 1);
    ctx_.end.outcome = outcome_of_error(e);
  }
  ctx_.end.reason = reason;
}

task<std::optional<jobs::event_batch>> queued_relay::read() {
  auto* c = cfg_.svc.redis->current();
  result<jobs::event_batch> got = jobs::redis_unavailable();
  if (c) got = co_await queue_.read_after(*c, id_, last_, batch_events);
  if (got) {
    outage_.answered();
    co_return std::move(*got);
  }
  if (m_) m_->redis_error(jobs::metrics::redis_op::read);
  if (!outage_.failed(runtime::steady::now()).give_up) co_return jobs::event_batch{};
  obs::log_warn("foreground job: redis unavailable, ending the answer",
                {{"request_id", ctx_.request_id}, {"trace_id", ctx_.trace.trace().hex()}, {"job", id_}});
  (void)co_await cancel_job();
  count(jobs::metrics::foreground_outcome::unavailable);
  co_await end_with(queue_unavailable_error(), "queue_unavailable");
  co_return std::nullopt;
}

task<bool> queued_relay::relay_batch(jobs::event_batch& batch) {
  for (const std::string& piece : batch.events) {
    if (!head_) {
      if (!co_await open(piece)) co_return false;
      continue;
    }
    if (head_->stream && ctx_.which == api::responses) note_sequence_number(piece, responses_seq_);
    out_ += piece;
  }
  if (!batch.events.empty()) last_ = batch.last_seq;
  if (head_ && head_->stream && !out_.empty()) {
    // One write for the batch: what the client has not read stays in Redis.
    if (!co_await ctx_.conn->write_chunk(out_)) {
      co_await left(to_string(cancel_reason::client_gone));
      co_return false;
    }
    ctx_.end.bytes_out += out_.size();
    out_.clear();
  }
  co_return true;
}

task<bool> queued_relay::open(std::string_view piece) {
  head_ = parse_wire_head(piece);
  if (!head_) {
    count(jobs::metrics::foreground_outcome::failed);
    co_await end_with(error::make(errc::internal, "The job's answer could not be read."), "upstream_malformed");
    co_return false;
  }
  if (!head_->stream) co_return true;
  bhttp::response<bhttp::empty_body> h{static_cast<bhttp::status>(head_->status), ctx_.version};
  fill_head(h, *head_, ctx_);
  ctx_.end.kind = end_kind::stream;
  ctx_.end.status = static_cast<int>(head_->status);
  if (!co_await ctx_.conn->write_head(h)) {
    co_await left(to_string(cancel_reason::client_gone));
    co_return false;
  }
  head_written_ = true;
  out_.clear();
  co_return true;
}

task<void> queued_relay::conclude(jobs::status st) {
  if (st == jobs::status::completed && head_) {
    co_await complete();
    count(jobs::metrics::foreground_outcome::completed);
  } else {
    // Failed (worker_lost, too large, ...) or cancelled from elsewhere: the object says why.
    co_await fail();
  }
  if (auto* now = cfg_.svc.redis->current()) co_await queue_.forget(*now, id_);
}

task<void> queued_relay::complete() {
  if (head_->stream) {
    ctx_.end.written = (co_await ctx_.conn->finish_chunks()).has_value();
    ctx_.end.outcome = head_->status / 100 == 2 ? obs::outcome::ok : outcome_of_status(head_->status);
    co_return;
  }
  http::response res{static_cast<bhttp::status>(head_->status), ctx_.version};
  fill_head(res, *head_, ctx_);
  res.body() = std::move(out_);
  res.prepare_payload();
  ctx_.end.status = static_cast<int>(head_->status);
  ctx_.end.outcome = outcome_of_status(head_->status);
  ctx_.end.bytes_out = res.body().size();
  ctx_.end.written = (co_await ctx_.conn->write(res)).has_value();
}

task<void> queued_relay::fail() {
  std::optional<jobs::stored_response> found;
  if (auto* now = cfg_.svc.redis->current())
    if (auto r = co_await queue_.find(*now, id_)) found = std::move(*r);
  const error e = found ? failure_of(found->object) : error::make(errc::internal, "The job running this request ended without an answer.");
  const bool lost = e.api_code == "worker_lost";
  count(lost ? jobs::metrics::foreground_outcome::lost : jobs::metrics::foreground_outcome::failed);
  if (lost) obs::log_warn("foreground job's worker lost",
                {{"request_id", ctx_.request_id}, {"trace_id", ctx_.trace.trace().hex()}, {"job", id_}});
  co_await end_with(e, lost ? std::string_view("worker_lost") : std::string_view("job_failed"));
}

task<void> queued_relay::lost() {
  obs::log_warn("foreground job lost by redis",
                {{"request_id", ctx_.request_id}, {"trace_id", ctx_.trace.trace().hex()}, {"job", id_}});
  if (m_) m_->vanished(jobs::metrics::vanished_kind::job);
  count(jobs::metrics::foreground_outcome::lost);
  co_await end_with(error::make(errc::internal, "The queue lost this request's job (Redis lost its data); retry the request."),
                    "response_lost");
}

task<bool> queued_relay::timed_out(const jobs::event_batch& batch) {
  if (head_ || batch.state != jobs::status::queued || runtime::steady::now() - enqueued_ < cfg_.svc.admission_opts.queue_timeout)
    co_return false;
  // Waited queue-timeout for a job slot: dropped, unless a worker took it meanwhile.
  const auto before = co_await cancel_job();
  if (before != jobs::status::queued) co_return false;
  count(jobs::metrics::foreground_outcome::queue_timeout);
  std::optional<std::uint64_t> waiting;
  if (auto* now = cfg_.svc.redis->current()) waiting = co_await queue_.waiting(*now, true);
  bhttp::fields extra;
  extra.set(bhttp::field::retry_after,
            std::to_string(queue_retry_after(waiting.value_or(cfg_.svc.admission_opts.queue_depth), *cfg_.jobs)));
  co_await refuse(ctx_, admission_error(admission::refusal::queue_timeout), obs::reject_reason::queue_timeout, &extra);
  co_return true;
}

task<void> queued_relay::cut() {
  (void)co_await cancel_job();
  count(jobs::metrics::foreground_outcome::cancelled);
  co_await end_with(error::make(errc::overloaded, "The gateway is shutting down; retry the request."), "draining");
}

task<void> queued_front::relay(request_context& ctx, const std::string& id) {
  auto ex = co_await net::this_coro::executor;
  queued_relay relay(cfg_, ctx, id, std::move(ex));
  co_await relay.run();
}

}  // namespace sluice::proxy
