// What the stream (anthropic_upstream_responses_stream) and the whole answer
// (anthropic_upstream_responses_response) of an Anthropic upstream behind /v1/responses build
// alike: the `response` object, its output items (a message, a function call, a reasoning item),
// the items' ids, and the response's status from the Messages stop_reason. One function each, so
// the two paths cannot drift apart. The shapes are the simulator's (src/sim/responses_content.cpp)
// and the openai SDK's types (resources/responses/responses.d.ts). Pure value code.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dialects/anthropic_upstream_common.hpp"

namespace sluice::dialects {

// What the gateway knows of the answer before the upstream's first event.
struct response_start_info {
  std::string id;  // the response id the client sees ("resp_" + 32 hex, made by the gateway)
  std::string model;  // the model asked for, when the upstream names none
  std::int64_t created_at = 0;  // unix seconds
};

// An output item's id: `prefix` ("msg_", "fc_", "rs_") + the response id's part after "resp_" +
// "_" + the item's output_index, so the items of one response have distinct ids.
std::string responses_item_id(std::string_view prefix, const response_start_info& info, std::size_t output_index);

// Why a response is incomplete, from the Messages stop_reason (as finish_reason_of_stop_reason
// reads it): max_tokens and model_context_window_exceeded → "max_output_tokens"; refusal →
// "content_filter"; any other → "" (the response is completed).
std::string_view incomplete_reason_of_stop_reason(std::string_view stop_reason) noexcept;

// The items, as the stream's output_item.added (status in_progress, nothing in content) and
// output_item.done / response.completed (status completed, the whole text) carry them:
// {"id","type":"message","status","role":"assistant","content":[{"type":"output_text","annotations":[],"text"}]}
boost::json::object message_item(std::string_view id, std::string_view status, const std::string_view* text);
// {"id","type":"reasoning","status","summary":[],"content":[{"type":"reasoning_text","text"}]}
boost::json::object reasoning_item(std::string_view id, std::string_view status, const std::string_view* text);
// {"id","type":"function_call","status","arguments","call_id","name"}
boost::json::object function_call_item(std::string_view id, std::string_view status, std::string_view arguments,
                                       std::string_view call_id, std::string_view name);

// The `response` object: status "in_progress" (usage null), "completed", or "incomplete" with
// incomplete_details {reason}. The request's settings are not echoed (the translator never sees
// the request): temperature and top_p null, tool_choice "auto", tools [], the simulator's other
// defaults.
boost::json::object response_object(const response_start_info& info, std::string_view model, std::string_view status,
                                    std::string_view incomplete_reason, boost::json::array output, const messages_usage* usage);

}  // namespace sluice::dialects
