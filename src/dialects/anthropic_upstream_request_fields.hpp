// The top-level request fields that both front ends of an Anthropic upstream carry alike: a chat
// completions request (anthropic_upstream_request.hpp) and a Responses API request
// (anthropic_upstream_responses_request.hpp) name them differently or nest them differently, but
// the ranges checked, the Messages fields written and the refusals are one code path. Internal to
// the dialects module; pure. Each function refuses with a bad_request naming the client's field.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/error.hpp"

namespace sluice::dialects {

// The Messages body begun: {"model": the request's model}, which must be a non-empty string.
result<boost::json::object> messages_body_with_model(const boost::json::object& in);

// out["max_tokens"]: the last of `names` the request sets (each an integer in [1, 2^31)), else
// `default_max_tokens` (the Messages API requires one).
result<void> copy_max_tokens(const boost::json::object& in, std::initializer_list<const char*> names,
                             std::uint64_t default_max_tokens, boost::json::object& out);

// temperature and top_p, each a number in [0, 1] (the Messages API's range; OpenAI's temperature
// reaches 2, and a value over 1 is refused rather than clamped).
result<void> copy_temperature_and_top_p(const boost::json::object& in, boost::json::object& out);

// A function tool's `name`, `description` and `parameters` (read from `fn`; `param` names fn for
// refusals) as a Messages tool {name, description, input_schema}; `strict` is dropped.
result<boost::json::object> messages_tool_of(const boost::json::object& fn, const std::string& param);

// How one front end reads its own tool entries and tool_choice (their shapes differ).
using tool_reader = result<boost::json::object> (*)(const boost::json::value& tool, const std::string& param);
using tool_choice_reader = result<boost::json::object> (*)(const boost::json::value& choice);

// The Messages tool_choice for "auto" / "required" / "none" (auto / any / none), or nothing.
const char* messages_tool_choice_type(const boost::json::value& choice) noexcept;

// tools (each through `tool`), tool_choice (through `choice`) and parallel_tool_calls (false:
// disable_parallel_tool_use on the choice, unless it is none). Without tools the other two are
// checked and dropped: the Messages API refuses a tool_choice without tools.
result<void> copy_tools(const boost::json::object& in, tool_reader tool, tool_choice_reader choice, boost::json::object& out);

// A reasoning effort (`param` names it: reasoning_effort, reasoning.effort) as output_config's
// effort: minimal and low → low; medium, high, xhigh kept; anything else refused.
result<void> add_effort(const boost::json::value& effort, const char* param, boost::json::object& config);

// stream (a boolean; true kept) and user (a string; as metadata.user_id when not empty).
result<void> copy_stream_and_user(const boost::json::object& in, boost::json::object& out);

}  // namespace sluice::dialects
