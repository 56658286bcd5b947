#include "proxy/request_trace.hpp"

#include <boost/json.hpp>

#include <chrono>

namespace sluice::proxy {

void request_trace::begin(const http::request& req, double ratio) {
  std::optional<obs::trace_parent> from;
  if (auto it = req.find("traceparent"); it != req.end()) from = obs::parse_traceparent(it->value());
  if (from) {
    trace_ = from->trace;
    parent_ = from->parent;
    sampled_ = from->sampled;
    // tracestate belongs to the traceparent it came with; without one it is dropped.
    if (auto it = req.find("tracestate"); it != req.end() && obs::acceptable_tracestate(it->value()))
      state_ = std::string(it->value());
  } else {
    trace_ = obs::new_trace_id();
    sampled_ = obs::sampled_by_ratio(trace_, ratio);
  }
  span_ = obs::new_span_id();
  method_ = boost::beast::http::to_string(req.method());
  const auto wall = std::chrono::system_clock::now().time_since_epoch();
  const auto mono = runtime::steady::now().time_since_epoch();
  unix_offset_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count() -
                    std::chrono::duration_cast<std::chrono::nanoseconds>(mono).count();
}

std::string request_trace::traceparent_for(const obs::span_id& child) const {
  return obs::format_traceparent(trace_, child, sampled_);
}

void request_trace::carry_into(std::vector<std::pair<std::string, std::string>>& headers) const {
  std::erase_if(headers, [](const auto& h) {
    return boost::beast::iequals(h.first, "traceparent") || boost::beast::iequals(h.first, "tracestate");
  });
  if (!trace_.valid()) return;
  headers.emplace_back("traceparent", traceparent_for(span_));
  if (!state_.empty()) headers.emplace_back("tracestate", state_);
}

const obs::span_id& request_trace::attempt_began(std::string_view upstream, std::string_view host, std::uint16_t port) {
  if (attempts_.size() >= max_recorded_attempts) {
    spare_ = obs::new_span_id();
    return spare_;
  }
  attempt a;
  a.id = obs::new_span_id();
  a.start = runtime::steady::now();
  a.upstream = upstream;
  a.host = host;
  a.port = port;
  attempts_.push_back(a);
  return attempts_.back().id;
}

void request_trace::attempt_ended(int status, bool failed) noexcept {
  if (attempts_.empty() || attempts_.back().end != runtime::steady::time_point{}) return;
  auto& a = attempts_.back();
  a.end = runtime::steady::now();
  a.status = status;
  a.failed = failed;
}

void request_trace::admission(runtime::steady::time_point start, runtime::steady::time_point end) noexcept {
  admission_start_ = start;
  admission_end_ = end;
}

void request_trace::queue_wait(runtime::steady::time_point start, runtime::steady::time_point end) noexcept {
  queue_start_ = start;
  queue_end_ = end;
}

void request_trace::identify(std::string_view payload) {
  if (identified_) return;
  identified_ = true;
  if (payload.size() > identify_max_bytes) return;
  namespace json = boost::json;
  unsigned char stack[4096];
  json::monotonic_resource mr(stack, sizeof stack);
  boost::system::error_code ec;
  json::value v = json::parse(payload, ec, &mr);
  if (ec || !v.is_object()) return;
  const json::object* o = &v.get_object();
  if (auto* r = o->if_contains("response"); r && r->is_object()) o = &r->get_object();
  // Ids and model names are short; anything longer is not what the attributes are for.
  constexpr std::size_t longest = 256;
  auto take = [o](std::string_view key, std::string& out) {
    if (auto* x = o->if_contains(key); x && x->is_string() && x->get_string().size() <= longest) out = x->get_string();
  };
  take("id", response_id_);
  take("model", response_model_);
}

std::uint64_t request_trace::unix_ns(runtime::steady::time_point t) const noexcept {
  const auto mono = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return static_cast<std::uint64_t>(mono + unix_offset_ns_);
}

}  // namespace sluice::proxy
