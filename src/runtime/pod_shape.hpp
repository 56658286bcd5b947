// The pod's shape (`sluice serve --processes N`, docs/processes.md): how many worker rows its
// shared segment has. Defined once here, the lowest module every pod table can include; each table
// of the pod (app::pod_state's workers and expositions, admission::pod_slots, the pod_table rows'
// per-worker parts) is sized by it, and app/pod.hpp static_asserts that they agree.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::runtime {

// Rows for the worker processes of two generations at once (a reload starts the new ones before
// the old ones finish), so --processes is at most half of it. A row is one bit of a pod_table
// row's users (a std::uint64_t).
inline constexpr std::size_t pod_worker_rows = 64;
static_assert(pod_worker_rows <= 64, "a pod_table row's users is one 64-bit mask");

// Whether `row` is a worker row of the pod. Rows are checked where they enter a pod table (a
// worker's attach), never folded into range.
constexpr bool is_pod_worker_row(std::size_t row) noexcept { return row < pod_worker_rows; }

}  // namespace sluice::runtime
