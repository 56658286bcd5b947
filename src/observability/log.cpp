#include "observability/log.hpp"

#include <fmt/format.h>
#include <spdlog/details/log_msg.h>
#include <spdlog/formatter.h>
#include <spdlog/sinks/sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <mutex>
#include <optional>
#include <vector>

#include "config/option_table.hpp"
#include "observability/log_format.hpp"

namespace sluice::obs {
namespace {

using detail::render;

constexpr std::array<std::string_view, 6> level_names = {"trace", "debug", "info", "warn", "error", "off"};

spdlog::level::level_enum to_spdlog(log_level l) {
  switch (l) {
    case log_level::trace:
      return spdlog::level::trace;
    case log_level::debug:
      return spdlog::level::debug;
    case log_level::info:
      return spdlog::level::info;
    case log_level::warn:
      return spdlog::level::warn;
    case log_level::error:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

std::string_view level_name(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace:
      return "trace";
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warn";
    case spdlog::level::err:
      return "error";
    case spdlog::level::critical:
      return "critical";
    default:
      return "off";
  }
}

std::optional<spdlog::level::level_enum> parse_level(std::string_view v) {
  for (std::size_t i = 0; i < level_names.size(); ++i)
    if (v == level_names[i])
      return i + 1 == level_names.size() ? spdlog::level::off : static_cast<spdlog::level::level_enum>(i);
  return std::nullopt;
}

result<void> check_level(std::string_view v) {
  if (parse_level(v)) return ok;
  return error::make(errc::bad_request,
                     "--log-level: expected trace, debug, info, warn, error or off, got '" + std::string(v) + "'",
                     "log-level");
}

result<void> check_format(std::string_view v) {
  if (v == "json" || v == "text") return ok;
  return error::make(errc::bad_request, "--log-format: expected json or text, got '" + std::string(v) + "'",
                     "log-format");
}

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not one (overlong forms,
// surrogates and code points past U+10FFFF included), per RFC 3629.
constexpr std::string_view structured_logger_name = "sluice";

// Formatting belongs to the sink in spdlog, and both loggers share one sink, so one formatter
// serves both: lines from the structured logger arrive finished (only the newline is added); lines
// from code that calls spdlog directly (spdlog::info(...)) get the same shape, without fields.
class line_formatter final : public spdlog::formatter {
 public:
  explicit line_formatter(bool json) : json_(json) {}
  void format(const spdlog::details::log_msg& m, spdlog::memory_buf_t& dest) override {
    const std::string_view payload(m.payload.data(), m.payload.size());
    if (std::string_view(m.logger_name.data(), m.logger_name.size()) == structured_logger_name) {
      dest.append(payload.data(), payload.data() + payload.size());
    } else {
      const std::string line = render(json_, m.time, level_name(m.level), payload, {});
      dest.append(line.data(), line.data() + line.size());
    }
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<line_formatter>(json_); }

 private:
  bool json_;
};

struct log_state {
  std::shared_ptr<spdlog::logger> logger;  // the structured logger: receives finished lines
  bool json = true;
};

std::shared_ptr<spdlog::logger> make_logger(std::string_view name, const std::shared_ptr<spdlog::sinks::sink>& sink,
                                            spdlog::level::level_enum level) {
  auto l = std::make_shared<spdlog::logger>(std::string(name), sink);
  l->set_level(level);
  // Synchronous on purpose: an async queue would be one more buffer that either grows or drops.
  // One short line per request is a single write(2).
  l->flush_on(spdlog::level::warn);
  return l;
}

std::shared_ptr<spdlog::sinks::sink> prepared(std::shared_ptr<spdlog::sinks::sink> sink, bool json) {
  sink->set_formatter(std::make_unique<line_formatter>(json));
  return sink;
}

const log_state* default_state() {
  // Before init_logging(): JSON at info to stderr, so early start-up errors are still structured.
  static const log_state s{
      make_logger(structured_logger_name, prepared(std::make_shared<spdlog::sinks::stderr_sink_mt>(), true),
                  spdlog::level::info),
      true};
  return &s;
}

std::atomic<const log_state*> current_state{nullptr};
std::mutex init_mutex;
// Replaced states are kept, not freed: another thread may have loaded the old pointer an instant
// before the swap. init_logging runs a handful of times per process, so this is bounded.
std::vector<std::unique_ptr<log_state>> all_states;

const log_state& state() {
  const log_state* s = current_state.load(std::memory_order_acquire);
  return s != nullptr ? *s : *default_state();
}

void emit(spdlog::level::level_enum level, std::string_view msg, std::span<const log_field> fields) {
  const log_state& s = state();
  if (!s.logger->should_log(level)) return;
  const std::string line = render(s.json, std::chrono::system_clock::now(), level_name(level), msg, fields);
  s.logger->log(spdlog::source_loc{}, level, spdlog::string_view_t(line.data(), line.size()));
}

// Milliseconds rounded to the microsecond: finer digits are clock noise and only lengthen lines.
double ms3(double ms) {
  return std::round(ms * 1000.0) / 1000.0;
}

}  // namespace

void log_options::register_options(config::option_table& t) {
  t.add_custom({"log-level", "log verbosity: trace, debug, info, warn, error or off", level,
                [this](std::string_view v) -> result<void> {
                  if (auto r = check_level(v); !r) return std::move(r).err();
                  level.assign(v);
                  return ok;
                }});
  t.add_custom({"log-format", "log line format: json (one object per line) or text (key=value)", format,
                [this](std::string_view v) -> result<void> {
                  if (auto r = check_format(v); !r) return std::move(r).err();
                  format.assign(v);
                  return ok;
                }});
}

result<void> init_logging(const log_options& options) {
  return init_logging(options, std::make_shared<spdlog::sinks::stderr_sink_mt>());
}

result<void> init_logging(const log_options& options, std::shared_ptr<spdlog::sinks::sink> sink) {
  if (auto r = check_level(options.level); !r) return r;
  if (auto r = check_format(options.format); !r) return r;
  const auto level = *parse_level(options.level);
  const bool json = options.format == "json";

  prepared(sink, json);
  auto state = std::make_unique<log_state>();
  state->logger = make_logger(structured_logger_name, sink, level);
  state->json = json;

  std::lock_guard lock(init_mutex);
  spdlog::set_default_logger(make_logger("sluice.plain", sink, level));
  current_state.store(state.get(), std::memory_order_release);
  all_states.push_back(std::move(state));
  return ok;
}

bool log_enabled(log_level level) noexcept {
  return state().logger->should_log(to_spdlog(level));
}

void log_event(log_level level, std::string_view msg, std::span<const log_field> fields) {
  emit(to_spdlog(level), msg, fields);
}

std::string format_log_line(bool json, log_level level, std::string_view msg, std::span<const log_field> fields) {
  return render(json, std::chrono::system_clock::now(), level_name(to_spdlog(level)), msg, fields);
}

void log_stream_completed(const request_record& r) {
  if (!log_enabled(log_level::info)) return;
  const log_field fields[] = {{"request_id", r.request_id},
                              {"trace_id", r.trace_id},
                              {"span_id", r.span_id},
                              {"route", r.route},
                              {"model", r.model},
                              {"upstream", r.upstream},
                              {"status", r.status},
                              {"attempts", r.attempts},
                              {"outcome", r.outcome},
                              {"reason", r.reason},
                              {"ttft_ms", ms3(r.ttft_ms)},
                              {"duration_ms", ms3(r.duration_ms)},
                              {"overhead_ms", ms3(r.overhead_ms)},
                              {"tokens_in", r.tokens_in},
                              {"tokens_out", r.tokens_out},
                              {"bytes_in", r.bytes_in},
                              {"bytes_out", r.bytes_out}};
  emit(spdlog::level::info, r.job ? "job completed" : "stream completed", fields);
}

void log_request_completed(const request_record& r) {
  if (!log_enabled(log_level::info)) return;
  const log_field fields[] = {{"request_id", r.request_id},
                              {"trace_id", r.trace_id},
                              {"span_id", r.span_id},
                              {"route", r.route},
                              {"model", r.model},
                              {"upstream", r.upstream},
                              {"status", r.status},
                              {"attempts", r.attempts},
                              {"outcome", r.outcome},
                              {"reason", r.reason},
                              {"duration_ms", ms3(r.duration_ms)},
                              {"overhead_ms", ms3(r.overhead_ms)},
                              {"tokens_in", r.tokens_in},
                              {"tokens_out", r.tokens_out},
                              {"bytes_in", r.bytes_in},
                              {"bytes_out", r.bytes_out}};
  emit(spdlog::level::info, r.job ? "job completed" : "request completed", fields);
}

void log_request_refused(const request_record& r) {
  if (!log_enabled(log_level::info)) return;
  const log_field fields[] = {{"request_id", r.request_id},
                              {"trace_id", r.trace_id},
                              {"span_id", r.span_id},
                              {"route", r.route},
                              {"model", r.model},
                              {"status", r.status},
                              {"outcome", r.outcome},
                              {"reason", r.reason},
                              {"duration_ms", ms3(r.duration_ms)},
                              {"bytes_in", r.bytes_in}};
  emit(spdlog::level::info, "request refused", fields);
}

}  // namespace sluice::obs
