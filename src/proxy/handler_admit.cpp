// handler::admit: who may send this request now — the client key and its limits, the memory shed
// threshold, then a slot from the bounded admission queue (raced against the client leaving).
#include <boost/asio/experimental/awaitable_operators.hpp>

#include "proxy/handler.hpp"
#include "proxy/handler_support.hpp"

namespace sluice::proxy {

using namespace boost::asio::experimental::awaitable_operators;
using namespace detail;

task<admission::acquire_result> handler::acquire_slot(http::connection& conn) {
  cancel_on_exit guard{conn};
  co_return co_await cfg_.svc.admission.acquire(cfg_.svc.admission_opts.per_stream_reservation);
}

task<std::optional<admission_ticket>> handler::admit(http::request& req, http::connection& conn, story& st,
                                                     bool keep) {
  auto& svc = cfg_.svc;
  auto& m = svc.metrics.gateway();
  admission_ticket ticket;

  if (svc.keys) {
    auto rl_start = runtime::steady::now();
    auto it = req.find(bhttp::field::authorization);
    auto who = svc.keys->authenticate_header(it == req.end() ? std::string_view{} : std::string_view(it->value()));
    if (!who) {
      // The message never repeats what the client sent.
      error e = error::make(errc::unauthorized, "Incorrect or missing API key. Pass a sluice client key as Bearer.");
      co_await send_error(e, conn, req.version(), false, st, obs::reject_reason::unauthorized);
      co_return std::nullopt;
    }
    auto got = svc.keys->try_acquire(*who);
    double rl_s = seconds_since(rl_start);
    m.overhead_seconds(obs::stage::ratelimit).observe(rl_s);
    st.overhead_seconds += rl_s;
    if (auto* refusal = std::get_if<admission::rate_refusal>(&got)) {
      error e = error::make(errc::rate_limited,
                            refusal->which == admission::rate_limit_kind::rpm
                                ? "Rate limit reached for requests per minute on this key."
                                : "Too many concurrent requests on this key.");
      bhttp::fields extra;
      extra.set(bhttp::field::retry_after, std::to_string(refusal->retry_after.count()));
      if (refusal->headers) {
        extra.set("x-ratelimit-limit-requests", std::to_string(refusal->headers->limit));
        extra.set("x-ratelimit-remaining-requests", std::to_string(refusal->headers->remaining));
        extra.set("x-ratelimit-reset-requests", refusal->headers->reset);
      }
      co_await send_error(e, conn, req.version(), keep, st, obs::reject_reason::rate_limit, &extra);
      co_return std::nullopt;
    }
    ticket.key = std::move(std::get<admission::key_permit>(got));
  }

  if (svc.budget.over_shed_threshold()) {
    error e = error::make(errc::overloaded, "The gateway is near its memory budget; retry shortly.");
    bhttp::fields extra;
    extra.set(bhttp::field::retry_after, std::to_string(svc.admission.retry_after_for(svc.admission.queued() + 1).count()));
    co_await send_error(e, conn, req.version(), keep, st, obs::reject_reason::memory, &extra);
    co_return std::nullopt;
  }

  auto queue_start = runtime::steady::now();
  // A free slot (the common case) is taken at once, without setting up a wait and a race with
  // the client; otherwise the request queues while the client is watched.
  if (auto now = svc.admission.try_admit_now(svc.admission_opts.per_stream_reservation)) {
    const double took_s = seconds_since(queue_start);
    m.queue_wait_seconds().observe(0.0);
    m.overhead_seconds(obs::stage::queue).observe(took_s);
    st.overhead_seconds += took_s;
    ticket.slot = std::move(*now);
    co_return std::optional<admission_ticket>(std::move(ticket));
  }
  m.queue_depth().Increment();
  upstream::abort_handle none;  // nothing upstream yet: the watcher only has to notice the client
  conn.rearm();
  auto r = co_await (acquire_slot(conn) || watch_client(conn, none));
  conn.rearm();
  m.queue_depth().Decrement();
  double queued_s = seconds_since(queue_start);
  m.queue_wait_seconds().observe(queued_s);
  m.overhead_seconds(obs::stage::queue).observe(queued_s);
  st.overhead_seconds += queued_s;
  if (r.index() == 2) {  // the client left while queued: it never reaches the upstream
    m.requests_total(st.route, obs::outcome::cancelled).Increment();
    co_return std::nullopt;
  }
  if (r.index() == 1) {
    const auto& refused = std::get<1>(r);
    error e = error::make(errc::overloaded, refused.why == admission::refusal::queue_full
                                                ? "The gateway is at capacity and its queue is full; retry later."
                                            : refused.why == admission::refusal::queue_timeout
                                                ? "The gateway is at capacity; the request waited too long in the queue."
                                                : "The gateway cannot take this request now; retry later.");
    bhttp::fields extra;
    extra.set(bhttp::field::retry_after, std::to_string(refused.retry_after.count()));
    co_await send_error(e, conn, req.version(), keep, st, reason_of(refused.why), &extra);
    co_return std::nullopt;
  }
  ticket.slot = std::move(std::get<0>(r));
  co_return std::optional<admission_ticket>(std::move(ticket));
}

}  // namespace sluice::proxy
