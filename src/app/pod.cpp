#include "app/pod.hpp"

#include <cstring>

#include "observability/log.hpp"
#include "runtime/loop_pool.hpp"

namespace sluice::app {

std::string_view to_string(process_exit e) noexcept {
  switch (e) {
    case process_exit::exit: return "exit";
    case process_exit::killed: return "killed";
    case process_exit::signal: return "signal";
  }
  return "exit";
}

std::uint64_t pod_state::rss_bytes() const noexcept {
  std::uint64_t sum = 0;
  for (const auto& w : workers)
    if (w.pid.load(std::memory_order_relaxed) != 0) sum += w.rss_bytes.load(std::memory_order_relaxed);
  return sum;
}

std::uint64_t pod_state::live_workers() const noexcept {
  std::uint64_t n = 0;
  for (const auto& w : workers) n += w.pid.load(std::memory_order_relaxed) != 0 ? 1 : 0;
  return n;
}

bool exposition_slot::store(std::string_view text) noexcept {
  if (mu_.lock_within(patience) == runtime::robust_mutex::within::busy) return false;
  const bool fits = text.size() <= capacity;
  size_ = fits ? text.size() : 0;
  if (fits && !text.empty()) std::memcpy(data_, text.data(), text.size());
  mu_.unlock();
  return fits;
}

std::optional<std::string> exposition_slot::load() {
  const auto got = mu_.lock_within(patience);
  if (got == runtime::robust_mutex::within::busy) return std::nullopt;
  if (got == runtime::robust_mutex::within::owner_died) size_ = 0;  // not a whole exposition
  std::string out(data_, size_);
  mu_.unlock();
  return out;
}

void exposition_slot::clear() noexcept {
  mu_.lock();
  size_ = 0;
  mu_.unlock();
}

namespace {
// Parsed, or nothing when the text is not an exposition (a truncated or foreign one).
void add_parsed(std::vector<obs::exposition>& parts, const std::string& text) {
  if (text.empty()) return;
  if (auto e = obs::parse_exposition(text)) parts.push_back(std::move(*e));
}

// A slot's part of a scrape; false: its lock stayed held (left out, counted by the caller).
bool add_slot(std::vector<obs::exposition>& parts, exposition_slot& slot) {
  auto text = slot.load();
  if (!text) return false;
  add_parsed(parts, *text);
  return true;
}
}  // namespace

bool pod_link::all_published(std::uint64_t scrape) const {
  for (std::size_t r = 0; r < pod_state::max_workers; ++r) {
    if (r == row || pod->workers[r].pid.load(std::memory_order_relaxed) == 0) continue;
    if (pod->workers[r].published.load(std::memory_order_acquire) < scrape) return false;
  }
  return true;
}

bool pod_link::over_share(std::uint64_t slack) const noexcept {
  // Only the generation this worker belongs to: an older one's long streams are finishing (it
  // accepts nothing), a newer one's workers are filling up.
  const std::uint32_t gen = pod->workers[row].generation.load(std::memory_order_relaxed);
  const std::uint64_t mine = pod->workers[row].connections.load(std::memory_order_relaxed);
  std::uint64_t total = 0, peers = 0;
  for (const auto& w : pod->workers) {
    if (w.pid.load(std::memory_order_relaxed) == 0 || w.generation.load(std::memory_order_relaxed) != gen) continue;
    total += w.connections.load(std::memory_order_relaxed);
    ++peers;
  }
  // mine > total / peers + slack, without the division.
  return peers > 1 && mine * peers > total + slack * peers;
}

std::string pod_link::pod_exposition(const std::string& own) const {
  std::vector<obs::exposition> parts;
  add_parsed(parts, own);
  std::uint64_t skipped = 0;
  // An owner that died here left nothing half-done: the slots are whole. One that is stopped here
  // (SIGSTOP, a debugger) would hold every scrape: past the patience this answer is this worker's
  // own, and says so in the counter and the log.
  if (pod->metrics_mu.lock_within(exposition_slot::patience) != runtime::robust_mutex::within::busy) {
    for (std::size_t r = 0; r < pod_state::max_workers; ++r)
      if (r != row && pod->workers[r].pid.load(std::memory_order_relaxed) != 0 && !add_slot(parts, pod->expositions[r]))
        ++skipped;
    if (!add_slot(parts, pod->ended)) ++skipped;
    pod->metrics_mu.unlock();
  } else {
    skipped = 1;
  }
  if (skipped != 0) {
    pod->scrape_parts_skipped.fetch_add(skipped, std::memory_order_relaxed);
    obs::log_warn("pod /metrics answered without some workers' figures: their slot stayed locked (a worker stopped?)",
                  {{"parts_skipped", skipped}});
  }
  return obs::write_exposition(obs::merge_expositions(parts));
}

void release_ended_worker(pod_state& pod, std::size_t row, const runtime::handover_mesh& mesh) noexcept {
  pod.streams.release_row(row);
  pod.keys.detach_worker(row);
  pod.budgets.detach_worker(row);
  pod.circuits.detach_worker(row);
  pod.responses.drop_row(static_cast<std::uint32_t>(row));
  mesh.discard(row);
}

void fold_ended_worker(pod_state& pod, std::size_t row, obs::exposition& ended) {
  pod.metrics_mu.lock();
  // The ended worker's slot has no writer left; a scraper stopped inside it leaves its figures out.
  if (auto text = pod.expositions[row].load())
    if (auto e = obs::parse_exposition(*text)) obs::fold_ended(ended, *e);
  pod.ended.store(obs::write_exposition(ended));
  pod.expositions[row].clear();
  pod.workers[row].pid.store(0);
  pod.metrics_mu.unlock();
}

std::size_t pod_link::sample_rss() const {
  pod->workers[row].rss_bytes.store(runtime::read_rss_bytes(), std::memory_order_relaxed);
  return static_cast<std::size_t>(pod->rss_bytes());
}

pod_metrics::pod_metrics(const pod_state& pod) {
  const pod_state* p = &pod;
  scraped("sluice_worker_processes", "Worker processes alive now (every generation).", {},
          [p] { return static_cast<double>(p->live_workers()); });
  scraped("sluice_worker_processes_configured", "Worker processes per generation (--processes).", {},
          [p] { return static_cast<double>(p->processes.load(std::memory_order_relaxed)); });
  for (std::size_t i = 0; i < process_exit_kinds; ++i)
    scraped("sluice_worker_exits_total", "Worker processes that ended without being asked to, by how.",
            {{"reason", std::string(to_string(static_cast<process_exit>(i)))}},
            [p, i] { return static_cast<double>(p->exits[i].load(std::memory_order_relaxed)); });
  scraped("sluice_worker_restarts_total", "Replacement worker processes started by the supervisor.", {},
          [p] { return static_cast<double>(p->restarts.load(std::memory_order_relaxed)); });
  scraped("sluice_config_reloads_total", "SIGHUP reloads, by result.", {{"result", "done"}},
          [p] { return static_cast<double>(p->reloads_done.load(std::memory_order_relaxed)); });
  scraped("sluice_config_reloads_total", "SIGHUP reloads, by result.", {{"result", "refused"}},
          [p] { return static_cast<double>(p->reloads_refused.load(std::memory_order_relaxed)); });
  scraped("sluice_config_generation", "The config generation serving new connections (0: the first).", {},
          [p] { return static_cast<double>(p->generation.load(std::memory_order_relaxed)); });
  scraped("sluice_pod_streams_in_use", "Concurrency slots held in the pod: max-streams holds for the pod.", {},
          [p] { return static_cast<double>(p->streams.held()); });
  scraped("sluice_pod_queued_requests", "Requests waiting for a slot in the pod: queue-depth holds for the pod.", {},
          [p] { return static_cast<double>(p->streams.queued()); });
  scraped("sluice_pod_resident_memory_bytes", "The sum of the worker processes' resident memory.", {},
          [p] { return static_cast<double>(p->rss_bytes()); });
  // The shared tables' rows: a worker that needs a row when none is free cannot start (the
  // generation is refused).
  const auto table = [this](std::string name, auto used, std::size_t capacity) {
    scraped("sluice_pod_shared_rows", "Rows in use in the pod's shared tables (client keys, upstream budgets, circuits).",
            {{"table", name}}, std::move(used));
    scraped("sluice_pod_shared_rows_capacity", "Rows each of the pod's shared tables holds.", {{"table", name}},
            [capacity] { return static_cast<double>(capacity); });
  };
  table("client_keys", [p] { return static_cast<double>(p->keys.used()); }, admission::pod_keys::capacity);
  table("responses", [p] { return static_cast<double>(p->responses.size()); }, jobs::pod_response_index::capacity);
  scraped("sluice_pod_responses_unindexed_total",
          "Stored responses the pod's index could not take (full): only their own worker finds them.", {},
          [p] { return static_cast<double>(p->responses_unindexed.load(std::memory_order_relaxed)); });
  scraped("sluice_pod_scrape_parts_skipped_total",
          "Workers' figures left out of a /metrics answer because their shared slot stayed locked (a worker stopped, "
          "not dead).",
          {}, [p] { return static_cast<double>(p->scrape_parts_skipped.load(std::memory_order_relaxed)); });
  scraped("sluice_pod_handovers_total",
          "Client connections handed to the worker process holding the response they asked for, by result.",
          {{"result", "sent"}}, [p] { return static_cast<double>(p->handovers_sent.load(std::memory_order_relaxed)); });
  scraped("sluice_pod_handovers_total",
          "Client connections handed to the worker process holding the response they asked for, by result.",
          {{"result", "failed"}}, [p] { return static_cast<double>(p->handovers_failed.load(std::memory_order_relaxed)); });
  table("upstream_budgets", [p] { return static_cast<double>(p->budgets.used()); }, routing::pod_budgets::capacity);
  table("upstream_circuits", [p] { return static_cast<double>(p->circuits.used()); }, routing::pod_circuits::capacity);
}

}  // namespace sluice::app
