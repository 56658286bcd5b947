// loadgen::run: set-up, the sampling loop on the calling thread, and the merge of per-thread results.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "loadgen/engine.hpp"
#include "runtime/loop_pool.hpp"

namespace sluice::loadgen {
namespace {

using namespace std::chrono_literals;

constexpr auto sample_period = 50ms;   // RSS sampling
constexpr int ticks_per_progress = 5;  // progress line every 250 ms
// After the deadline every socket is closed, so workers end at once; this grace only guards
// against a bug keeping a coroutine alive, so that run() still returns.
constexpr auto stop_grace = 5s;

result<tcp::endpoint> resolve(const target_url& t) {
  net::io_context ctx;
  tcp::resolver resolver(ctx);
  error_code ec;
  auto results = resolver.resolve(t.host, std::to_string(t.port), ec);
  if (ec || results.empty())
    return error::make(errc::bad_request, "cannot resolve target host '" + t.host + "': " + ec.message());
  return results.begin()->endpoint();
}

percentiles to_percentiles(const histogram& h) {
  constexpr double ms = 1e6;
  return {static_cast<double>(h.value_at(50)) / ms, static_cast<double>(h.value_at(90)) / ms,
          static_cast<double>(h.value_at(99)) / ms, static_cast<double>(h.max()) / ms, h.count()};
}

void print_progress(detail::run_state& rs, const std::vector<std::unique_ptr<detail::thread_state>>& states) {
  std::uint64_t finished = 0, failed = 0, chunks = 0;
  for (const auto& ts : states) {
    finished += ts->live.finished.load(std::memory_order_relaxed);
    failed += ts->live.failed.load(std::memory_order_relaxed);
    chunks += ts->live.chunks.load(std::memory_order_relaxed);
  }
  const double secs = std::chrono::duration<double>(clock::now() - rs.start).count();
  std::fprintf(stderr, "\r\033[Kflood %.1fs  open %lld  done %llu/%llu  failed %llu  chunks %llu", secs,
               static_cast<long long>(rs.open.load(std::memory_order_relaxed)),
               static_cast<unsigned long long>(finished), static_cast<unsigned long long>(rs.total),
               static_cast<unsigned long long>(failed), static_cast<unsigned long long>(chunks));
  std::fflush(stderr);
}

using thread_states = std::vector<std::unique_ptr<detail::thread_state>>;

// The target's address; source-ips needs it on IPv4 loopback.
result<tcp::endpoint> checked_endpoint(const options& opt, const target_url& target) {
  auto endpoint = resolve(target);
  if (!endpoint) return std::move(endpoint).err();
  if (opt.source_ips > 0 && !(endpoint->address().is_v4() && endpoint->address().is_loopback()))
    return error::make(errc::bad_request, "source-ips needs a target on an IPv4 loopback address (127.x.y.z), got " +
                                              endpoint->address().to_string());
  return endpoint;
}

// One thread_state per pool thread, the deadline armed on each thread with workers, and the
// workers spawned round-robin over the threads. The clock starts here.
void start_workers(runtime::loop_pool& pool, std::size_t threads, detail::run_state& rs, thread_states& states) {
  for (std::size_t i = 0; i < threads; ++i) states.push_back(std::make_unique<detail::thread_state>(pool.context(i)));
  rs.start = clock::now();
  rs.deadline = rs.start + std::chrono::duration_cast<clock::duration>(rs.opt.duration_limit);
  rs.running = rs.workers;
  for (std::uint64_t w = 0; w < rs.workers; ++w) ++states[w % threads]->workers_left;
  for (auto& ts : states) {
    if (ts->workers_left == 0) continue;
    ts->deadline_timer->expires_at(rs.deadline);
    ts->deadline_timer->async_wait([t = ts.get()](error_code ec) {
      if (!ec) t->expire();
    });
  }
  for (std::uint64_t w = 0; w < rs.workers; ++w) {
    detail::thread_state* ts = states[w % threads].get();
    net::co_spawn(*ts->ioc, detail::worker(ts, &rs, w), [ts, rsp = &rs](std::exception_ptr e) {
      if (e && !ts->crash) ts->crash = e;
      ts->worker_finished();
      rsp->worker_finished();
    });
  }
}

// The calling thread while the workers run: samples RSS, prints progress, passes a cancel on to
// every thread. True when workers outlived the grace after the deadline (or the cancel): a
// forced stop.
bool watch_workers(const options& opt, detail::run_state& rs, const thread_states& states, report& rep, int pid) {
  const bool progress = opt.progress && isatty(STDERR_FILENO);
  int tick = 0;
  auto hard_stop = rs.deadline + stop_grace;
  bool cancelled = false;
  bool forced = false;
  while (rs.running.load() > 0) {
    {
      std::unique_lock lock(rs.mutex);
      rs.done.wait_for(lock, sample_period, [&] { return rs.running.load() == 0; });
    }
    if (pid) rep.peak_rss_bytes = std::max(rep.peak_rss_bytes, runtime::read_rss_bytes(pid));
    if (progress && ++tick % ticks_per_progress == 0) print_progress(rs, states);
    if (!cancelled && opt.cancel && opt.cancel->load()) {
      // Cancelled: end the run now, exactly as the deadline would (each thread expires itself).
      cancelled = true;
      hard_stop = std::min(hard_stop, clock::now() + stop_grace);
      for (auto& ts : states) net::post(*ts->ioc, [t = ts.get()] { t->expire(); });
    }
    if (rs.running.load() > 0 && clock::now() > hard_stop) {
      forced = true;
      break;
    }
  }
  if (progress) std::fputs("\r\033[K", stderr);
  return forced;
}

// The run itself, on a pool of `threads`: it ends when every worker has, or by a forced stop after
// the grace; the pool is gone on return. rep gets the RSS peak and the wall time.
void run_workers(const options& opt, std::size_t threads, detail::run_state& rs, thread_states& states, report& rep,
                 int pid) {
  runtime::loop_pool pool(threads);
  start_workers(pool, threads, rs, states);
  pool.start();
  pool.release();
  const bool forced = watch_workers(opt, rs, states, rep, pid);
  if (forced) pool.stop();
  pool.join();
  for (auto& ts : states) ts->deadline_timer.reset();  // an I/O object must die before its io_context
  if (pid) rep.peak_rss_bytes = std::max(rep.peak_rss_bytes, runtime::read_rss_bytes(pid));
  rep.wall_seconds = std::chrono::duration<double>(clock::now() - rs.start).count();
  // A forced stop leaves requests uncounted; they were cut off by the deadline.
  if (forced)
    for (auto& ts : states) ts->stats.timeout += ts->in_flight;
}

// Every thread's counts and histograms into the report; a worker that threw fails the run.
result<void> merge_threads(const thread_states& states, report& rep, histogram& ttft, histogram& gap,
                           histogram& e2e) {
  for (const auto& ts : states) {
    if (ts->crash) {
      try {
        std::rethrow_exception(ts->crash);
      } catch (const std::exception& e) {
        return error::make(errc::internal, std::string("load generator worker failed: ") + e.what());
      }
    }
    const auto& s = ts->stats;
    rep.ok += s.ok;
    rep.abandoned_ok += s.abandoned_ok;
    rep.connect_errors += s.connect;
    rep.status_errors += s.status;
    rep.truncated += s.truncated;
    rep.malformed += s.malformed;
    rep.error_events += s.error_event;
    rep.timeouts += s.timeout;
    rep.retry_after_seen += s.retry_after;
    rep.chunks += s.chunks;
    rep.bytes += s.bytes;
    for (const auto& [code, n] : s.status_counts) rep.status_counts[code] += n;
    for (const auto& why : s.failure_samples)
      if (rep.failure_samples.size() < detail::thread_stats::max_failure_samples &&
          std::find(rep.failure_samples.begin(), rep.failure_samples.end(), why) == rep.failure_samples.end())
        rep.failure_samples.push_back(why);
    ttft.merge(s.ttft);
    gap.merge(s.gap);
    e2e.merge(s.e2e);
  }
  return ok;
}

}  // namespace

result<report> run(const options& opt) {
  if (auto v = validate(opt); !v) return std::move(v).err();
  auto target = parse_target(opt.target);
  if (!target) return std::move(target).err();
  auto endpoint = checked_endpoint(opt, *target);
  if (!endpoint) return std::move(endpoint).err();
  runtime::raise_fd_limit();

  // Declared before the pool: coroutine frames still in the io_contexts when the pool is
  // destroyed (only after a forced stop) unlink themselves from these.
  detail::run_state rs;
  rs.opt = opt;
  rs.endpoint = *endpoint;
  rs.request = detail::build_request(opt, *target);
  rs.total = opt.requests ? opt.requests : opt.concurrency;
  rs.workers = std::min(opt.concurrency, rs.total);
  const std::size_t threads = static_cast<std::size_t>(
      opt.threads ? opt.threads : std::min<std::uint64_t>(runtime::default_threads(), rs.workers));
  thread_states states;

  report rep;
  const int pid = static_cast<int>(opt.pid);
  if (pid) rep.baseline_rss_bytes = rep.peak_rss_bytes = runtime::read_rss_bytes(pid);

  run_workers(opt, threads, rs, states, rep, pid);

  histogram ttft, gap, e2e;
  if (auto m = merge_threads(states, rep, ttft, gap, e2e); !m) return std::move(m).err();
  rep.failed = rep.connect_errors + rep.status_errors + rep.truncated + rep.malformed + rep.error_events + rep.timeouts;
  rep.requests = rep.ok + rep.abandoned_ok + rep.failed;
  rep.peak_open_streams = static_cast<std::uint64_t>(rs.peak_open.load());
  rep.ttft = to_percentiles(ttft);
  rep.gap = to_percentiles(gap);
  rep.e2e = to_percentiles(e2e);
  rep.chunks_per_second = rep.wall_seconds > 0 ? static_cast<double>(rep.chunks) / rep.wall_seconds : 0;
  return rep;
}

}  // namespace sluice::loadgen
