// Background jobs (docs/queue.md): a job slot (run_jobs) takes a background response's job from
// the memory store and runs it through a thread's pipeline (job_runner: the same attempt loop and
// relay as a client's request) into the response's event log (job_sink). The routes that create,
// read and cancel stored responses are stored_responses'.
#include "jobs/wakeup.hpp"
#include "proxy/responses/job_runner.hpp"
#include "proxy/responses/job_sink.hpp"

namespace sluice::proxy {

task<void> run_jobs(job_runner& runner, jobs::memory_store& store, const std::atomic<bool>& draining,
                    jobs::metrics* counts) {
  jobs::wakeup wake(co_await net::this_coro::executor);
  for (;;) {
    auto cs = co_await net::this_coro::cancellation_state;
    if (cs.cancelled() != net::cancellation_type::none) co_return;
    // Draining: what is queued stays queued (memory mode loses it with the process; docs/queue.md).
    if (draining.load(std::memory_order_relaxed)) co_return;
    auto rec = store.take_job();
    if (!rec) {
      // Registered as idle until a put() pops and notifies it: an idle slot never wakes on its own
      // (the slots of a process that runs no background job cost it nothing); stop() cancels it.
      store.wait_for_job(wake.get_handle());
      co_await wake.wait();
      continue;
    }
    if (!rec->start(response_object_with(rec->object(), jobs::status::in_progress))) continue;  // cancelled meanwhile
    if (counts) counts->job_started();
    co_await run_job(runner, rec);
    if (counts) counts->job_ended(rec->state());
  }
}

task<void> run_job(job_runner& runner, std::shared_ptr<jobs::response_record> rec) {
  job_sink sink(rec);
  http::request req{bhttp::verb::post, "/v1/responses", 11};
  for (const auto& [k, v] : rec->headers()) req.insert(k, v);
  req.body() = rec->body();
  req.prepare_payload();
  co_await runner.run_job_in(sink, rec, req, rec->id());
}

}  // namespace sluice::proxy
