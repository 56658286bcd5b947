// routing::pod_budget: one upstream's paced budget held by every worker process of `sluice serve
// --processes N` together (docs/processes.md), without Redis. The pacer's counters (pacer_state:
// the request and token buckets, a 429's retry-after) live in a row of the pod's shared segment
// named by the upstream (its name and URL), under the row's process-shared lock, so what one
// worker spends or learns from the upstream's x-ratelimit-* headers paces every worker. An
// upstream with max-concurrent also counts its requests in flight there (the pod's total and each
// worker's part): a pick is confirmed against the pod's count, and a worker that dies gives its
// part back (pod_budgets::detach_worker, by the supervisor). With --redis the budget is the
// fleet's (shared_budget) and this is not used.
//
// Threading: thread-safe. Lifetime: the table (shared memory) outlives this.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "routing/options.hpp"
#include "routing/pacer.hpp"
#include "runtime/pod_table.hpp"

namespace sluice::routing {

struct pod_budget_row {
  static constexpr std::size_t workers = runtime::pod_worker_rows;

  pacer_state pace;
  // What the config said, so a reload that changes it starts the bucket again.
  std::uint64_t configured_rpm = 0, configured_tpm = 0;
  std::uint64_t in_flight = 0;                // requests in flight to it in the pod: the sum of held
  std::array<std::uint32_t, workers> held{};  // by worker row

  void repair() noexcept;
  void release_worker(std::size_t w) noexcept;
};

// What names an upstream's rows in a pod's shared segment (its budget, its circuit): its name and
// URL, so a reload that keeps them keeps the rows.
runtime::row_identity pod_identity(const upstream_spec& s);

// Upstreams across the generations alive at once.
inline constexpr std::size_t pod_budget_rows = 256;
using pod_budgets = runtime::pod_table<pod_budget_row, pod_budget_rows>;

class pod_budget final : public rate_budget {
 public:
  // Attaches worker row `worker` of `generation` to the upstream's row; an error when the table is
  // full or `worker` is not a worker row (runtime::is_pod_worker_row).
  static result<std::unique_ptr<pod_budget>> attach(const upstream_spec& spec, time_point now, pod_budgets& table,
                                                    std::size_t worker, std::uint32_t generation);

  std::optional<duration> try_reserve(std::uint64_t tokens, time_point now) override;
  void refund(std::uint64_t tokens, time_point now) override;
  void settle(std::uint64_t estimated, std::uint64_t actual, time_point now) override;
  void observe(const ratelimit_headers& h, time_point now) override;
  void block_until(time_point until) override;
  std::optional<duration> wait_time(std::uint64_t tokens, time_point now) override;
  bool has_token_budget() const override;
  pacer_snapshot snapshot(time_point now) override;

  // Only an upstream with max-concurrent needs a pick confirmed (against the pod's count).
  bool shared() const noexcept override { return max_concurrent_ != 0; }
  task<std::optional<duration>> confirm(std::uint64_t tokens, budget_ticket& t) override;
  void release(budget_ticket& t) noexcept override;

  // Requests in flight to the upstream in the pod now.
  std::uint64_t in_flight() const;

 private:
  pod_budget(pod_budgets::row& row, std::size_t worker, std::uint64_t max_concurrent)
      : row_(&row), worker_(worker), max_concurrent_(max_concurrent) {}

  pod_budgets::row* row_;
  std::size_t worker_;
  std::uint64_t max_concurrent_;
};

}  // namespace sluice::routing
