// The Responses API stream's grammar, as a client (the openai SDK) reads it, checked on the output
// of dialects::messages_to_responses_stream; shared by the unit test
// (anthropic_upstream_responses_stream_test.cpp) and the fuzz target
// (fuzz/fuzz_dialect_upstream_responses.cpp). Every event names its type on its `event:` line and
// in its data; sequence_number counts 0, 1, 2...; response.created, then response.in_progress,
// come first; output items open (output_item.added) and close (output_item.done) one at a time,
// output_index 0, 1, 2...; deltas only for the open item (and its open content part), the .done
// events repeating exactly what the deltas carried; response.completed or response.incomplete
// last, its output the done items; or an error event last. Returns "" when the stream holds to
// it, else what broke it (and where). Also how both feed a translator: in pieces, through the
// relay's SSE parser.
#pragma once

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sse/parser.hpp"

namespace sluice::dialects::testing {

class responses_grammar {
 public:
  // Every event of a translated stream; then done() says whether it ended as it must.
  std::string check(std::string_view translated) {
    sse::parser parser(64 << 20);
    auto r = parser.feed(translated, [&](const sse::event_view& ev) {
      if (error_.empty()) event(ev.type, ev.data);
      return error_.empty();
    });
    if (!r) return "the output is not a well-formed event stream";
    if (error_.empty() && !ended_) error_ = "the stream ends without response.completed, response.incomplete or error";
    return error_;
  }

 private:
  struct open_item {
    std::string id, type, name, text;
    std::int64_t output_index = -1;
    bool part_open = false;
  };

  bool fail(std::string what) {
    if (error_.empty()) error_ = what + " (event " + std::to_string(sequence_) + ")";
    return false;
  }
  bool expect(bool ok, const char* what) { return ok || fail(what); }

  void event(std::string_view type, std::string_view data) {
    boost::system::error_code ec;
    auto v = boost::json::parse(data, ec);
    if (!expect(!ec && v.is_object(), "every event's data is a JSON object")) return;
    const auto& o = v.get_object();
    if (!expect(!ended_, "nothing follows the last event")) return;
    if (!expect(o.contains("type") && o.at("type") == boost::json::string_view(type), "the data names the event's type")) return;
    const auto* seq = o.if_contains("sequence_number");
    if (!expect(seq && seq->is_int64() && seq->get_int64() == sequence_, "sequence_number counts 0, 1, 2...")) return;
    ++sequence_;
    if (type == "error") return on_error(o);
    if (sequence_ == 1) {
      expect(type == "response.created", "response.created comes first");
    } else if (sequence_ == 2) {
      expect(type == "response.in_progress", "response.in_progress comes second");
    } else if (type == "response.created" || type == "response.in_progress") {
      fail("response.created and response.in_progress come once");
    } else {
      in_response(type, o);
    }
    if (sequence_ <= 2) response(o, "in_progress");
  }

  void on_error(const boost::json::object& o) {
    ended_ = true;
    const auto* err = o.if_contains("error");
    expect(o.at("message").is_string() && o.at("code").is_string() && err && err->is_object() &&
               err->at("message") == o.at("message") && err->at("code") == o.at("code") && err->at("type").is_string(),
           "an error event's message, code and error object");
  }

  const boost::json::object* response(const boost::json::object& o, std::string_view status) {
    const auto* r = o.if_contains("response");
    if (!expect(r && r->is_object(), "a response event carries the response")) return nullptr;
    const auto& resp = r->get_object();
    expect(resp.at("object") == "response" && resp.at("status") == boost::json::string_view(status) && resp.at("id").is_string() &&
               resp.at("model").is_string() && resp.at("output").is_array(),
           "the response's object, status, id, model and output");
    if (!id_.empty()) expect(resp.at("id") == boost::json::string_view(id_), "one response id");
    id_ = resp.at("id").as_string();
    return &resp;
  }

  bool same_item(const boost::json::object& o) {
    return expect(open_.output_index >= 0, "an item event for an open item") &&
           expect(o.at("output_index") == open_.output_index && (!o.contains("item_id") || o.at("item_id") == boost::json::string_view(open_.id)),
                  "an item event names the open item");
  }

  void in_response(std::string_view type, const boost::json::object& o) {
    if (type == "response.output_item.added") return item_added(o);
    if (type == "response.output_item.done") return item_done(o);
    if (type == "response.completed" || type == "response.incomplete") return finish(type, o);
    if (!same_item(o)) return;
    if (type == "response.content_part.added" || type == "response.content_part.done") return part(type, o);
    if (type.ends_with(".delta")) return delta(type, o);
    if (type.ends_with(".done")) return text_done(type, o);
    fail("an event type the translator does not write: " + std::string(type));
  }

  void item_added(const boost::json::object& o) {
    if (!expect(open_.output_index < 0, "one item open at a time")) return;
    if (!expect(o.at("output_index") == next_index_, "output_index counts 0, 1, 2...")) return;
    const auto& item = o.at("item").as_object();
    open_ = open_item{std::string(item.at("id").as_string()), std::string(item.at("type").as_string()), "", "", next_index_, false};
    if (open_.type == "function_call") open_.name = item.at("name").as_string();
    expect(item.at("status") == "in_progress", "an added item is in progress");
    expect(open_.type == "message" || open_.type == "reasoning" || open_.type == "function_call", "an item's type");
  }

  void part(std::string_view type, const boost::json::object& o) {
    const bool added = type == "response.content_part.added";
    expect(open_.type != "function_call" && open_.part_open != added, "a content part opens once and closes once, in a message or reasoning");
    expect(o.at("content_index") == 0, "one content part: content_index 0");
    const auto& p = o.at("part").as_object();
    expect(p.at("type") == (open_.type == "message" ? "output_text" : "reasoning_text"), "the part's type");
    expect(p.at("text") == boost::json::string_view(added ? "" : open_.text), "a done part carries the whole text");
    open_.part_open = added;
  }

  void delta(std::string_view type, const boost::json::object& o) {
    const std::string_view want = open_.type == "message"     ? "response.output_text.delta"
                                  : open_.type == "reasoning" ? "response.reasoning_text.delta"
                                                              : "response.function_call_arguments.delta";
    if (!expect(type == want, "a delta of the open item's kind")) return;
    expect(open_.type == "function_call" || open_.part_open, "a text delta inside its open content part");
    open_.text += o.at("delta").as_string();
  }

  void text_done(std::string_view type, const boost::json::object& o) {
    if (type == "response.function_call_arguments.done") {
      expect(open_.type == "function_call" && o.at("arguments") == boost::json::string_view(open_.text) &&
                 o.at("name") == boost::json::string_view(open_.name),
             "arguments.done repeats the arguments and names the function");
      return;
    }
    const bool message = type == "response.output_text.done";
    expect((message ? open_.type == "message" : open_.type == "reasoning" && type == "response.reasoning_text.done") && open_.part_open &&
               o.at("text") == boost::json::string_view(open_.text),
           "a text's .done repeats the whole text, inside its part");
  }

  void item_done(const boost::json::object& o) {
    if (!same_item(o)) return;
    const auto& item = o.at("item").as_object();
    expect(!open_.part_open && item.at("status") == "completed" && item.at("id") == boost::json::string_view(open_.id),
           "a done item is completed, its part closed");
    const auto& whole = open_.type == "function_call" ? item.at("arguments") : item.at("content").at(0).at("text");
    expect(whole == boost::json::string_view(open_.text), "a done item carries what the deltas carried");
    done_items_.push_back(item);
    open_ = open_item{};
    ++next_index_;
  }

  void finish(std::string_view type, const boost::json::object& o) {
    ended_ = true;
    expect(open_.output_index < 0, "no item open at the end");
    const auto* resp = response(o, type == "response.completed" ? "completed" : "incomplete");
    if (!resp) return;
    expect(resp->at("output") == done_items_, "the response's output is the done items");
    expect(resp->at("usage").is_object() && resp->at("usage").at("total_tokens").is_number(), "the final response's usage");
    expect(type == "response.completed" ? resp->at("incomplete_details").is_null() : resp->at("incomplete_details").is_object(),
           "incomplete_details only when incomplete");
  }

  std::string error_;
  std::string id_;
  std::int64_t sequence_ = 0;
  std::int64_t next_index_ = 0;
  open_item open_;
  boost::json::array done_items_;
  bool ended_ = false;
};

// An upstream's bytes fed to a stream translator (its on_event, fail, on_end, finished) through
// `parser`, cut at the ascending offsets `cuts` as a socket might cut them; an event over the
// parser's cap fails the stream, as the gateway's seam does. Returns what the translator wrote.
template <class Translator>
std::string translate_in_pieces(Translator& t, sse::parser& parser, std::string_view upstream, const std::vector<std::size_t>& cuts) {
  std::vector<std::size_t> ends(cuts);
  ends.push_back(upstream.size());
  std::string out;
  std::size_t from = 0;
  for (std::size_t i = 0; i < ends.size() && !t.finished(); from = ends[i++]) {
    const auto r = parser.feed(upstream.substr(from, ends[i] - from), [&](const sse::event_view& ev) { return t.on_event(ev.type, ev.data, out); });
    if (!r) t.fail("an upstream event over the cap", out);
  }
  t.on_end(out);
  return out;
}

// "" when `translated` holds to the Responses stream's grammar, else what broke it.
inline std::string responses_grammar_violation(std::string_view translated) { return responses_grammar().check(translated); }

}  // namespace sluice::dialects::testing
