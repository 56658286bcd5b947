// The facts scan_event reads, read instead from a parsed DOM: the oracle that its unit test and
// its fuzz target compare it with. Test-only (not part of the proxy module's code).
#pragma once

#include <boost/json/parse.hpp>

#include "proxy/relay/event_scan.hpp"

namespace sluice::proxy {

inline bool event_scan_oracle(std::string_view text, event_facts& f) {
  namespace json = boost::json;
  f = event_facts{};
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return false;
  const auto& o = v.get_object();
  if (const auto* c = o.if_contains("choices"); c && c->is_array()) {
    f.choices_array = true;
    f.choices = static_cast<std::uint32_t>(c->get_array().size());
  }
  auto int_of = [](const json::value* x) -> std::int64_t {
    if (x && x->is_int64()) return x->get_int64();
    if (x && x->is_uint64() && x->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
      return static_cast<std::int64_t>(x->get_uint64());
    return -1;
  };
  // The top-level usage, or else the response object's.
  const json::value* usage = o.if_contains("usage");
  if (!usage || !usage->is_object()) {
    usage = nullptr;
    if (const auto* r = o.if_contains("response"); r && r->is_object())
      if (const auto* u = r->get_object().if_contains("usage"); u && u->is_object()) usage = u;
  }
  if (usage) {
    f.usage_object = true;
    const auto& u = usage->get_object();
    f.completion_tokens = int_of(u.if_contains("completion_tokens"));
    f.prompt_tokens = int_of(u.if_contains("prompt_tokens"));
    f.output_tokens = int_of(u.if_contains("output_tokens"));
    f.input_tokens = int_of(u.if_contains("input_tokens"));
  }
  f.sequence_number = int_of(o.if_contains("sequence_number"));
  if (const auto* r = o.if_contains("response"); r && r->is_object()) f.response_object = true;
  f.has_error = o.contains("error");
  if (const auto* t = o.if_contains("type"); t && t->is_string()) {
    using k = event_facts::type_kind;
    const auto& s = t->get_string();
    if (s == "response.completed") f.type = k::completed;
    else if (s == "response.incomplete") f.type = k::incomplete;
    else if (s == "response.failed") f.type = k::failed;
    else if (s == "error") f.type = k::error;
    else if (s == "response.output_text.delta" || s == "response.refusal.delta" ||
             s == "response.function_call_arguments.delta")
      f.type = k::text_delta;
  }
  return true;
}


inline bool same_facts(const event_facts& a, const event_facts& b) {
  return a.choices_array == b.choices_array && a.choices == b.choices && a.usage_object == b.usage_object &&
         a.has_error == b.has_error && a.completion_tokens == b.completion_tokens &&
         a.prompt_tokens == b.prompt_tokens && a.output_tokens == b.output_tokens &&
         a.input_tokens == b.input_tokens && a.sequence_number == b.sequence_number && a.type == b.type &&
         a.response_object == b.response_object;
}

// Every fact, the response id's place too (which the DOM cannot show): scan_event's skim against
// its SAX scan.
inline bool same_facts_and_id(const event_facts& a, const event_facts& b) {
  return same_facts(a, b) && a.response_id.found == b.response_id.found && a.response_id.at == b.response_id.at &&
         a.response_id.size == b.response_id.size;
}

}  // namespace sluice::proxy
