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

// A Responses API event that carries generated output (a text or tool-call argument delta).
bool response_has_content(const json::object& event, std::string_view type) {
  if (type != "response.output_text.delta" && type != "response.function_call_arguments.delta") return false;
  const auto* d = event.if_contains("delta");
  return d && d->is_string() && !d->get_string().empty();
}

std::string clip(std::string_view s) { return std::string(s.substr(0, 200)); }

}  // namespace

wire wire_of_path(std::string_view path) noexcept {
  if (path == "/v1/responses") return wire::responses;
  if (path == "/v1/messages") return wire::messages;
  return wire::choices;
}

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

stream_check::stream_check(bool streaming, json_scratch& scratch, histogram* gaps, wire format)
    : sse_(max_event_bytes), scratch_(&scratch), gaps_(gaps), streaming_(streaming), format_(format) {
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

bool stream_check::on_response_event(const json::object& event, std::string_view data, bool& content) {
  const auto* type = event.if_contains("type");
  if ((!type || *type == "error") && event.contains("error")) {  // an in-band error, typed or not
    fail(verdict::error_event, "error event: " + clip(data));
    return false;
  }
  if (!type || !type->is_string()) {
    fail(verdict::malformed, "event without a type: " + clip(data));
    return false;
  }
  const std::string_view t(type->get_string().data(), type->get_string().size());
  if (saw_done_) {
    fail(verdict::malformed, "event after response.completed: " + std::string(t));
    return false;
  }
  if (t == "error" || t == "response.failed" || t == "response.incomplete") {
    fail(verdict::error_event, std::string(t) + ": " + clip(data));
    return false;
  }
  if (!check_sequence(event, t)) return false;
  if (t == "response.completed" && !check_completed(event)) return false;
  content = response_has_content(event, t);
  return true;
}

bool stream_check::on_message_event(const json::object& event, std::string_view event_type, std::string_view data,
                                    bool& content) {
  const auto* type = event.if_contains("type");
  if (!type || !type->is_string() || type->get_string() != event_type) {
    fail(verdict::malformed, "an event whose data's type is not its name " + std::string(event_type) + ": " + clip(data));
    return false;
  }
  if (saw_done_) {
    fail(verdict::malformed, "event after message_stop: " + std::string(event_type));
    return false;
  }
  if (started_ == (event_type == "message_start")) {
    fail(verdict::malformed, started_ ? "message_start again" : "the first event is " + std::string(event_type));
    return false;
  }
  started_ = true;
  saw_done_ = event_type == "message_stop";
  content = event_type == "content_block_delta";
  return true;
}

bool stream_check::check_sequence(const json::object& event, std::string_view t) {
  const auto* seq = event.if_contains("sequence_number");
  if (!seq || !(seq->is_int64() || seq->is_uint64())) {
    fail(verdict::malformed, std::string(t) + " without a sequence_number");
    return false;
  }
  const std::uint64_t n = seq->is_uint64() ? seq->get_uint64() : static_cast<std::uint64_t>(seq->get_int64());
  if (seq->is_int64() && seq->get_int64() < 0) {
    fail(verdict::malformed, "negative sequence_number");
    return false;
  }
  if (n != next_sequence_) {
    fail(verdict::malformed, std::string(t) + " has sequence_number " + std::to_string(n) + ", expected " +
                                 std::to_string(next_sequence_));
    return false;
  }
  if (next_sequence_ == 0 && t != "response.created") {
    fail(verdict::malformed, "the first event is " + std::string(t) + ", not response.created");
    return false;
  }
  if (next_sequence_ > 0 && t == "response.created") {
    fail(verdict::malformed, "response.created again at sequence_number " + std::to_string(n));
    return false;
  }
  ++next_sequence_;
  return true;
}

bool stream_check::check_completed(const json::object& event) {
  const auto* r = event.if_contains("response");
  const json::object* resp = r && r->is_object() ? &r->get_object() : nullptr;
  const auto* status = resp ? resp->if_contains("status") : nullptr;
  const auto* usage = resp ? resp->if_contains("usage") : nullptr;
  if (!status || *status != "completed") {
    fail(verdict::malformed, "response.completed without status \"completed\"");
    return false;
  }
  if (!usage || !usage->is_object()) {
    fail(verdict::malformed, "response.completed without usage");
    return false;
  }
  saw_done_ = true;
  return true;
}

std::optional<bool> stream_check::on_done_marker(std::string_view data) {
  const bool done = data == "[DONE]";
  switch (format_) {
    case wire::responses:
      if (!done) return std::nullopt;
      // Not sent by the Responses API; tolerated after its end, as some compatible servers add it.
      if (!saw_done_) fail(verdict::malformed, "[DONE] before response.completed");
      return saw_done_;
    case wire::messages:
      if (!done) return std::nullopt;
      fail(verdict::malformed, "[DONE] in a Messages API stream");
      return false;
    case wire::choices:
      if (saw_done_) {
        fail(verdict::malformed, "event after [DONE]");
        return false;
      }
      if (!done) return std::nullopt;
      saw_done_ = true;
      return true;
  }
  return std::nullopt;
}

bool stream_check::on_event(const sse::event_view& ev, clock::time_point now) {
  if (auto decided = on_done_marker(ev.data)) return *decided;
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
  bool is_error = false, content = false, passed = true;
  {
    json::value v = js.parser.release();
    if (format_ != wire::choices) {
      if (v.is_object()) {
        passed = format_ == wire::responses ? on_response_event(v.get_object(), ev.data, content)
                                            : on_message_event(v.get_object(), ev.type, ev.data, content);
      } else {
        fail(verdict::malformed, "data is not a JSON object: " + clip(ev.data));
        passed = false;
      }
    } else if (v.is_object()) {
      const auto& obj = v.get_object();
      is_error = obj.contains("error");
      content = !is_error && has_content(obj);
    }
  }  // the value dies before its scratch storage is rewound
  js.resource.release();
  if (!passed) return false;
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
    if (format_ == wire::responses) {
      finish_whole(v);
      return verdict_;
    }
    if (format_ == wire::messages) {
      finish_whole_message(v);
      return verdict_;
    }
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
  const char* end = format_ == wire::responses  ? "response.completed"
                    : format_ == wire::messages ? "message_stop"
                                                : "[DONE]";
  if (!saw_done_) {
    fail(verdict::truncated, std::string(sse_.pending_bytes() ? "ended inside an event, without " : "ended without ") + end);
  } else if (!clean) {
    fail(verdict::truncated, std::string(end) + " arrived but the body did not end cleanly");
  } else {
    verdict_ = verdict::ok;
  }
  return verdict_;
}

// A whole Responses API answer: a response object, no error, status "completed", an output array.
void stream_check::finish_whole(const json::value& v) {
  const json::object* o = v.is_object() ? &v.get_object() : nullptr;
  const json::value* err = o ? o->if_contains("error") : nullptr;
  const json::value* status = o ? o->if_contains("status") : nullptr;
  const json::value* output = o ? o->if_contains("output") : nullptr;
  if (!o) fail(verdict::malformed, "response body is not a JSON object");
  else if (err && !err->is_null()) fail(verdict::error_event, "error object in a 2xx response");
  else if (!status || !status->is_string()) fail(verdict::malformed, "response has no status");
  else if (*status != "completed")
    fail(verdict::error_event, "response status is " + std::string(status->get_string().c_str()));
  else if (!output || !output->is_array()) fail(verdict::malformed, "response has no output array");
  else verdict_ = verdict::ok;
}

// A whole Messages API answer: a message with a content array (an error body is an error).
void stream_check::finish_whole_message(const json::value& v) {
  const json::object* o = v.is_object() ? &v.get_object() : nullptr;
  const json::value* type = o ? o->if_contains("type") : nullptr;
  const json::value* content = o ? o->if_contains("content") : nullptr;
  if (!o) fail(verdict::malformed, "response body is not a JSON object");
  else if (type && *type == "error") fail(verdict::error_event, "an error body in a 2xx response");
  else if (!type || *type != "message") fail(verdict::malformed, "response is not of type message");
  else if (!content || !content->is_array()) fail(verdict::malformed, "message has no content array");
  else verdict_ = verdict::ok;
}

}  // namespace sluice::loadgen
