// The Anthropic Messages API wire format of sim::generator (POST /v1/messages): the message object,
// and the stream's events, each as `event: <type>` + `data: {"type":<type>,..}`, in Anthropic's
// order: message_start (empty content, usage.input_tokens, output_tokens 1), content_block_start
// (index 0: a text block or a tool_use block with an empty input), ping, one content_block_delta
// per token (text_delta or input_json_delta), content_block_stop, message_delta (stop_reason and
// usage.output_tokens), message_stop. There is no [DONE]. A mid-stream error is an `event: error`.
#include <boost/json.hpp>

#include <algorithm>
#include <cstdio>

#include "sim/content.hpp"
#include "sim/messages.hpp"
#include "sse/parser.hpp"

namespace sluice::sim {

std::string_view generator::stop_reason() const noexcept {
  return cut_ ? "max_tokens" : calls_tool() ? "tool_use" : "end_turn";
}

std::string_view generator::model_json() const {
  // head_ is `{"id":..,"object":..,"created":..,"model":"<model>",` for every API but chat.
  const std::size_t at = head_.find(",\"model\":") + 9;
  return std::string_view(head_).substr(at, head_.size() - at - 1);
}

std::string generator::tool_input_json() const {
  std::string raw;
  if (content_) {  // the text of the first count_ tokens, cut as append_token_text cuts it
    const std::string& t = *content_;
    std::size_t pos = 0;
    for (std::uint64_t i = 0; i < count_ && pos < t.size(); ++i) {
      pos = std::min(t.size(), pos + static_cast<std::size_t>(token_size_));
      while (pos < t.size() && (static_cast<unsigned char>(t[pos]) & 0xC0) == 0x80) ++pos;
    }
    raw = t.substr(0, pos);
  } else {
    raw = full_text();  // generated words: plain ASCII, never JSON
  }
  boost::system::error_code ec;
  boost::json::parse(raw, ec);
  if (!ec) return raw;
  return boost::json::serialize(boost::json::string_view(raw.data(), raw.size()));
}

void generator::append_message_open(std::string& out) {
  json_ = "{\"type\":\"message_start\",\"message\":{\"id\":\"" + id_ +
          "\",\"type\":\"message\",\"role\":\"assistant\",\"model\":";
  json_ += model_json();
  json_ += ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":";
  append_uint(json_, prompt_tokens_);
  json_ += ",\"output_tokens\":1}}}";
  sse::append_event(out, json_, "message_start");
  json_ = "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":";
  if (calls_tool())
    json_ += "{\"type\":\"tool_use\",\"id\":\"" + call_id_ + "\",\"name\":\"" + tool_name_ + "\",\"input\":{}}}";
  else
    json_ += "{\"type\":\"text\",\"text\":\"\"}}";
  sse::append_event(out, json_, "content_block_start");
  sse::append_event(out, "{\"type\":\"ping\"}", "ping");
}

void generator::append_message_delta(std::string& out) {
  json_ = "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":";
  json_ += calls_tool() ? "\"input_json_delta\",\"partial_json\":\"" : "\"text_delta\",\"text\":\"";
  append_token_text(json_);
  json_ += "\"}}";
  sse::append_event(out, json_, "content_block_delta");
}

void generator::append_message_close(std::string& out) {
  sse::append_event(out, "{\"type\":\"content_block_stop\",\"index\":0}", "content_block_stop");
  json_ = "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"";
  json_ += stop_reason();
  json_ += "\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":";
  append_uint(json_, count_);
  json_ += "}}";
  sse::append_event(out, json_, "message_delta");
  sse::append_event(out, "{\"type\":\"message_stop\"}", "message_stop");
}

void generator::append_message_error(std::string& out) {
  sse::append_event(out, anthropic_error_body("overloaded_error", "Overloaded"), "error");
}

std::string generator::message_body() const {
  std::string j = "{\"id\":\"" + id_ + "\",\"type\":\"message\",\"role\":\"assistant\",\"model\":";
  j += model_json();
  j += ",\"content\":[";
  if (calls_tool()) {
    j += "{\"type\":\"tool_use\",\"id\":\"" + call_id_ + "\",\"name\":\"" + tool_name_ + "\",\"input\":";
    j += tool_input_json();
    j += '}';
  } else {
    j += "{\"type\":\"text\",\"text\":\"" + full_text() + "\"}";
  }
  j += "],\"stop_reason\":\"";
  j += stop_reason();
  j += "\",\"stop_sequence\":null,\"usage\":{\"input_tokens\":";
  append_uint(j, prompt_tokens_);
  j += ",\"output_tokens\":";
  append_uint(j, count_);
  j += "}}";
  return j;
}

}  // namespace sluice::sim
