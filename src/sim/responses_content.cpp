// The OpenAI Responses API wire format of sim::generator (POST /v1/responses): the response object,
// and the typed stream events, each as `event: <type>` + `data: {"type":<type>,"sequence_number":N,..}`.
// As the real API does, a stream ends with response.completed (or response.incomplete when
// max_output_tokens cut it) and the end of the body; there is no [DONE].
#include <cstdio>

#include "sim/content.hpp"
#include "sse/parser.hpp"

namespace sluice::sim {

std::string generator::message_item(std::string_view status, std::string_view text_json) const {
  std::string j = "{\"id\":\"msg_" + id_.substr(5) + "\",\"type\":\"message\",\"status\":\"";
  j += status;
  j += "\",\"role\":\"assistant\",\"content\":[";
  if (!text_json.empty()) {
    j += "{\"type\":\"output_text\",\"annotations\":[],\"text\":\"";
    j += text_json;
    j += "\"}";
  }
  j += "]}";
  return j;
}

std::string generator::function_call_item(std::string_view status, std::string_view arguments_json) const {
  std::string j = "{\"id\":\"fc_" + id_.substr(5) + "\",\"type\":\"function_call\",\"status\":\"";
  j += status;
  j += "\",\"arguments\":\"";
  j += arguments_json;
  j += "\",\"call_id\":\"" + call_id_ + "\",\"name\":\"" + tool_name_ + "\"}";
  return j;
}

std::string generator::response_object(std::string_view status, std::string_view output, bool with_usage) const {
  std::string j = "{\"id\":\"" + id_ + "\",\"object\":\"response\",\"created_at\":";
  append_uint(j, created_);
  j += ",\"status\":\"";
  j += status;
  j += "\",\"error\":null,\"incomplete_details\":";
  j += status == "incomplete" ? "{\"reason\":\"max_output_tokens\"}" : "null";
  j += ",\"instructions\":null,\"max_output_tokens\":null,\"model\":";
  j += head_.substr(head_.find(",\"model\":") + 9, head_.size() - head_.find(",\"model\":") - 10);
  j += ",\"output\":[";
  j += output;
  j += "],\"parallel_tool_calls\":true,\"previous_response_id\":null,\"store\":false,\"temperature\":1.0,"
       "\"text\":{\"format\":{\"type\":\"text\"}},\"tool_choice\":\"auto\",\"tools\":[],\"top_p\":1.0,"
       "\"truncation\":\"disabled\",\"usage\":";
  if (with_usage) {
    j += "{\"input_tokens\":";
    append_uint(j, prompt_tokens_);
    j += ",\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":";
    append_uint(j, count_);
    j += ",\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":";
    append_uint(j, prompt_tokens_ + count_);
    j += '}';
  } else {
    j += "null";
  }
  j += ",\"user\":null,\"metadata\":{}}";
  return j;
}

void generator::append_typed_event(std::string& out, std::string_view type, std::string_view fields) {
  json_ = "{\"type\":\"";
  json_ += type;
  json_ += "\",\"sequence_number\":";
  append_uint(json_, sequence_++);
  json_ += ',';
  json_ += fields;
  json_ += '}';
  sse::append_event(out, json_, type);
}

void generator::append_response_open(std::string& out) {
  std::string pending = response_object("in_progress", {}, false);
  append_typed_event(out, "response.created", "\"response\":" + pending);
  append_typed_event(out, "response.in_progress", "\"response\":" + pending);
  if (calls_tool()) {
    append_typed_event(out, "response.output_item.added", "\"output_index\":0,\"item\":" + function_call_item("in_progress", {}));
    return;
  }
  append_typed_event(out, "response.output_item.added", "\"output_index\":0,\"item\":" + message_item("in_progress", {}));
  append_typed_event(out, "response.content_part.added",
                     "\"item_id\":\"msg_" + id_.substr(5) +
                         "\",\"output_index\":0,\"content_index\":0,\"part\":{\"type\":\"output_text\",\"annotations\":[],\"text\":\"\"}");
}

void generator::append_response_delta(std::string& out) {
  if (calls_tool()) {
    std::string fields = "\"item_id\":\"fc_" + id_.substr(5) + "\",\"output_index\":0,\"delta\":\"";
    append_token_text(fields);
    fields += '"';
    append_typed_event(out, "response.function_call_arguments.delta", fields);
    return;
  }
  std::string fields = "\"item_id\":\"msg_" + id_.substr(5) + "\",\"output_index\":0,\"content_index\":0,\"delta\":\"";
  append_token_text(fields);
  fields += "\",\"logprobs\":[]";
  append_typed_event(out, "response.output_text.delta", fields);
}

void generator::append_response_close(std::string& out) {
  const std::string text = full_text();
  const char* end = cut_ ? "response.incomplete" : "response.completed";
  if (calls_tool()) {
    append_typed_event(out, "response.function_call_arguments.done",
                       "\"item_id\":\"fc_" + id_.substr(5) + "\",\"output_index\":0,\"arguments\":\"" + text + "\"");
    std::string item = function_call_item(cut_ ? "incomplete" : "completed", text);
    append_typed_event(out, "response.output_item.done", "\"output_index\":0,\"item\":" + item);
    append_typed_event(out, end, "\"response\":" + response_object(cut_ ? "incomplete" : "completed", item, true));
    return;
  }
  const std::string item_id = "\"item_id\":\"msg_" + id_.substr(5) + "\",\"output_index\":0,\"content_index\":0,";
  append_typed_event(out, "response.output_text.done", item_id + "\"text\":\"" + text + "\",\"logprobs\":[]");
  append_typed_event(out, "response.content_part.done",
                     item_id + "\"part\":{\"type\":\"output_text\",\"annotations\":[],\"text\":\"" + text + "\"}");
  std::string item = message_item(cut_ ? "incomplete" : "completed", text);
  append_typed_event(out, "response.output_item.done", "\"output_index\":0,\"item\":" + item);
  append_typed_event(out, end, "\"response\":" + response_object(cut_ ? "incomplete" : "completed", item, true));
}

std::string generator::response_body() {
  const std::string text = full_text();
  const char* status = cut_ ? "incomplete" : "completed";
  return response_object(status, calls_tool() ? function_call_item(status, text) : message_item(status, text), true);
}

}  // namespace sluice::sim
