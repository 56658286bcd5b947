// The Messages → chat-completions stream translator (an Anthropic upstream behind
// /v1/chat/completions) on any upstream bytes: fed through the relay's SSE parser whole and in
// pieces, it writes the same bytes; every event it writes is a chat chunk with one id, created and
// model, or the usage chunk after the finish, or an error; tool calls take indices 0, 1, 2... in
// order with their id and name first; and the stream ends with exactly one finish then [DONE], or
// with an error event, nothing after either.
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <string>

#include "dialects/anthropic_upstream_stream.hpp"
#include "fuzz_util.hpp"
#include "sse/parser.hpp"

namespace {

namespace json = boost::json;
using sluice::fuzz::require;

std::string translate(std::string_view text, const std::vector<std::size_t>& cuts, bool include_usage) {
  sluice::sse::parser parser(4096);
  sluice::dialects::messages_to_chat_stream t({"chatcmpl-fuzz", "model", 1700000000, include_usage});
  std::string out;
  std::size_t from = 0;
  auto feed = [&](std::size_t to) {
    auto r = parser.feed(text.substr(from, to - from), [&](const sluice::sse::event_view& ev) { return t.on_event(ev.type, ev.data, out); });
    from = to;
    if (!r) t.fail("an upstream event over the cap", out);
  };
  for (std::size_t c : cuts)
    if (!t.finished()) feed(c);
  if (!t.finished()) feed(text.size());
  t.on_end(out);
  return out;
}

// The stream's state as the checker reads it.
struct chat_grammar {
  bool ended = false;
  int finishes = 0;
  std::size_t calls = 0;
  std::string model;

  void tool_calls(const json::object& delta) {
    const auto* calls_v = delta.if_contains("tool_calls");
    if (!calls_v) return;
    for (const auto& c : calls_v->as_array()) {
      const auto index = c.at("index").to_number<std::size_t>();
      require(index <= calls, "tool call indices go 0, 1, 2... in order");
      if (index < calls) continue;
      require(c.as_object().contains("id") && c.at("function").as_object().contains("name"), "a new call names its id and name");
      ++calls;
    }
  }
  void chunk(const json::object& o) {
    require(o.at("id") == "chatcmpl-fuzz" && o.at("object") == "chat.completion.chunk" && o.at("created") == 1700000000, "a chunk's id, object, created");
    if (model.empty()) model = o.at("model").as_string();
    require(o.at("model") == json::string_view(model), "one model in every chunk");
    const auto& choices = o.at("choices").as_array();
    if (choices.empty()) {
      require(finishes == 1 && o.at("usage").is_object(), "the usage chunk follows the finish");
      return;
    }
    require(finishes == 0 && choices.size() == 1, "one choice, and nothing but usage after the finish");
    tool_calls(choices[0].at("delta").as_object());
    if (!choices[0].at("finish_reason").is_null()) ++finishes;
  }
  void data(std::string_view d) {
    require(!ended, "nothing follows [DONE] or an error");
    if (d == "[DONE]") {
      require(finishes == 1, "[DONE] follows exactly one finish");
      ended = true;
      return;
    }
    boost::system::error_code ec;
    auto v = json::parse(d, ec);
    require(!ec && v.is_object(), "every event is a JSON object");
    if (const auto* err = v.get_object().if_contains("error")) {
      require(err->at("message").is_string() && err->at("code").is_string(), "an error's message and code");
      ended = true;
      return;
    }
    chunk(v.get_object());
  }
};

void check_grammar(std::string_view translated) {
  sluice::sse::parser parser(1 << 20);
  chat_grammar g;
  auto r = parser.feed(translated, [&](const sluice::sse::event_view& ev) {
    require(ev.type.empty(), "a chat stream names no event types");
    g.data(ev.data);
  });
  require(static_cast<bool>(r), "the translation is a well-formed event stream");
  require(g.ended, "the stream ends with [DONE] or an error");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = sluice::fuzz::split_from(sluice::fuzz::as_text(data, size));
  const bool include_usage = size > 0 && (data[0] & 1);
  const auto whole = translate(in.text, {}, include_usage);
  require(translate(in.text, in.cuts, include_usage) == whole, "the translation does not depend on the split");
  check_grammar(whole);
  return 0;
}
