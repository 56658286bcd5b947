#include "loadgen/stream_check.hpp"

namespace sluice::loadgen {
namespace {

namespace json = boost::json;

// Does this chunk carry generated output? Role-only deltas and usage-only chunks do not, so TTFT
// measures the first token, not the first frame.
bool has_content(const json::object& chunk) {
  const auto* choices = chunk.if_contains("choices");
  if (!choices || !choices->is_array()) return false;
  for (const auto& c : choices->get_array()) {
    if (!c.is_object()) continue;
    const auto& choice = c.get_object();
    if (const auto* text = choice.if_contains("text"); text && text->is_string() && !text->get_string().empty())
      return true;
    const auto* delta = choice.if_contains("delta");
    if (!delta || !delta->is_object()) continue;
    const auto& d = delta->get_object();
    if (const auto* content = d.if_contains("content");
        content && content->is_string() && !content->get_string().empty())
      return true;
    if (const auto* tools = d.if_contains("tool_calls"); tools && tools->is_array() && !tools->get_array().empty())
      return true;
  }
  return false;
}

}  // namespace

std::string_view to_string(verdict v) noexcept {
  switch (v) {
    case verdict::pending: return "pending";
    case verdict::ok: return "ok";
    case verdict::truncated: return "truncated";
    case verdict::malformed: return "malformed";
    case verdict::error_event: return "error_event";
  }
  return "?";
}

stream_check::stream_check(bool streaming, json_scratch& scratch, histogram* gaps)
    : sse_(max_event_bytes), scratch_(&scratch), gaps_(gaps), streaming_(streaming) {
  if (!streaming_) body_ = std::make_unique<json::stream_parser>();
}

void stream_check::fail(verdict v, std::string why) {
  if (verdict_ != verdict::pending) return;
  verdict_ = v;
  reason_ = std::move(why);
}

bool stream_check::feed(std::string_view bytes, clock::time_point now) {
  if (verdict_ != verdict::pending) return false;
  if (bytes.empty()) return true;
  if (!streaming_) {
    if (!first_chunk_) first_chunk_ = now;
    boost::system::error_code ec;
    body_->write(bytes.data(), bytes.size(), ec);
    if (ec) fail(verdict::malformed, "response body is not JSON: " + ec.message());
    return verdict_ == verdict::pending;
  }
  auto r = sse_.feed(bytes, [&](const sse::event_view& ev) { return on_event(ev, now); });
  if (!r) fail(verdict::malformed, r.err().message);
  return verdict_ == verdict::pending;
}

bool stream_check::on_event(const sse::event_view& ev, clock::time_point now) {
  if (saw_done_) {
    fail(verdict::malformed, "event after [DONE]");
    return false;
  }
  if (ev.data == "[DONE]") {
    saw_done_ = true;
    return true;
  }
  if (ev.type == "error") {
    fail(verdict::error_event, "error event: " + std::string(ev.data.substr(0, 200)));
    return false;
  }
  auto& js = *scratch_;
  js.parser.reset(json::storage_ptr(&js.resource));
  boost::system::error_code ec;
  js.parser.write(ev.data.data(), ev.data.size(), ec);
  if (ec) {
    js.parser.reset();
    js.resource.release();
    fail(verdict::malformed, "data is not JSON: " + std::string(ev.data.substr(0, 200)));
    return false;
  }
  bool is_error = false, content = false;
  {
    json::value v = js.parser.release();
    if (v.is_object()) {
      const auto& obj = v.get_object();
      is_error = obj.contains("error");
      content = !is_error && has_content(obj);
    }
  }  // the value dies before its scratch storage is rewound
  js.resource.release();
  if (is_error) {
    fail(verdict::error_event, "error event: " + std::string(ev.data.substr(0, 200)));
    return false;
  }
  ++chunks_;
  if (!first_chunk_) first_chunk_ = now;
  if (content && !first_content_) first_content_ = now;
  if (last_chunk_ && gaps_)
    gaps_->record(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - *last_chunk_).count()));
  last_chunk_ = now;
  return true;
}

verdict stream_check::finish(bool clean) {
  if (verdict_ != verdict::pending) return verdict_;
  if (!streaming_) {
    if (!clean) {
      fail(verdict::truncated, "body ended early");
      return verdict_;
    }
    boost::system::error_code ec;
    body_->finish(ec);
    if (ec) {
      fail(verdict::malformed, "response body is not complete JSON: " + ec.message());
      return verdict_;
    }
    json::value v = body_->release();
    body_.reset();
    if (!v.is_object()) {
      fail(verdict::malformed, "response body is not a JSON object");
    } else if (v.get_object().contains("error")) {
      fail(verdict::error_event, "error object in a 2xx response");
    } else if (const auto* c = v.get_object().if_contains("choices"); !c || !c->is_array()) {
      fail(verdict::malformed, "response has no choices array");
    } else {
      verdict_ = verdict::ok;
    }
    return verdict_;
  }
  if (!saw_done_) {
    fail(verdict::truncated, sse_.pending_bytes() ? "ended inside an event, without [DONE]" : "ended without [DONE]");
  } else if (!clean) {
    fail(verdict::truncated, "[DONE] arrived but the body did not end cleanly");
  } else {
    verdict_ = verdict::ok;
  }
  return verdict_;
}

}  // namespace sluice::loadgen
