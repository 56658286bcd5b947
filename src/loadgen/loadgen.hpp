// sluice flood as a library: opens N concurrent streams against an OpenAI-compatible target,
// verifies every byte of every stream and reports counts, latencies and memory. run() blocks the
// calling thread, runs its own worker threads, and always returns within duration_limit + a grace.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/option_table.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

namespace sluice::loadgen {

// How each stream reads its response.
enum class mode {
  normal,      // read as fast as it arrives
  slow,        // read read_size bytes, sleep read_delay, repeat (backpressure on the target)
  never_read,  // read the response head, then nothing for `hold`, then close
  abandon,     // close after abandon_after chunks (a client that goes away mid-stream)
};

std::string_view to_string(mode m) noexcept;
result<mode> parse_mode(std::string_view text);

struct options {
  std::string target;                          // base URL, http://HOST:PORT (plain http only)
  std::string path = "/v1/chat/completions";   // or /v1/completions, /v1/responses, /v1/messages
  std::uint64_t concurrency = 10;              // streams open at once
  std::uint64_t requests = 0;                  // total requests; 0 means `concurrency`
  duration duration_limit = std::chrono::seconds(60);  // hard cap; in-flight streams then time out
  bool stream = true;
  std::string model = "gpt-4o-mini";
  std::uint64_t max_tokens = 0;                // 0 leaves max_tokens out of the request
  std::string prompt = "Write a haiku about a river.";
  std::vector<std::string> headers;            // extra "Name: value" request headers
  mode read_mode = mode::normal;
  duration read_delay = std::chrono::milliseconds(50);  // slow mode: pause between reads
  std::uint64_t read_size = 64;                // slow mode: bytes per read
  duration hold = std::chrono::seconds(5);     // never-read mode: how long to hold the stream
  std::uint64_t abandon_after = 3;             // abandon mode: chunks before closing
  std::uint64_t threads = 0;                   // 0: min(cores, concurrency)
  std::uint64_t pid = 0;                       // sample this process's RSS every 50 ms; 0: none
  bool json = false;                           // report format (used by the CLI)
  duration connect_timeout = std::chrono::seconds(5);
  duration ramp = duration::zero();            // spread stream starts over this long
  // Loopback targets only: spread the connections over this many source addresses, 127.0.0.1,
  // 127.0.0.2, ... (0: the kernel picks, always 127.0.0.1). The kernel finds a free source port
  // for each connection to one destination by scanning the ephemeral range, which slows connect()
  // to a crawl past ten thousand or so open connections and ends at the range's size (~28,000 by
  // default); each source address has its own range.
  std::uint64_t source_ips = 0;
  bool progress = true;                        // progress line on stderr, only if it is a terminal
  // Not an option: when set and it becomes true (e.g. from a SIGINT handler), the run ends as if
  // the deadline had passed. Must outlive run().
  const std::atomic<bool>* cancel = nullptr;

  // Adds every field above as a named option (CLI flag and YAML key). `this` must outlive `table`.
  void register_options(config::option_table& table);
};

// Checks ranges and combinations without touching the network.
result<void> validate(const options& opt);

struct percentiles {
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
  std::uint64_t count = 0;
};

struct report {
  std::uint64_t requests = 0;      // finished requests: ok + abandoned_ok + failed
  std::uint64_t ok = 0;            // complete, verified responses
  std::uint64_t abandoned_ok = 0;  // intended early closes (abandon after K chunks, never-read holds)
  std::uint64_t failed = 0;        // sum of the kinds below
  std::uint64_t connect_errors = 0, status_errors = 0, truncated = 0, malformed = 0, error_events = 0,
                timeouts = 0;
  std::uint64_t retry_after_seen = 0;  // 429/503 responses that carried Retry-After
  std::uint64_t chunks = 0;            // data events other than [DONE]
  std::uint64_t bytes = 0;             // bytes received from the socket, heads included
  std::uint64_t peak_open_streams = 0;
  std::map<int, std::uint64_t> status_counts;
  percentiles ttft, gap, e2e;
  double wall_seconds = 0, chunks_per_second = 0;
  std::size_t baseline_rss_bytes = 0, peak_rss_bytes = 0;  // of options.pid; 0 when not sampled
  std::vector<std::string> failure_samples;  // the first few distinct failure reasons, for diagnosis
};

// Validates the options, resolves the target once, runs, and returns the merged report.
// Errors only for bad options or an unresolvable target; failed streams are in the report.
result<report> run(const options& opt);

// (peak - baseline) RSS divided by peak open streams; 0 when unknown.
double rss_per_stream(const report& r);
// Every request succeeded or was an intended abandon (the CLI's exit code 0).
bool all_ok(const report& r);

std::string format_text(const report& r);
std::string format_json(const report& r);

}  // namespace sluice::loadgen
