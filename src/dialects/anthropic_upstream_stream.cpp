#include "dialects/anthropic_upstream_stream.hpp"
#include "dialects/json_fields.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <optional>

namespace sluice::dialects {

namespace json = boost::json;

namespace {

// A content block's `index`: a non-negative integer, or nothing.
std::optional<std::uint64_t> block_index(const json::object& event) { return non_negative_integer(event.if_contains("index")); }

bool known_after_start(std::string_view type) {
  return type == "content_block_start" || type == "content_block_delta" || type == "content_block_stop" ||
         type == "message_delta" || type == "message_stop";
}

}  // namespace

bool messages_to_chat_stream::on_event(std::string_view type, std::string_view data, std::string& out) {
  if (done_) return clean_;
  const parsed_event event(type, data);
  if (!event.object()) {
    fail("the upstream sent an event that is not a JSON object", out);
    return false;
  }
  return dispatch(event.type(), *event.object(), out);
}

bool messages_to_chat_stream::dispatch(std::string_view type, const json::object& event, std::string& out) {
  if (type == "error") {
    upstream_error(event, out);
    return false;
  }
  if (type == "message_start") return on_message_start(event, out);
  // ping, and event types added after this was written (Anthropic's versioning policy allows new
  // ones): nothing for the client.
  if (!known_after_start(type)) return true;
  if (!started_) {
    fail("the upstream sent " + std::string(type) + " before message_start", out);
    return false;
  }
  if (type == "content_block_start") return on_block_start(event, out);
  if (type == "content_block_delta") return on_block_delta(event, out);
  if (type == "content_block_stop") return on_block_stop(event, out);
  if (type == "message_delta") {
    if (const auto* delta = object_field(&event, "delta"))
      if (const auto reason = string_field(*delta, "stop_reason"); !reason.empty()) stop_reason_ = std::string(reason);
    usage_.update(object_field(&event, "usage"));
    return true;
  }
  finish(out);  // message_stop
  return true;
}

bool messages_to_chat_stream::on_message_start(const json::object& event, std::string& out) {
  if (started_) {
    fail("the upstream sent a second message_start", out);
    return false;
  }
  started_ = true;
  const auto* message = object_field(&event, "message");
  const auto model = message ? string_field(*message, "model") : std::string_view{};
  model_ = model.empty() ? info_.model : std::string(model);
  usage_.update(object_field(message, "usage"));
  prefix_ = R"({"id":)" + json::serialize(json::string_view(info_.id)) + R"(,"object":"chat.completion.chunk","created":)" +
            std::to_string(info_.created) + R"(,"model":)" + json::serialize(json::string_view(model_)) +
            R"(,"choices":[{"index":0,"delta":)";
  emit_chunk(R"({"role":"assistant","content":""})", {}, out);
  return true;
}

bool messages_to_chat_stream::on_block_start(const json::object& event, std::string& out) {
  const auto index = block_index(event);
  const auto* block = object_field(&event, "content_block");
  if (!index || !block) {
    fail("the upstream sent a content_block_start without an index or a block", out);
    return false;
  }
  if (open_.contains(*index)) {
    fail("the upstream reused the index of a content block that is still open", out);
    return false;
  }
  if (blocks_opened_ == max_blocks) {
    fail("the upstream opened more content blocks than one message may hold (1024)", out);
    return false;
  }
  ++blocks_opened_;
  const auto type = string_field(*block, "type");
  open_block b;
  if (type == "text") {
    b.kind = block_kind::text;
    emit_text("content", string_field(*block, "text"), out);
  } else if (type == "thinking") {
    b.kind = block_kind::thinking;
    emit_text("reasoning_content", string_field(*block, "thinking"), out);
  } else if (type == "tool_use") {
    b = {block_kind::tool_use, tool_calls_++};
    on_tool_start(*block, b.tool_index, out);
  }  // redacted_thinking, server tools' blocks and kinds added later: nothing a chat client can take
  open_.emplace(*index, b);
  return true;
}

void messages_to_chat_stream::on_tool_start(const json::object& block, std::size_t tool_index, std::string& out) {
  // The input normally arrives as input_json_delta events after an empty `input`; an upstream that
  // gives the whole input at the start has it sent as the call's first arguments.
  const auto* input = object_field(&block, "input");
  json::object function{{"name", string_field(block, "name")},
                        {"arguments", input && !input->empty() ? json::serialize(*input) : std::string()}};
  json::object call{{"index", tool_index}, {"id", string_field(block, "id")}, {"type", "function"}, {"function", std::move(function)}};
  emit_chunk(json::serialize(json::object{{"tool_calls", json::array{std::move(call)}}}), {}, out);
}

bool messages_to_chat_stream::on_block_delta(const json::object& event, std::string& out) {
  const auto index = block_index(event);
  const auto at = index ? open_.find(*index) : open_.end();
  if (at == open_.end()) {
    fail("the upstream sent a delta for a content block that is not open", out);
    return false;
  }
  const auto* delta = object_field(&event, "delta");
  if (!delta) return true;
  const auto type = string_field(*delta, "type");
  const auto& b = at->second;
  if (b.kind == block_kind::text && type == "text_delta") emit_text("content", string_field(*delta, "text"), out);
  if (b.kind == block_kind::thinking && type == "thinking_delta") emit_text("reasoning_content", string_field(*delta, "thinking"), out);
  if (b.kind == block_kind::tool_use && type == "input_json_delta") {
    const auto partial = string_field(*delta, "partial_json");
    if (partial.empty()) return true;
    emit_chunk(R"({"tool_calls":[{"index":)" + std::to_string(b.tool_index) + R"(,"function":{"arguments":)" +
                   json::serialize(json::string_view(partial)) + "}}]}",
               {}, out);
  }
  // signature_delta, citations_delta, deltas of dropped blocks: nothing a chat client can take.
  return true;
}

bool messages_to_chat_stream::on_block_stop(const json::object& event, std::string& out) {
  const auto index = block_index(event);
  if (!index || open_.erase(*index) == 0) {
    fail("the upstream stopped a content block that is not open", out);
    return false;
  }
  return true;
}

void messages_to_chat_stream::finish(std::string& out) {
  emit_chunk("{}", finish_reason_of_stop_reason(stop_reason_), out);
  if (info_.include_usage) {
    json::object chunk{{"id", info_.id},   {"object", "chat.completion.chunk"}, {"created", info_.created},
                       {"model", model_},  {"choices", json::array{}},         {"usage", usage_.chat_usage()}};
    out += "data: ";
    out += json::serialize(chunk);
    out += "\n\n";
  }
  out += "data: [DONE]\n\n";
  done_ = true;
  clean_ = true;
}

void messages_to_chat_stream::upstream_error(const json::object& event, std::string& out) {
  const auto* err = object_field(&event, "error");
  const auto type = err ? string_field(*err, "type") : std::string_view{};
  auto message = err ? string_field(*err, "message") : std::string_view{};
  if (message.empty()) message = "the upstream reported an error";
  error_event(message, openai_error_kind_of(type, 0), out);
}

void messages_to_chat_stream::on_end(std::string& out) {
  if (done_) return;
  fail(started_ ? "the upstream's stream ended before message_stop" : "the upstream's stream ended before message_start", out);
}

void messages_to_chat_stream::fail(std::string_view message, std::string& out) {
  error_event(message, {"upstream_error", "upstream_protocol_error"}, out);
}

void messages_to_chat_stream::error_event(std::string_view message, openai_error_kind kind, std::string& out) {
  if (done_) return;
  done_ = true;
  out += "data: ";
  out += openai_error_json(message, kind);
  out += "\n\n";
}

void messages_to_chat_stream::emit_chunk(std::string_view delta, std::string_view finish_reason, std::string& out) const {
  out += "data: ";
  out += prefix_;
  out += delta;
  out += R"(,"finish_reason":)";
  if (finish_reason.empty()) {
    out += "null";
  } else {
    out += '"';
    out += finish_reason;  // one of finish_reason_of_stop_reason's constants: nothing to escape
    out += '"';
  }
  out += "}]}\n\n";
}

void messages_to_chat_stream::emit_text(std::string_view field, std::string_view text, std::string& out) const {
  if (text.empty()) return;
  std::string delta = "{\"";
  delta += field;
  delta += "\":";
  delta += json::serialize(json::string_view(text));
  delta += '}';
  emit_chunk(delta, {}, out);
}

}  // namespace sluice::dialects
