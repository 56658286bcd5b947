// A job's request through the pipeline's phases (job_runner, responses/job_runner.hpp): parse,
// forward (attempts and relay) into the job's downstream, finish. A cancel of the record, from any
// thread, reaches the running sink on this one.
#include "proxy/pipeline.hpp"
#include "proxy/responses/job_sink.hpp"

namespace sluice::proxy {

namespace {
// How a cancel from another thread finds the running job's sink (null once it ended).
struct job_stop {
  job_downstream* sink;
};
}  // namespace

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
