#include "proxy/responses/redis_worker.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include "jobs/redis_outage.hpp"
#include "observability/log.hpp"
#include "proxy/responses/job_sink.hpp"

namespace sluice::proxy {

namespace {

// How often a worker asks Redis which of its running jobs clients cancelled: a cancelled job's
// upstream is closed within this (plus one command's time).
constexpr auto cancel_poll = std::chrono::milliseconds(50);
// How often the queue's length is read for sluice_queue_jobs_waiting.
constexpr auto sample_every = std::chrono::seconds(1);
// Bytes of events one append carries.
constexpr std::size_t mirror_batch_bytes = 64 * 1024;
// A mirror that cannot reach Redis tries again this often.
constexpr auto mirror_retry = std::chrono::milliseconds(100);
// Jobs of dead workers failed per upkeep round.
constexpr std::size_t reap_batch = 100;

task<void> sleep_for(duration d) {
  net::steady_timer t(co_await net::this_coro::executor);
  t.expires_after(d);
  error_code ec;
  co_await t.async_wait(ec_out(ec));
}

bool cancelled_now(const net::cancellation_state& cs) { return cs.cancelled() != net::cancellation_type::none; }

// A job whose sealed client key did not open here: failed before it runs, with an error event for
// a background response's followers (a foreground job's front reads the failed object instead).
void fail_unopened(jobs::response_record& rec) {
  constexpr std::string_view code = "queue_secret_mismatch";
  constexpr std::string_view message =
      "The worker could not open the client's sealed key: its queue secret (queue-secret-env) differs from the front's or is unset.";
  if (rec.wire().empty()) rec.append(0, jobs::error_event_text(0, code, message));
  rec.finish(jobs::status::failed, response_object_with(rec.object(), jobs::status::failed, code, message));
}

}  // namespace

redis_worker::redis_worker(jobs::redis_queue& queue, redis::client& redis, runtime::loop_pool& pool, pipeline_of pipelines,
                           jobs::metrics& metrics, const drain_state& drain, jobs::redis_notifier* notifier,
                           const jobs::credential_seal* seal)
    : queue_(queue),
      redis_(redis),
      pool_(pool),
      pipelines_(std::move(pipelines)),
      metrics_(metrics),
      drain_(drain),
      notifier_(notifier),
      seal_(seal) {}

void redis_worker::start(runtime::task_group& group) {
  group_ = &group;
  auto ex = pool_.context(0).get_executor();
  group.spawn(ex, sample_loop(), "job queue sampler", true);
  // Every role: a front's recorded streams hold leases too, and any process may reap.
  group.spawn(ex, upkeep_loop(), "job upkeep loop", true);
}

void redis_worker::start_pulling(runtime::task_group& group) {
  group.spawn(pool_.context(0).get_executor(), pull_loop(group), "job pull loop", true);
}

void redis_worker::mirror_recorded(std::shared_ptr<jobs::response_record> rec) {
  if (!group_ || !redis_.current()) return;
  group_->spawn(redis_.current()->executor(), run_recorded(std::move(rec)), "recorded stream mirror", true);
}

task<void> redis_worker::run_recorded(std::shared_ptr<jobs::response_record> rec) {
  auto* c = redis_.current();
  if (!c) co_return;
  jobs::new_response r{rec->id(), false, rec->object(), {}, {}, rec->owner(), {}, rec->upstream_id()};
  // Not taken (Redis away, or the id is someone else's): the stream stays resumable here only.
  if (!co_await queue_.open(*c, r)) co_return;
  {
    std::lock_guard l(mu_);
    running_[rec->id()] = rec;
  }
  co_await mirror(rec);
  {
    std::lock_guard l(mu_);
    running_.erase(rec->id());
  }
  if (auto* now = redis_.current()) co_await queue_.release(*now, rec->id());
}

task<void> redis_worker::sample_loop() {
  for (;;) {
    auto cs = co_await net::this_coro::cancellation_state;
    if (cancelled_now(cs)) co_return;
    if (auto* c = redis_.current()) {
      if (auto n = co_await queue_.waiting(*c)) metrics_.queue_length(*n);
      if (auto held = co_await queue_.held_bytes(*c)) metrics_.redis_bytes(*held);
    }
    co_await sleep_for(sample_every);
  }
}

task<void> redis_worker::pull_loop(runtime::task_group& group) {
  jobs::wakeup wake(co_await net::this_coro::executor);
  slot_freed_ = wake.get_handle();
  // A job queued anywhere wakes this loop at once (Pub/Sub); the poll stays as the fallback.
  std::optional<jobs::redis_notifier::watch> queued;
  if (notifier_) queued.emplace(notifier_->watch_topic(std::string(jobs::redis_queue::jobs_topic), wake.get_handle()));
  const auto& opts = queue_.settings();
  const std::size_t slots = static_cast<std::size_t>(opts.worker_max_jobs);
  auto next_claim = runtime::steady::now();
  bool group_ready = false;
  for (;;) {
    auto cs = co_await net::this_coro::cancellation_state;
    if (cancelled_now(cs)) co_return;
    // Draining or retiring: no new jobs; what is queued stays queued for the other workers.
    if (drain_.draining.load(std::memory_order_relaxed) || drain_.retiring.load(std::memory_order_relaxed)) co_return;
    auto* c = redis_.current();
    const std::size_t busy = busy_.load(std::memory_order_relaxed);
    std::vector<jobs::queued_job> got;
    std::size_t asked = 0;
    if (c && c->connected() && busy < slots) {
      if (!group_ready) group_ready = co_await queue_.ensure_group(*c);
      std::size_t free = slots - busy;
      const auto now = runtime::steady::now();
      if (group_ready && now >= next_claim) {
        got = co_await queue_.claim_stale(*c, free);
        next_claim = now + std::chrono::milliseconds(queue_.lease_ms() / 3);
        if (!got.empty()) {
          metrics_.claimed(got.size());
          obs::log_warn("claimed jobs a dead worker had taken and never started", {{"jobs", got.size()}, {"worker", queue_.worker()}});
        }
      }
      free -= std::min(free, got.size());
      if (group_ready && free > 0) {
        asked = free;
        auto more = co_await queue_.take(*c, free);
        if (!more) metrics_.redis_error(jobs::metrics::redis_op::take);
        else for (auto& j : *more) got.push_back(std::move(j));
      }
    }
    for (auto& j : got) {
      busy_.fetch_add(1, std::memory_order_relaxed);
      const std::size_t t = next_thread_++ % pool_.size();
      group.spawn(pool_.context(t).get_executor(), run_one(std::move(j), t), "job", true);
    }
    // A full read may have left more behind: read again at once; otherwise wait for the poll or a
    // freed slot.
    if (asked > 0 && got.size() >= asked) continue;
    // Told of new jobs: wait long (the claims of dead workers' jobs run every lease/3 anyway).
    const duration idle = notifier_ && notifier_->live()
                              ? std::min<duration>(std::chrono::seconds(1), std::chrono::milliseconds(queue_.lease_ms() / 3))
                              : opts.poll_interval;
    co_await wake.wait(idle);
  }
}

task<void> redis_worker::run_one(jobs::queued_job job, std::size_t thread) {
  struct slot {
    redis_worker& w;
    ~slot() {
      w.busy_.fetch_sub(1, std::memory_order_relaxed);
      w.slot_freed_.notify();
    }
  } held{*this};
  auto* c = redis_.current();
  if (!c) co_return;  // not a pool thread: not reached
  auto loaded = co_await queue_.load(*c, job.id);
  if (!loaded) co_return;  // still delivered: claimed after a lease
  auto& stored = *loaded;
  if (!stored) {
    // Queued, and its response gone before any retention began: Redis lost it (evicted, deleted).
    metrics_.vanished(jobs::metrics::vanished_kind::job);
    obs::log_warn("queued job missing from redis: skipped", {{"job", job.id}, {"worker", queue_.worker()}});
    co_await queue_.forget(*c, job.id);
  }
  std::string object = response_object_with(stored ? stored->object : std::string(), jobs::status::in_progress);
  // Not queued (cancelled, taken by another, gone): start() says so and takes it out of the queue.
  const bool started = co_await queue_.start(*c, job, object);
  if (!started || !stored) co_return;
  const bool opened = unseal(*stored);
  jobs::new_response r{stored->id,
                       stored->background,
                       stored->object,
                       std::move(stored->headers),
                       std::move(stored->body),
                       std::move(stored->owner),
                       std::move(stored->wire),
                       std::move(stored->upstream_id)};
  auto rec = std::make_shared<jobs::response_record>(std::move(r), queue_.settings().response_max_bytes);
  rec->start(std::move(object));
  {
    std::lock_guard l(mu_);
    running_[rec->id()] = rec;
  }
  metrics_.job_started();
  if (!opened) {
    // Never run without the client's key: it would go upstream with none.
    obs::log_warn("job's sealed credential does not open here: failing it", {{"request_id", rec->id()}, {"worker", queue_.worker()}});
    fail_unopened(*rec);
  }
  {
    using namespace boost::asio::experimental::awaitable_operators;
    // (Not a conditional expression around the co_await: GCC 12.)
    if (!opened) co_await mirror(rec);
    else if (rec->wire().empty()) co_await (run_job(pipelines_(thread), rec) && mirror(rec));
    else co_await (run_wire_job(pipelines_(thread), rec) && mirror(rec));
  }
  {
    std::lock_guard l(mu_);
    running_.erase(rec->id());
  }
  if (auto* now = redis_.current()) co_await queue_.release(*now, rec->id());
  metrics_.job_ended(rec->state());
}

task<void> redis_worker::mirror(std::shared_ptr<jobs::response_record> rec) {
  jobs::wakeup wake(co_await net::this_coro::executor);
  rec->watch(wake.get_handle());  // not a follower: a recorded stream's orphan-timeout ignores it
  const bool foreground = !rec->wire().empty();
  // start() stored the object. The upstream's id is noted once: a foreground job's is no one's
  // previous_response_id; a recorded stream's came with open().
  mirror_cursor cur{-1, rec->object(), foreground, foreground || !rec->upstream_id().empty()};
  jobs::redis_outage outage(std::chrono::milliseconds(queue_.lease_ms()));
  for (;;) {
    // The state first: a final one means every event is in the record already.
    const auto st = rec->state();
    auto batch = rec->read_after(cur.last, mirror_batch_bytes);
    std::string object = rec->object();
    const bool final_now = jobs::is_final(st) && batch.finished;
    const bool changed = object != cur.written;
    if (batch.events.empty() && !changed && !final_now) {
      co_await wake.wait(std::chrono::seconds(1));
      continue;
    }
    const std::optional<jobs::status> new_state = final_now ? std::optional(st) : std::nullopt;
    const auto ours = co_await copy_batch(*rec, cur, batch, new_state, object, changed);
    if (!ours) {
      if (!ride_out(*rec, outage, object)) co_return;
      co_await sleep_for(mirror_retry);
      continue;
    }
    if (!*ours) {
      // Failed as worker_lost by another worker (this one's lease lapsed during an outage), or gone.
      obs::log_warn("job no longer this worker's: stopping it", {{"request_id", rec->id()}, {"worker", queue_.worker()}});
      rec->cancel(response_object_with(object, jobs::status::cancelled));
      co_return;
    }
    outage.answered();
    cur.last = batch.last_seq;
    cur.written = std::move(object);
    if (final_now) co_return;
  }
}

task<result<bool>> redis_worker::copy_batch(jobs::response_record& rec, mirror_cursor& cur, jobs::event_batch& batch,
                                            std::optional<jobs::status> final_state, const std::string& object,
                                            bool changed) {
  std::vector<jobs::stored_event> events;
  events.reserve(batch.events.size());
  for (std::size_t i = 0; i < batch.events.size(); ++i) events.push_back({batch.seqs[i], std::move(batch.events[i])});
  auto* c = redis_.current();
  if (!c) co_return jobs::redis_unavailable();
  if (!cur.upstream_id_noted) {
    if (const std::string up = rec.upstream_id(); !up.empty()) {
      co_await queue_.note_upstream_id(*c, rec.id(), up);
      cur.upstream_id_noted = true;
    }
  }
  const bool final_now = final_state.has_value();
  const std::string new_object = changed || final_now ? object : std::string();
  std::optional<std::int64_t> followed_ms_ago;
  auto ours = co_await queue_.append(*c, rec.id(), events, final_state, new_object, final_now, &followed_ms_ago,
                                     cur.foreground);
  if (followed_ms_ago) heard_followers(rec, *followed_ms_ago, cur.foreground && !final_now, object);
  co_return ours;
}

void redis_worker::heard_followers(jobs::response_record& rec, std::int64_t followed_ms_ago, bool may_orphan,
                                   const std::string& object) {
  // Someone follows it through another front: the relaying process's orphan-timeout hears of it.
  rec.followed_elsewhere(runtime::steady::now() - std::chrono::milliseconds(followed_ms_ago));
  // A foreground job whose front stopped reading (killed, or its client's cancel lost): stopped
  // after orphan-timeout, as a recorded stream with no follower is.
  if (may_orphan && std::chrono::milliseconds(followed_ms_ago) > queue_.settings().orphan_timeout) {
    obs::log_warn("foreground job no longer read by its front: stopping it (orphan-timeout)",
                  {{"request_id", rec.id()}, {"worker", queue_.worker()}});
    metrics_.orphaned();
    rec.cancel(response_object_with(object, jobs::status::cancelled));
  }
}

bool redis_worker::ride_out(jobs::response_record& rec, jobs::redis_outage& outage, const std::string& object) {
  metrics_.redis_error(jobs::metrics::redis_op::append);
  const auto v = outage.failed(runtime::steady::now());
  if (v.began) obs::log_warn("job events cannot reach redis: retrying", {{"request_id", rec.id()}});
  if (!v.give_up) return true;
  // Past redis-lease, not worker-loss-timeout: when Redis itself was away every process's leases
  // lapsed together and the reapers wait (jobs::reap_gate), so the job may live on; when only this
  // process lost Redis, others failed it worker_lost long ago. Either way, stop spending on it now.
  obs::log_warn("job events could not reach redis for a lease: stopping the job", {{"request_id", rec.id()}});
  rec.cancel(response_object_with(object, jobs::status::cancelled));
  return false;
}

bool redis_worker::unseal(jobs::stored_response& job) const {
  if (job.sealed_credential.empty()) return true;
  std::optional<std::string> key;
  if (seal_) key = seal_->open(job.sealed_credential, job.id);
  job.sealed_credential.clear();
  if (!key) return false;
  job.headers.emplace_back("Authorization", std::move(*key));
  return true;
}

void redis_worker::stop_job(const std::string& id) {
  std::shared_ptr<jobs::response_record> rec;
  {
    std::lock_guard l(mu_);
    if (auto it = running_.find(id); it != running_.end()) rec = it->second;
  }
  if (rec) rec->cancel(response_object_with(rec->object(), jobs::status::cancelled));
}

task<void> redis_worker::upkeep_loop() {
  jobs::reap_gate gate(queue_.settings().worker_loss_timeout);
  auto next_beat = runtime::steady::now();
  for (;;) {
    auto cs = co_await net::this_coro::cancellation_state;
    if (cancelled_now(cs)) co_return;
    if (auto* c = redis_.current(); c && c->connected()) {
      for (const auto& id : co_await queue_.cancelled(*c)) stop_job(id);
      // (On reconnecting, next_beat has long passed: the leases are renewed at once.)
      if (runtime::steady::now() >= next_beat) {
        next_beat = runtime::steady::now() + queue_.job_lease() / 3;
        co_await heartbeat(*c, gate);
      }
    } else {
      gate.heard(false, runtime::steady::now());
    }
    co_await sleep_for(cancel_poll);
  }
}

task<void> redis_worker::heartbeat(redis::connection& c, jobs::reap_gate& gate) {
  std::vector<std::string> ids;
  {
    std::lock_guard l(mu_);
    for (const auto& [id, rec] : running_) ids.push_back(id);
  }
  // One round trip even with nothing running: the gate needs to know Redis answered.
  const bool renewed = co_await queue_.renew(c, ids);
  metrics_.heartbeat(renewed);
  const auto now = runtime::steady::now();
  gate.heard(renewed, now);
  if (!gate.open(now)) co_return;  // lapsed leases may be an outage's, not dead processes'
  const auto lost = co_await queue_.reap_lost(c, reap_batch, [](const std::string& object, std::string_view code,
                                                               std::string_view message) {
    return response_object_with(object, jobs::status::failed, code, message);
  });
  if (lost > 0) {
    metrics_.lost(lost);
    obs::log_warn("failed jobs whose worker stopped (worker_lost)", {{"jobs", lost}, {"worker", queue_.worker()}});
  }
}

}  // namespace sluice::proxy
