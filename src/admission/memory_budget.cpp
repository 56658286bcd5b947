#include "admission/memory_budget.hpp"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>

#include "runtime/loop_pool.hpp"

namespace sluice::admission {
namespace {

// cgroup v1 reports "no limit" as LLONG_MAX rounded down to a page (9223372036854771712); any
// value this large cannot be a real limit on today's machines, so treat the whole range as unset.
constexpr std::uint64_t unlimited_floor = std::uint64_t{1} << 60;

std::optional<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::uint64_t fraction_of(std::uint64_t bytes, double f) {
  return static_cast<std::uint64_t>(static_cast<long double>(bytes) * static_cast<long double>(f));
}

}  // namespace

std::string_view to_string(budget_source s) noexcept {
  switch (s) {
    case budget_source::configured: return "configured";
    case budget_source::cgroup_v2: return "cgroup v2";
    case budget_source::cgroup_v1: return "cgroup v1";
    case budget_source::physical: return "physical";
  }
  return "physical";
}

std::optional<std::uint64_t> parse_cgroup_limit(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.remove_suffix(1);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  if (text.empty() || text == "max") return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  // Out of range (bigger than uint64) is as unlimited as LLONG_MAX.
  if (ec != std::errc{} || p != text.data() + text.size()) return std::nullopt;
  if (v == 0 || v >= unlimited_floor) return std::nullopt;
  return v;
}

std::uint64_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

budget_detection detect_budget(std::uint64_t configured, const std::string& cgroup_root, std::uint64_t physical) {
  if (configured != 0) return {configured, budget_source::configured};
  // A cgroup limit above physical memory cannot be reached before the kernel runs out anyway.
  auto usable = [&](std::optional<std::uint64_t> v) { return v && (physical == 0 || *v < physical); };
  if (auto text = read_small_file(cgroup_root + "/memory.max")) {
    auto v = parse_cgroup_limit(*text);
    if (usable(v)) return {*v, budget_source::cgroup_v2};
  } else if (auto text1 = read_small_file(cgroup_root + "/memory/memory.limit_in_bytes")) {
    auto v = parse_cgroup_limit(*text1);
    if (usable(v)) return {*v, budget_source::cgroup_v1};
  }
  return {physical, budget_source::physical};
}

memory_budget::reservation& memory_budget::reservation::operator=(reservation&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = o.owner_;
    bytes_ = o.bytes_;
    o.owner_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void memory_budget::reservation::reset() noexcept {
  if (owner_ != nullptr) owner_->give_back(bytes_);
  owner_ = nullptr;
  bytes_ = 0;
}

memory_budget::memory_budget(std::uint64_t budget_bytes, double shed_threshold, double ready_threshold,
                             rss_source rss)
    : budget_(budget_bytes),
      shed_bytes_(fraction_of(budget_bytes, shed_threshold)),
      ready_bytes_(fraction_of(budget_bytes, ready_threshold)),
      rss_source_(rss ? std::move(rss) : rss_source([] { return runtime::read_rss_bytes(); })) {}

memory_budget::memory_budget(const options& opts, rss_source rss)
    : memory_budget(detect_budget(opts.memory_limit).bytes, opts.shed_threshold, opts.ready_threshold,
                    std::move(rss)) {}

std::optional<memory_budget::reservation> memory_budget::try_reserve(std::uint64_t bytes) {
  // CAS loop rather than fetch_add-then-undo, so a failing reservation never makes another one
  // fail spuriously by briefly inflating the count.
  auto cur = reserved_.load(std::memory_order_relaxed);
  do {
    if (bytes > budget_ || cur > budget_ - bytes) return std::nullopt;
  } while (!reserved_.compare_exchange_weak(cur, cur + bytes, std::memory_order_acq_rel, std::memory_order_relaxed));
  return reservation(this, bytes);
}

std::size_t memory_budget::sample() {
  auto v = rss_source_();
  sample(v);
  return v;
}

}  // namespace sluice::admission
