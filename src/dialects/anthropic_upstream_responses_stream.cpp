#include "dialects/anthropic_upstream_responses_stream.hpp"
#include "dialects/json_fields.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace sluice::dialects {

namespace json = boost::json;

namespace {

std::string_view delta_event_of(bool message, bool reasoning) {
  return message ? "response.output_text.delta" : reasoning ? "response.reasoning_text.delta" : "response.function_call_arguments.delta";
}

// A message's or a reasoning item's one content part, as content_part.added/done carry it.
json::object content_part_of(bool message, std::string_view text) {
  if (message) return json::object{{"type", "output_text"}, {"annotations", json::array{}}, {"text", text}};
  return json::object{{"type", "reasoning_text"}, {"text", text}};
}

}  // namespace

bool messages_to_responses_stream::on_event(std::string_view type, std::string_view data, std::string& out) {
  if (done_) return clean_;
  const parsed_event event(type, data);
  return event.object() ? dispatch(event.type(), *event.object(), out) : failed("the upstream sent an event that is not a JSON object", out);
}

bool messages_to_responses_stream::dispatch(std::string_view type, const json::object& event, std::string& out) {
  using handler = bool (messages_to_responses_stream::*)(const json::object&, std::string&);
  struct route {
    std::string_view type;
    handler on;
  };
  static constexpr route inside_a_message[] = {
      {"content_block_start", &messages_to_responses_stream::on_block_start},
      {"content_block_delta", &messages_to_responses_stream::on_block_delta},
      {"content_block_stop", &messages_to_responses_stream::on_block_stop},
      {"message_delta", &messages_to_responses_stream::on_message_delta},
      {"message_stop", &messages_to_responses_stream::on_message_stop},
  };
  if (type == "error") {
    upstream_error(event, out);
    return false;
  }
  if (type == "message_start") return on_message_start(event, out);
  for (const auto& r : inside_a_message)
    if (r.type == type) return started_ ? (this->*r.on)(event, out) : failed("the upstream sent " + std::string(type) + " before message_start", out);
  return true;  // ping, and event types added after this was written: nothing for the client
}

bool messages_to_responses_stream::on_message_start(const json::object& event, std::string& out) {
  if (started_) return failed("the upstream sent a second message_start", out);
  started_ = true;
  const auto* message = object_field(&event, "message");
  const auto model = message ? string_field(*message, "model") : std::string_view{};
  model_ = model.empty() ? info_.model : std::string(model);
  usage_.update(object_field(message, "usage"));
  const json::object fields{{"response", response_object(info_, model_, "in_progress", {}, {}, nullptr)}};
  emit("response.created", fields, out);
  emit("response.in_progress", fields, out);
  return true;
}

bool messages_to_responses_stream::on_block_start(const json::object& event, std::string& out) {
  const auto index = non_negative_integer(event.if_contains("index"));
  const auto* block = object_field(&event, "content_block");
  if (!index || !block) return failed("the upstream sent a content_block_start without an index or a block", out);
  if (open_) return failed("the upstream opened a content block while another was still open", out);
  if (blocks_opened_ == max_blocks) return failed("the upstream opened more content blocks than one message may hold (1024)", out);
  ++blocks_opened_;
  const auto type = string_field(*block, "type");
  open_item item;
  item.index = *index;
  item.kind = type == "text"       ? item_kind::message
              : type == "thinking" ? item_kind::reasoning
              : type == "tool_use" ? item_kind::function_call
                                   : item_kind::ignored;  // redacted_thinking, server tools' blocks, kinds added later
  open_ = std::move(item);
  if (open_->kind == item_kind::ignored) return true;
  open_item_events(*block, out);
  // Content given at the start (an upstream may give a tool's whole input there) goes as a delta.
  std::string initial;
  if (open_->kind == item_kind::message) initial = string_field(*block, "text");
  if (open_->kind == item_kind::reasoning) initial = string_field(*block, "thinking");
  if (const auto* input = object_field(block, "input"); open_->kind == item_kind::function_call && input && !input->empty())
    initial = json::serialize(*input);
  return add_delta(initial, out);
}

void messages_to_responses_stream::open_item_events(const json::object& block, std::string& out) {
  auto& it = *open_;
  it.output_index = items_.size();  // one item open at a time: the items before it are done
  const bool message = it.kind == item_kind::message;
  it.id = responses_item_id(message ? "msg_" : it.kind == item_kind::reasoning ? "rs_" : "fc_", info_, it.output_index);
  if (it.kind == item_kind::function_call) {
    it.call_id = string_field(block, "id");
    it.name = string_field(block, "name");
  }
  const std::string head = "\"item_id\":" + json::serialize(json::string_view(it.id)) + ",\"output_index\":" + std::to_string(it.output_index);
  it.delta_prefix = head + (it.kind == item_kind::function_call ? "," : ",\"content_index\":0,");
  emit("response.output_item.added", json::object{{"output_index", it.output_index}, {"item", item_of(it, "in_progress")}}, out);
  if (it.kind == item_kind::function_call) return;
  emit("response.content_part.added", head + ",\"content_index\":0,\"part\":" + json::serialize(content_part_of(message, "")), out);
}

bool messages_to_responses_stream::on_block_delta(const json::object& event, std::string& out) {
  const auto index = non_negative_integer(event.if_contains("index"));
  if (!open_ || !index || *index != open_->index) return failed("the upstream sent a delta for a content block that is not open", out);
  const auto* delta = object_field(&event, "delta");
  const auto type = delta ? string_field(*delta, "type") : std::string_view{};
  switch (open_->kind) {
    case item_kind::message: return type != "text_delta" || add_delta(string_field(*delta, "text"), out);
    case item_kind::reasoning: return type != "thinking_delta" || add_delta(string_field(*delta, "thinking"), out);
    case item_kind::function_call: return type != "input_json_delta" || add_delta(string_field(*delta, "partial_json"), out);
    case item_kind::ignored: break;
  }
  return true;  // signature_delta, citations_delta, deltas of dropped blocks: nothing the client can take
}

bool messages_to_responses_stream::add_delta(std::string_view delta, std::string& out) {
  if (delta.empty()) return true;
  if (delta.size() > max_output_ - kept_bytes_)
    return failed("the upstream's answer is longer than the gateway keeps for one response (1 MiB)", out);
  kept_bytes_ += delta.size();
  auto& it = *open_;
  it.text += delta;
  std::string fields = it.delta_prefix + "\"delta\":" + json::serialize(json::string_view(delta));
  if (it.kind == item_kind::message) fields += ",\"logprobs\":[]";
  emit(delta_event_of(it.kind == item_kind::message, it.kind == item_kind::reasoning), fields, out);
  return true;
}

bool messages_to_responses_stream::on_block_stop(const json::object& event, std::string& out) {
  const auto index = non_negative_integer(event.if_contains("index"));
  if (!open_ || !index || *index != open_->index) return failed("the upstream stopped a content block that is not open", out);
  if (open_->kind != item_kind::ignored && !close_item(out)) return false;
  open_.reset();
  return true;
}

// The open item's .done events, then the item itself is kept for response.completed.
bool messages_to_responses_stream::close_item(std::string& out) {
  auto& it = *open_;
  // A tool called without input streams no arguments; its input is {} (the whole answer's too).
  if (it.kind == item_kind::function_call && it.text.empty() && !add_delta("{}", out)) return false;
  json::object head{{"item_id", it.id}, {"output_index", it.output_index}};
  if (it.kind == item_kind::function_call) {
    head["arguments"] = it.text;
    head["name"] = it.name;
    emit("response.function_call_arguments.done", head, out);
  } else {
    const bool message = it.kind == item_kind::message;
    head["content_index"] = 0;
    json::object done = head;
    done["text"] = it.text;
    if (message) done["logprobs"] = json::array{};
    emit(message ? "response.output_text.done" : "response.reasoning_text.done", done, out);
    head["part"] = content_part_of(message, it.text);
    emit("response.content_part.done", head, out);
  }
  json::object fields{{"output_index", it.output_index}, {"item", item_of(it, "completed")}};
  emit("response.output_item.done", fields, out);
  items_.push_back(std::move(fields["item"]));
  return true;
}

bool messages_to_responses_stream::on_message_delta(const json::object& event, std::string&) {
  const auto* delta = object_field(&event, "delta");
  if (const auto reason = delta ? string_field(*delta, "stop_reason") : std::string_view{}; !reason.empty()) stop_reason_ = std::string(reason);
  usage_.update(object_field(&event, "usage"));
  return true;
}

bool messages_to_responses_stream::on_message_stop(const json::object&, std::string& out) {
  if (open_) return failed("the upstream ended its message with a content block still open", out);
  const auto reason = incomplete_reason_of_stop_reason(stop_reason_);
  const std::string_view status = reason.empty() ? "completed" : "incomplete";
  const json::object fields{{"response", response_object(info_, model_, status, reason, std::move(items_), &usage_)}};
  emit(reason.empty() ? "response.completed" : "response.incomplete", fields, out);
  done_ = true;
  clean_ = true;
  return true;
}

void messages_to_responses_stream::upstream_error(const json::object& event, std::string& out) {
  const auto* err = object_field(&event, "error");
  const std::string_view message = err ? string_field(*err, "message") : std::string_view{};
  const auto kind = openai_error_kind_of(err ? string_field(*err, "type") : std::string_view{}, 0);
  error_event(message.empty() ? "the upstream reported an error" : message, kind, out);  // never finished here: on_event checked
}

void messages_to_responses_stream::on_end(std::string& out) {
  if (!done_) fail(started_ ? "the upstream's stream ended before message_stop" : "the upstream's stream ended before message_start", out);
}

void messages_to_responses_stream::fail(std::string_view message, std::string& out) {
  if (!done_) error_event(message, {"upstream_error", "upstream_protocol_error"}, out);
}

// http::responses_error_event's shape: {"type":"error","code","message","param","sequence_number","error":{...}}.
// Called once: the stream is finished after it.
void messages_to_responses_stream::error_event(std::string_view message, openai_error_kind kind, std::string& out) {
  done_ = true;
  const json::object event{{"type", "error"},          {"code", kind.code}, {"message", message}, {"param", nullptr},
                           {"sequence_number", sequence_++}, {"error", openai_error_object(message, kind)}};
  out += "event: error\ndata: ";
  out += json::serialize(event);
  out += "\n\n";
}

json::object messages_to_responses_stream::item_of(const open_item& it, std::string_view status) const {
  const bool whole = status != "in_progress";
  const std::string_view text = it.text;
  if (it.kind == item_kind::function_call) return function_call_item(it.id, status, whole ? text : std::string_view{}, it.call_id, it.name);
  if (it.kind == item_kind::reasoning) return reasoning_item(it.id, status, whole ? &text : nullptr);
  return message_item(it.id, status, whole ? &text : nullptr);
}

void messages_to_responses_stream::emit(std::string_view type, std::string_view fields, std::string& out) {
  out += "event: ";
  out += type;
  out += "\ndata: {\"type\":\"";
  out += type;  // one of this file's constants: nothing to escape
  out += "\",\"sequence_number\":";
  out += std::to_string(sequence_++);
  out += ',';
  out += fields;
  out += "}\n\n";
}

void messages_to_responses_stream::emit(std::string_view type, const json::object& fields, std::string& out) {
  const std::string s = json::serialize(fields);  // a non-empty object: its members are what lies between the braces
  emit(type, std::string_view(s).substr(1, s.size() - 2), out);
}

}  // namespace sluice::dialects
