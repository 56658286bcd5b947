// Structured outputs, part 4 of 4: stream_check, the incremental check of one stream fed event by
// event from the JSON the relay already parsed.
#include "proxy/structured/structured_output.hpp"

#include <algorithm>
#include <cstdint>

#include "proxy/structured/structured_output_detail.hpp"
#include "sse/parser.hpp"

namespace sluice::proxy {
namespace json = boost::json;

using output_detail::no_output;

stream_check::stream_check(const output_contract& c)
    : schema_(c.schema),
      which_(c.which),
      policy_(c.policy),
      emit_event_(c.stream_event),
      expected_(c.choices),
      max_choices_(c.max_choices) {}

std::optional<error> stream_check::refuse(std::uint32_t index, schema::validation_error why) {
  verdict_.error = std::move(why);
  if (expected_ > 1 || index != 0) verdict_.choice = index;
  if (policy_ == schema_policy::annotate) return std::nullopt;
  return violation_error(*verdict_.error, verdict_.choice);
}

std::optional<error> stream_check::out_of_bounds(std::int64_t index) {
  if (finished_ || verdict_) return std::nullopt;
  schema::validation_error e;
  e.what = schema::validation_error::kind::limit_exceeded;
  e.message = "the stream carries choice index " + std::to_string(index) + "; only indices 0.." +
              std::to_string(max_choices_ - 1) + " are checked (schema-max-choices)";
  const auto shown = static_cast<std::uint32_t>(std::clamp<std::int64_t>(index, 0, UINT32_MAX));
  return refuse(shown, std::move(e));
}

stream_check::choice_state& stream_check::slot(std::uint32_t index) {
  if (choices_.size() <= index) choices_.resize(index + 1);
  choice_state& st = choices_[index];
  if (!st.validator) {
    st.validator.emplace(schema_);
    ++tracked_;
  }
  return st;
}

std::optional<error> stream_check::judge(std::uint32_t index, const result<void>& r) {
  if (r) return std::nullopt;
  const auto* v = choices_[index].validator->violation();
  return refuse(index, v ? *v : no_output(r.err().message));
}

std::optional<error> stream_check::feed(std::uint32_t index, std::string_view delta) {
  if (finished_ || verdict_ || delta.empty()) return std::nullopt;
  return judge(index, slot(index).validator->feed(delta));
}

std::optional<error> stream_check::finish_choice(std::uint32_t index) {
  if (finished_ || verdict_) return std::nullopt;
  choice_state& st = slot(index);
  if (st.finished) return std::nullopt;
  st.finished = true;
  if (index < expected_) ++expected_finished_;
  if (st.tool_call) return std::nullopt;  // a tool call is not a text answer: nothing to judge
  return judge(index, st.validator->finish());
}

void stream_check::mark_tool_call(std::uint32_t index) {
  if (finished_ || verdict_) return;
  slot(index).tool_call = true;
}

std::optional<error> stream_check::finish() {
  if (finished_) return std::nullopt;
  std::optional<error> out;
  if (!verdict_) {  // else already judged (and, under reject, already sent)
    if (tracked_ == 0) (void)slot(0);  // nothing arrived: choice 0's empty document is the verdict
    for (std::uint32_t i = 0; i < choices_.size() && !verdict_; ++i)
      if (choices_[i].validator && !choices_[i].finished) out = finish_choice(i);
  }
  if (!verdict_) {  // nothing judged when every choice called a tool
    verdict_.tool_calls = std::all_of(choices_.begin(), choices_.end(),
                                      [](const choice_state& st) { return !st.validator || st.tool_call; });
  }
  finished_ = true;
  return out;
}

std::optional<error> stream_check::on_event(const json::object& event) {
  if (which_ == api::responses) {
    const json::value* type = event.if_contains("type");
    if (!type || !type->is_string()) return std::nullopt;
    const json::string& t = type->get_string();
    if (t == "response.output_text.delta") {
      const json::value* d = event.if_contains("delta");
      if (d && d->is_string()) return feed(0, d->get_string());
      return std::nullopt;
    }
    if (t == "response.output_item.added") {
      const json::value* item = event.if_contains("item");
      if (item && item->is_object())
        if (const json::value* it = item->get_object().if_contains("type"); it && *it == "function_call") mark_tool_call(0);
      return std::nullopt;
    }
    if (t == "response.output_text.done" || t == "response.completed" || t == "response.incomplete") return finish();
    return std::nullopt;
  }
  const json::value* choices = event.if_contains("choices");
  if (!choices || !choices->is_array()) return std::nullopt;
  const auto& arr = choices->get_array();
  for (std::size_t pos = 0; pos < arr.size(); ++pos) {
    if (!arr[pos].is_object()) continue;
    const auto& choice = arr[pos].get_object();
    std::int64_t index = static_cast<std::int64_t>(pos);
    if (const json::value* idx = choice.if_contains("index"); idx && idx->is_int64()) index = idx->get_int64();
    else if (idx && idx->is_uint64()) index = INT64_MAX;  // out of any bound
    if (index < 0 || index >= static_cast<std::int64_t>(max_choices_)) return out_of_bounds(index);
    const auto i = static_cast<std::uint32_t>(index);
    const json::value* text = nullptr;
    if (which_ == api::completions) {
      text = choice.if_contains("text");
    } else if (const json::value* delta = choice.if_contains("delta"); delta && delta->is_object()) {
      text = delta->get_object().if_contains("content");
    }
    if (text && text->is_string())
      if (auto e = feed(i, text->get_string())) return e;
    if (which_ == api::chat_completions)
      if (const json::value* delta = choice.if_contains("delta"); delta && delta->is_object())
        if (const json::value* calls = delta->get_object().if_contains("tool_calls");
            calls && calls->is_array() && !calls->get_array().empty())
          mark_tool_call(i);
    if (const json::value* fin = choice.if_contains("finish_reason"); fin && fin->is_string()) {
      if (fin->get_string() == "tool_calls") mark_tool_call(i);
      if (auto e = finish_choice(i)) return e;
    }
  }
  return std::nullopt;
}

std::optional<error> stream_check::on_done() { return finish(); }

std::string stream_check::final_event() {
  if (!emit_event_ || policy_ != schema_policy::annotate) return {};
  (void)finish();  // annotate never turns a verdict into an error
  return sse::format_event(verdict_json(verdict_), schema_event_type);
}

}  // namespace sluice::proxy
