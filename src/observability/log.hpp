// Structured logs through spdlog: one line per event, JSON (default) or text (key=value), each with
// an RFC 3339 UTC timestamp, level and msg. init_logging() runs on the main thread before workers
// start; the log_* functions are thread-safe and cost one atomic load when their level is off.
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "core/error.hpp"

namespace spdlog::sinks {
class sink;
}
namespace sluice::config {
class option_table;
}

namespace sluice::obs {

// Secrets: no function here takes headers, a request, or a key. Authorization values, client keys
// and upstream keys are never logged, not even masked (a prefix is enough to find a key in a leak
// search and too much to give away); callers pass only the named fields below.

struct log_options {
  std::string level = "info";   // trace | debug | info | warn | error | off
  std::string format = "json";  // json | text

  // --log-level, --log-format. The values are checked when set, so a typo fails at start-up.
  void register_options(config::option_table& t);
};

// Replaces the process-wide logger (and spdlog's default logger, so plain spdlog::info() calls
// come out in the same format) with one writing to stderr, or to `sink` (tests, files).
// Not thread-safe: call before other threads log. Errors name the offending option.
result<void> init_logging(const log_options& options);
result<void> init_logging(const log_options& options, std::shared_ptr<spdlog::sinks::sink> sink);

enum class log_level : std::uint8_t { trace, debug, info, warn, error };

// One key and its value. Values are borrowed: a field lives only for the call it is passed to.
struct log_field {
  using value_type = std::variant<std::string_view, std::int64_t, std::uint64_t, double, bool>;

  log_field(std::string_view k, std::string_view v) : key(k), value(v) {}
  log_field(std::string_view k, const char* v) : key(k), value(std::string_view(v)) {}
  log_field(std::string_view k, const std::string& v) : key(k), value(std::string_view(v)) {}
  log_field(std::string_view k, bool v) : key(k), value(v) {}
  log_field(std::string_view k, double v) : key(k), value(v) {}
  template <std::integral T>
  requires(!std::same_as<T, bool> && !std::same_as<T, char>) log_field(std::string_view k, T v)
      : key(k),
        value(std::is_signed_v<T> ? value_type(static_cast<std::int64_t>(v))
                                  : value_type(static_cast<std::uint64_t>(v))) {}

  std::string_view key;  // a plain identifier chosen by the caller, never user input
  value_type value;
};

bool log_enabled(log_level level) noexcept;
void log_event(log_level level, std::string_view msg, std::span<const log_field> fields);
inline void log_debug(std::string_view msg, std::initializer_list<log_field> fields = {}) {
  log_event(log_level::debug, msg, {fields.begin(), fields.size()});
}
inline void log_info(std::string_view msg, std::initializer_list<log_field> fields = {}) {
  log_event(log_level::info, msg, {fields.begin(), fields.size()});
}
inline void log_warn(std::string_view msg, std::initializer_list<log_field> fields = {}) {
  log_event(log_level::warn, msg, {fields.begin(), fields.size()});
}
inline void log_error(std::string_view msg, std::initializer_list<log_field> fields = {}) {
  log_event(log_level::error, msg, {fields.begin(), fields.size()});
}

// The one line logged per request. Strings are borrowed for the call. Labels (route, outcome,
// reason) should be the obs::to_string() names so logs and metrics join on them.
struct request_record {
  std::string_view request_id;
  std::string_view trace_id;  // W3C trace and the gateway's span of the request ("" when none)
  std::string_view span_id;
  std::string_view route;
  std::string_view upstream;  // configured upstream name, "" if none was reached
  std::string_view outcome;
  std::string_view reason;  // why it was refused or cut short, "" otherwise
  std::string_view model;
  int status = 0;      // HTTP status sent to the client
  std::uint64_t attempts = 0;  // upstream attempts made (retries and failovers included)
  double ttft_ms = 0;  // streams only
  double duration_ms = 0;
  double overhead_ms = 0;  // time spent in the gateway itself
  std::uint64_t tokens_in = 0;
  std::uint64_t tokens_out = 0;
  std::uint64_t bytes_in = 0;   // request body bytes from the client
  std::uint64_t bytes_out = 0;  // response bytes to the client
  bool job = false;  // a background job's run (docs/queue.md): msg "job completed", whatever its kind
};

void log_stream_completed(const request_record& r);   // info, msg "stream completed"
void log_request_completed(const request_record& r);  // info, msg "request completed" (no ttft_ms)
void log_request_refused(const request_record& r);    // info, msg "request refused": status, reason, no tokens

// Formatting, exposed for tests: the line (without newline) a record would produce.
std::string format_log_line(bool json, log_level level, std::string_view msg, std::span<const log_field> fields);

}  // namespace sluice::obs
