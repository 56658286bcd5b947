// flood's options: registration in the shared option table, validation and the small parsers.
#include <charconv>
#include <climits>

#include "config/url.hpp"
#include "loadgen/loadgen.hpp"
#include "loadgen/target.hpp"

namespace sluice::loadgen {
namespace {

error bad(std::string msg) { return error::make(errc::bad_request, std::move(msg)); }

bool is_token_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Limits that keep a typo from asking for a million threads or a 1 GiB read.
constexpr std::uint64_t max_concurrency = 1'000'000;
constexpr std::uint64_t max_threads = 1024;
constexpr std::uint64_t max_source_ips = 65534;  // 127.0.0.1 .. 127.0.255.254
constexpr std::uint64_t max_read_size = 64 * 1024;

}  // namespace

std::string_view to_string(mode m) noexcept {
  switch (m) {
    case mode::normal: return "normal";
    case mode::slow: return "slow";
    case mode::never_read: return "never-read";
    case mode::abandon: return "abandon";
  }
  return "?";
}

result<mode> parse_mode(std::string_view text) {
  if (text == "normal") return mode::normal;
  if (text == "slow") return mode::slow;
  if (text == "never-read" || text == "never_read") return mode::never_read;
  if (text == "abandon") return mode::abandon;
  return bad("unknown mode '" + std::string(text) + "' (normal, slow, never-read, abandon)");
}

result<target_url> parse_target(std::string_view url) {
  if (url.starts_with("https://"))
    return bad("https targets are not supported: flood speaks plain http to test targets");
  if (!url.starts_with("http://")) return bad("target must look like http://HOST:PORT, got '" + std::string(url) + "'");
  auto u = config::parse_url(url);  // the one base-URL parser
  if (!u) return bad("target: " + u.err().message);
  target_url t;
  t.host = u->host;
  t.port = u->port;
  t.host_header = u->host_header();
  t.base_path = u->base_path;
  return t;
}

result<header_line> parse_header_line(std::string_view line) {
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0)
    return bad("header must look like 'Name: value', got '" + std::string(line) + "'");
  std::string_view name = line.substr(0, colon);
  std::string_view value = line.substr(colon + 1);
  for (char c : name)
    if (!is_token_char(c)) return bad("invalid character in header name '" + std::string(name) + "'");
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos)
    return bad("header value of '" + std::string(name) + "' contains CR, LF or NUL");
  return header_line{name, value};
}

void options::register_options(config::option_table& table) {
  table.add("target", "base URL of the target, http://HOST:PORT (plain http only)", target)
      .add("path", "request path: /v1/chat/completions, /v1/completions, /v1/responses or /v1/messages", path)
      .add("concurrency", "streams open at the same time", concurrency)
      .add("requests", "total requests (0: same as --concurrency)", requests)
      .add_duration("duration", "hard cap on the run; streams still open then count as timeouts", duration_limit)
      .add("stream", "request streaming responses (--stream=false for plain JSON)", stream)
      .add("model", "model name sent in each request", model)
      .add("max-tokens", "max_tokens sent in each request (0: leave it out; /v1/messages, which requires it: 4096)", max_tokens)
      .add("prompt", "the user prompt sent in each request", prompt)
      .add_list("header", "extra request header 'Name: value' (repeatable)", headers)
      .add_custom({"mode", "normal | slow | never-read | abandon", std::string(to_string(read_mode)),
                   [this](std::string_view v) -> result<void> {
                     auto m = parse_mode(v);
                     if (!m) return std::move(m).err();
                     read_mode = *m;
                     return ok;
                   }})
      .add_duration("read-delay", "slow mode: pause between reads", read_delay)
      .add_size("read-size", "slow mode: bytes per read", read_size)
      .add_duration("hold", "never-read mode: how long to hold each stream unread", hold)
      .add("abandon-after", "abandon mode: chunks to read before closing", abandon_after)
      .add("threads", "worker threads (0: min(cores, concurrency))", threads)
      .add("pid", "sample this process's RSS every 50ms (0: none)", pid)
      .add("json", "print the report as JSON on stdout", json)
      .add_duration("connect-timeout", "per-connection connect deadline", connect_timeout)
      .add_duration("ramp", "spread stream starts evenly over this duration", ramp)
      .add("source-ips", "loopback targets: spread connections over N source addresses 127.0.0.1.. (0: one)",
           source_ips)
      .add("progress", "progress line on stderr (only when it is a terminal)", progress);
}

result<void> validate(const options& opt) {
  auto t = parse_target(opt.target);
  if (!t) return std::move(t).err();
  if (opt.path != "/v1/chat/completions" && opt.path != "/v1/completions" && opt.path != "/v1/responses" &&
      opt.path != "/v1/messages")
    return bad("path must be /v1/chat/completions, /v1/completions, /v1/responses or /v1/messages, got '" + opt.path + "'");
  if (opt.concurrency == 0 || opt.concurrency > max_concurrency)
    return bad("concurrency must be between 1 and " + std::to_string(max_concurrency));
  if (opt.requests > 0 && opt.requests > 1000 * max_concurrency)
    return bad("requests must be at most " + std::to_string(1000 * max_concurrency));
  if (opt.duration_limit <= duration::zero()) return bad("duration must be positive");
  if (opt.connect_timeout <= duration::zero()) return bad("connect-timeout must be positive");
  if (opt.ramp < duration::zero() || opt.ramp >= opt.duration_limit) return bad("ramp must be shorter than duration");
  if (opt.threads > max_threads) return bad("threads must be at most " + std::to_string(max_threads));
  if (opt.source_ips > max_source_ips)
    return bad("source-ips must be at most " + std::to_string(max_source_ips));
  if (opt.pid > static_cast<std::uint64_t>(INT_MAX)) return bad("pid out of range");
  if (opt.model.empty()) return bad("model must not be empty");
  for (const auto& h : opt.headers) {
    auto r = parse_header_line(h);
    if (!r) return std::move(r).err();
  }
  switch (opt.read_mode) {
    case mode::slow:
      if (opt.read_size == 0 || opt.read_size > max_read_size)
        return bad("read-size must be between 1 and " + std::to_string(max_read_size) + " bytes");
      break;
    case mode::never_read:
      if (opt.hold < duration::zero()) return bad("hold must not be negative");
      break;
    case mode::abandon:
      if (!opt.stream) return bad("mode abandon needs --stream (it counts chunks)");
      if (opt.abandon_after == 0) return bad("abandon-after must be at least 1");
      break;
    case mode::normal: break;
  }
  return ok;
}

}  // namespace sluice::loadgen
