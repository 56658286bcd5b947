#include "dialects/anthropic_stream.hpp"
#include "dialects/json_fields.hpp"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/parser.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <algorithm>
#include <charconv>

namespace sluice::dialects {

namespace json = boost::json;

namespace {

void emit(std::string_view type, const json::object& data, std::string& out) {
  out += "event: ";
  out += type;
  out += "\ndata: ";
  out += json::serialize(data);
  out += "\n\n";
}

// `s` as a JSON string, escaped as json::serialize escapes it (the corpus holds its bytes): the
// quote, the backslash and the control characters; UTF-8 as it is (the parser checked it).
void append_json_string(std::string_view s, std::string& out) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  std::size_t from = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + from, i - from);
    from = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
    }
  }
  out.append(s.data() + from, s.size() - from);
  out += '"';
}

// The delta events, one per upstream token: written directly, the same bytes emit() writes.
void emit_delta(int index, std::string_view kind, std::string_view field, std::string_view text, std::string& out) {
  char digits[16];
  const auto end = std::to_chars(digits, digits + sizeof digits, index).ptr;
  out += "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":";
  out.append(digits, end);
  out += ",\"delta\":{\"type\":\"";
  out += kind;
  out += "\",\"";
  out += field;
  out += "\":";
  append_json_string(text, out);
  out += "}}\n\n";
}

// One parser per thread over a fixed buffer, so a chunk's parse allocates nothing in the common
// case; a thread's streams never parse at once (the relay feeds one event at a time).
struct parse_scratch {
  alignas(16) unsigned char buffer[16 * 1024];
  json::monotonic_resource resource{buffer, sizeof buffer};
  json::parser parser;
};

parse_scratch& scratch() {
  thread_local parse_scratch s;
  return s;
}

}  // namespace

std::string_view chat_to_messages_stream::stop_reason_of(std::string_view finish_reason) noexcept {
  if (finish_reason == "length") return "max_tokens";
  if (finish_reason == "tool_calls" || finish_reason == "function_call") return "tool_use";
  if (finish_reason == "content_filter") return "refusal";
  return "end_turn";  // "stop", and any reason the Messages API has no name for
}

void chat_to_messages_stream::start(std::string_view model, std::string& out) {
  if (started_) return;
  started_ = true;
  json::object usage{{"input_tokens", info_.input_tokens_estimate}, {"output_tokens", 0}};
  json::object message{{"id", info_.id},
                       {"type", "message"},
                       {"role", "assistant"},
                       {"model", model.empty() ? info_.model : std::string(model)},
                       {"content", json::array{}},
                       {"stop_reason", nullptr},
                       {"stop_sequence", nullptr},
                       {"usage", std::move(usage)}};
  emit("message_start", {{"type", "message_start"}, {"message", std::move(message)}}, out);
  emit("ping", {{"type", "ping"}}, out);
}

void chat_to_messages_stream::open_block(block_kind kind, std::string_view start_json, std::string& out) {
  close_block(out);
  json::object data{{"type", "content_block_start"}, {"index", next_block_}};
  data["content_block"] = json::parse(start_json);
  emit("content_block_start", data, out);
  open_ = kind;
}

void chat_to_messages_stream::close_block(std::string& out) {
  if (open_ == block_kind::none) return;
  if (open_ == block_kind::tool_use) tools_.back().closed = true;
  emit("content_block_stop", {{"type", "content_block_stop"}, {"index", next_block_}}, out);
  ++next_block_;
  open_ = block_kind::none;
}

bool chat_to_messages_stream::on_text(std::string_view text, block_kind kind, std::string& out) {
  if (text.empty()) return true;
  const bool thinking = kind == block_kind::thinking;
  if (open_ != kind) open_block(kind, thinking ? R"({"type":"thinking","thinking":"","signature":""})" : R"({"type":"text","text":""})", out);
  emit_delta(next_block_, thinking ? "thinking_delta" : "text_delta", thinking ? "thinking" : "text", text, out);
  return true;
}

bool chat_to_messages_stream::on_tool_delta(const void* p, std::string& out) {
  const auto& call = *static_cast<const json::object*>(p);
  const auto* index = call.if_contains("index");
  const std::int64_t at = index && index->is_int64() ? index->get_int64() : static_cast<std::int64_t>(tools_.size()) - 1;
  const auto* fn = object_field(&call, "function");
  const std::string_view args = fn ? string_field(*fn, "arguments") : std::string_view{};
  const bool current = open_ == block_kind::tool_use && !tools_.empty() && tools_.back().openai_index == at;
  if (!current) {
    for (const auto& t : tools_)
      if (t.openai_index == at) {  // its block is closed: the Messages API cannot reopen it
        fail("api_error", "the upstream interleaved the arguments of parallel tool calls", out);
        return false;
      }
    if (tools_.size() == max_tool_calls) {
      fail("api_error", "the upstream sent more tool calls than one message may carry (1024)", out);
      return false;
    }
    const std::string_view name = fn ? string_field(*fn, "name") : std::string_view{};
    json::object block{{"type", "tool_use"}, {"id", string_field(call, "id")}, {"name", name}, {"input", json::object{}}};
    open_block(block_kind::tool_use, json::serialize(block), out);
    tools_.push_back({at, false});
  }
  if (!args.empty()) emit_delta(next_block_, "input_json_delta", "partial_json", args, out);
  return true;
}

bool chat_to_messages_stream::on_event(std::string_view data, std::string& out) {
  if (done_) return false;
  if (data == "[DONE]") {
    on_end(out);
    return true;
  }
  auto& s = scratch();
  s.parser.reset(json::storage_ptr(&s.resource));
  boost::system::error_code ec;
  s.parser.write(data.data(), data.size(), ec);
  bool more = false;
  if (ec) {
    s.parser.reset();
    fail("api_error", "the upstream sent an event that is not JSON", out);
  } else {
    const json::value v = s.parser.release();
    if (v.is_object()) more = on_chunk(v.get_object(), out);
    else fail("api_error", "the upstream sent an event that is not JSON", out);
  }  // the value is gone before its storage is rewound
  s.resource.release();
  return more;
}

bool chat_to_messages_stream::on_chunk(const boost::json::object& chunk, std::string& out) {
  if (const auto* err = object_field(&chunk, "error")) {
    const auto message = string_field(*err, "message");
    fail("api_error", message.empty() ? "the upstream reported an error" : message, out);
    return false;
  }
  start(string_field(chunk, "model"), out);
  if (const auto* usage = object_field(&chunk, "usage")) {
    // OpenAI's prompt_tokens include the cached ones; the Messages API counts them apart.
    const auto prompt = count_field(usage, "prompt_tokens");
    cache_read_tokens_ = std::min(prompt, count_field(object_field(usage, "prompt_tokens_details"), "cached_tokens"));
    input_tokens_ = prompt - cache_read_tokens_;
    output_tokens_ = count_field(usage, "completion_tokens");
  }
  const auto* choices = chunk.if_contains("choices");
  if (!choices || !choices->is_array()) return true;
  for (const auto& c : choices->get_array()) {
    if (!c.is_object()) continue;
    const auto& choice = c.get_object();
    if (const auto* delta = object_field(&choice, "delta")) {
      auto reasoning = string_field(*delta, "reasoning_content");
      if (reasoning.empty()) reasoning = string_field(*delta, "reasoning");
      on_text(reasoning, block_kind::thinking, out);
      on_text(string_field(*delta, "content"), block_kind::text, out);
      if (const auto* calls = delta->if_contains("tool_calls"); calls && calls->is_array())
        for (const auto& call : calls->get_array())
          if (call.is_object() && !on_tool_delta(&call.get_object(), out)) return false;
    }
    if (const auto reason = string_field(choice, "finish_reason"); !reason.empty()) {
      close_block(out);
      stop_reason_ = std::string(stop_reason_of(reason));
      if (const auto matched = string_field(choice, "stop_reason"); !matched.empty() && reason == "stop") {
        stop_reason_ = "stop_sequence";
        stop_sequence_ = std::string(matched);
      }
    }
  }
  return true;
}

void chat_to_messages_stream::finish(std::string& out) {
  close_block(out);
  json::object usage{{"input_tokens", input_tokens_}, {"output_tokens", output_tokens_}};
  if (cache_read_tokens_ > 0) usage["cache_read_input_tokens"] = cache_read_tokens_;
  json::object delta{{"stop_reason", stop_reason_}, {"stop_sequence", nullptr}};
  if (!stop_sequence_.empty()) delta["stop_sequence"] = stop_sequence_;
  emit("message_delta", {{"type", "message_delta"}, {"delta", std::move(delta)}, {"usage", std::move(usage)}}, out);
  emit("message_stop", {{"type", "message_stop"}}, out);
  done_ = true;
}

void chat_to_messages_stream::on_end(std::string& out) {
  if (done_) return;
  if (stop_reason_.empty()) {
    fail("api_error", "the upstream's stream ended before it finished", out);
    return;
  }
  finish(out);
}

void chat_to_messages_stream::fail(std::string_view type, std::string_view message, std::string& out) {
  if (done_) return;
  done_ = true;
  emit("error", {{"type", "error"}, {"error", json::object{{"type", type}, {"message", message}}}}, out);
}

}  // namespace sluice::dialects
