// Background jobs (docs/queue.md): a worker slot (run_jobs) takes a background response's job from
// the memory store and runs it through the same attempt loop and relay as a client's request, into
// the response's event log (job_sink). The routes that create, read and cancel stored responses
// are stored_responses'.
#include "jobs/wakeup.hpp"
#include "proxy/job_sink.hpp"
#include "proxy/pipeline.hpp"

namespace sluice::proxy {

task<void> pipeline::run_jobs(jobs::memory_store& store) {
  jobs::wakeup wake(co_await net::this_coro::executor);
  for (;;) {
    auto cs = co_await net::this_coro::cancellation_state;
    if (cs.cancelled() != net::cancellation_type::none) co_return;
    // Draining: what is queued stays queued (memory mode loses it with the process; docs/queue.md).
    if (cfg_.svc.drain.draining.load(std::memory_order_relaxed)) co_return;
    auto rec = store.take_job();
    if (!rec) {
      store.wait_for_job(wake.get_handle());
      co_await wake.wait(std::chrono::seconds(1));
      continue;
    }
    if (!rec->start(response_object_with(rec->object(), jobs::status::in_progress))) continue;  // cancelled meanwhile
    if (cfg_.svc.jobs) cfg_.svc.jobs->job_started();
    co_await run_job(rec);
    if (cfg_.svc.jobs) cfg_.svc.jobs->job_ended(rec->state());
  }
}

namespace {
// How a cancel from another thread finds the running job's sink (null once it ended).
struct job_stop {
  job_downstream* sink;
};
}  // namespace

task<void> pipeline::run_job(std::shared_ptr<jobs::response_record> rec) {
  job_sink sink(rec);
  http::request req{bhttp::verb::post, "/v1/responses", 11};
  for (const auto& [k, v] : rec->headers()) req.insert(k, v);
  req.body() = rec->body();
  req.prepare_payload();
  co_await run_job_in(sink, rec, req, rec->id());
}

task<void> pipeline::run_job_in(job_downstream& sink, std::shared_ptr<jobs::response_record> rec, http::request& req,
                                std::string request_id) {
  request_context ctx(sink, 11);
  ctx.job = true;
  ctx.request_id = std::move(request_id);
  ctx.trace.begin(req, ending_.trace_ratio());
  ctx.bytes_in = req.body().size();
  if (auto bad = parse(ctx, req)) {
    // Checked when it was created: only a configuration change in between gets here.
    co_await send_error(ctx, *bad);
    ending_.finish(ctx);
    sink.conclude("invalid_request");
    co_return;
  }
  auto stop = std::make_shared<job_stop>(job_stop{&sink});
  {
    auto watch = sink.watch_peer(ctx.cancel);
    auto ex = co_await net::this_coro::executor;
    rec->on_cancel([stop, ex] {
      net::post(ex, [stop] {
        if (stop->sink) stop->sink->cancel();
      });
    });
    co_await forward(ctx, req, false);
  }
  rec->on_cancel(nullptr);
  stop->sink = nullptr;
  ending_.finish(ctx);
  sink.conclude(ctx.end.reason);
}

}  // namespace sluice::proxy
