// pod: what the supervisor of `sluice serve --processes N` and its worker processes share, in one
// runtime::shared_segment mapped before the first fork: the table of worker processes (each one's
// pid, config generation and latest RSS), the supervisor's counters, and the pod's memory reading.
// Every field is a lock-free atomic: any process reads and writes it without a lock. A worker
// writes only its own row; the supervisor frees a row when it reaps the worker.
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "admission/pod_key_limits.hpp"
#include "admission/pod_slots.hpp"
#include "jobs/response_index.hpp"
#include "observability/component_metrics.hpp"
#include "observability/exposition.hpp"
#include "routing/pod_budget.hpp"
#include "runtime/handover.hpp"
#include "runtime/pod_shape.hpp"
#include "runtime/robust_mutex.hpp"

namespace sluice::app {

// Why a worker process ended without being asked to: `exit` (it exited, with any code), `killed`
// (SIGKILL: `kill -9` or the kernel's OOM killer), `signal` (any other signal: a crash).
enum class process_exit { exit, killed, signal };
inline constexpr std::size_t process_exit_kinds = 3;
std::string_view to_string(process_exit e) noexcept;

struct pod_worker {
  std::atomic<std::int32_t> pid{0};  // 0: a free row
  std::atomic<std::uint32_t> generation{0};
  std::atomic<std::uint64_t> rss_bytes{0};  // the worker's latest sample of its own RSS
  std::atomic<std::uint64_t> published{0};  // the scrape request its exposition answers (pod_state::scrapes)
  // Its open client connections (http::server_shared::pod_connections), for the others' share.
  std::atomic<std::uint64_t> connections{0};
};

// One process's latest /metrics exposition in the shared segment, for the other workers' /metrics
// and, once the process has ended, for the supervisor to fold into the ended processes' totals.
// Copied in and out under its own robust mutex; a writer that died inside leaves it empty.
class exposition_slot {
 public:
  static constexpr std::size_t capacity = 512 * 1024;
  // How long a reader or a writer waits for the slot's lock: it is held for one copy, so only a
  // holder that was stopped inside (SIGSTOP, a debugger) makes anyone wait this long, and an event
  // loop must not wait longer.
  static constexpr std::chrono::milliseconds patience{50};
  exposition_slot() = default;
  // False (and the slot emptied) when `text` is larger than the capacity; false (and the slot as it
  // was) when its lock stayed held for `patience`.
  bool store(std::string_view text) noexcept;
  // What was last stored; nullopt when the lock stayed held for `patience` (its holder is stopped).
  std::optional<std::string> load();
  // Empties it, waiting as long as it takes (the supervisor, for a worker that has ended).
  void clear() noexcept;

 private:
  runtime::robust_mutex mu_;
  std::size_t size_ = 0;
  char data_[capacity];
};

struct pod_state {
  // Rows for the workers of two generations at once (a reload starts the new ones before the old
  // ones finish), so --processes is at most half of it.
  static constexpr std::size_t max_workers = runtime::pod_worker_rows;
  static constexpr std::size_t max_processes = max_workers / 2;
  // Every table of the pod has a row for each worker row here.
  static_assert(admission::pod_slots::rows == max_workers);
  static_assert(admission::pod_key_row::workers == max_workers && admission::pod_keys::max_workers == max_workers);
  static_assert(routing::pod_budget_row::workers == max_workers && routing::pod_budgets::max_workers == max_workers);
  static_assert(routing::pod_circuits::max_workers == max_workers);

  std::array<pod_worker, max_workers> workers;
  std::array<std::atomic<std::uint64_t>, process_exit_kinds> exits{};  // unexpected ends, by kind
  std::atomic<std::uint64_t> restarts{0};
  std::atomic<std::uint64_t> reloads_done{0};
  std::atomic<std::uint64_t> reloads_refused{0};
  std::atomic<std::uint32_t> generation{0};  // the config generation new connections are served by
  std::atomic<std::uint32_t> processes{0};   // worker processes configured per generation
  // max-streams and queue-depth for the pod; a worker's row there is its row here.
  admission::pod_slots streams;
  // The client keys' max_streams, rpm and tpm for the pod (without --redis): a row per key with a
  // limit, shared by the workers of every generation that know it; a worker's part there is its row here.
  admission::pod_keys keys;
  // Each upstream's paced budget (rpm, tpm, retry-after) and max-concurrent for the pod (without
  // --redis), shared alike.
  routing::pod_budgets budgets;
  // Each upstream's circuit breaker for the pod (with or without --redis).
  routing::pod_circuits circuits;
  // Which worker holds each response of the in-process store (`--queue memory`), and the
  // connections handed to the holder for it (app/pod_handover.hpp).
  jobs::pod_response_index responses;
  std::atomic<std::uint64_t> responses_unindexed{0};  // ids not indexed: the index was full
  std::atomic<std::uint64_t> handovers_sent{0};
  std::atomic<std::uint64_t> handovers_failed{0};
  // /metrics for the pod: each worker's latest exposition by row, and the sums of every worker that
  // has ended. A scrape reads them all, and the supervisor moves an ended worker's into `ended`,
  // under `metrics_mu`: no scrape sees a worker's counters twice or not at all.
  runtime::robust_mutex metrics_mu;
  // Parts left out of a scrape's answer because their lock stayed held past exposition_slot's
  // patience (a worker stopped, not dead): sluice_pod_scrape_parts_skipped_total.
  std::atomic<std::uint64_t> scrape_parts_skipped{0};
  // Bumped by a worker that answers /metrics: the others publish at once (within 5 ms) and mark
  // their row `published` with it, so a scrape waits for fresh figures, not the last second's.
  std::atomic<std::uint64_t> scrapes{0};
  std::array<exposition_slot, max_workers> expositions;
  exposition_slot ended;

  // The sum of every live worker's latest RSS sample: what the pod's memory budget is held to.
  std::uint64_t rss_bytes() const noexcept;
  // Worker processes alive now (rows in use).
  std::uint64_t live_workers() const noexcept;
};

// A worker process's place in the pod: the shared state and its own row.
struct pod_link {
  pod_state* pod = nullptr;
  std::size_t row = 0;
  // The socket pairs that hand connections between the workers (made before the first fork).
  const runtime::handover_mesh* mesh = nullptr;
  explicit operator bool() const noexcept { return pod != nullptr; }
  // Samples this process's RSS into its row; returns the pod's sum (memory_budget's rss source).
  std::size_t sample_rss() const;
  // The pod's /metrics: `own` (this worker's exposition, just rendered; also published in its row)
  // merged with every other live worker's latest and with the ended workers' sums (docs/processes.md).
  std::string pod_exposition(const std::string& own) const;
  // Publishes this worker's exposition for the others, answering scrape request `scrape`.
  void publish(const std::string& own, std::uint64_t scrape) const {
    pod->expositions[row].store(own);
    pod->workers[row].published.store(scrape, std::memory_order_release);
  }
  // Asks every other worker to publish now; returns the request to wait for.
  std::uint64_t ask_fresh() const { return pod->scrapes.fetch_add(1) + 1; }
  // Whether every other live worker has answered `scrape`.
  bool all_published(std::uint64_t scrape) const;
  // Whether this worker holds more than its share of its generation's client connections: more
  // than their average plus `slack` (accept-share-slack). Its accept loops then leave new
  // connections to the others (ADR 0016). Reads every row: tens of loads, once per accept.
  bool over_share(std::uint64_t slack) const noexcept;
};

// The supervisor, when the worker of `row` has ended: what it held goes back to the pod — its
// concurrency slots and queue places, its keys' streams, its requests in flight to upstreams, a
// circuit probe it held — its store's responses leave the index, and connections handed to it that
// it never took are closed.
void release_ended_worker(pod_state& pod, std::size_t row, const runtime::handover_mesh& mesh) noexcept;

// The supervisor, when the worker of `row` has ended: its last exposition's sums join `ended` (kept by
// the caller across calls, written back to the shared segment), and its row's exposition is emptied.
void fold_ended_worker(pod_state& pod, std::size_t row, obs::exposition& ended);

// The supervisor's view in every worker's /metrics (the same values from each worker):
//   sluice_worker_processes             worker processes alive now (all generations)
//   sluice_worker_processes_configured  --processes
//   sluice_worker_exits_total{reason}   workers that ended unasked (exit, killed, signal)
//   sluice_worker_restarts_total        replacements started
//   sluice_config_reloads_total{result} SIGHUP reloads (done, refused)
//   sluice_config_generation            the generation serving new connections (0: the first)
//   sluice_pod_resident_memory_bytes    the sum of the workers' RSS (the memory budget's reading)
//   sluice_pod_streams_in_use           concurrency slots held in the pod (max-streams holds for it)
//   sluice_pod_queued_requests          requests waiting for a slot in the pod (queue-depth)
//   sluice_pod_shared_rows{table}       rows in use in the shared tables (client_keys,
//                                       upstream_budgets, upstream_circuits), and their _capacity
class pod_metrics final : public obs::component_metrics {
 public:
  explicit pod_metrics(const pod_state& pod);
};

}  // namespace sluice::app
