// The chat-completions → Messages stream translator on any upstream bytes: fed through the relay's
// SSE parser whole and in pieces, it writes the same bytes; every event it writes is JSON whose
// `type` names the event; blocks open one at a time with indices 0, 1, 2...; and the stream ends
// with exactly one message_stop or error, nothing after it.
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <string>

#include "dialects/anthropic_stream.hpp"
#include "fuzz_util.hpp"
#include "sse/parser.hpp"

namespace {

using sluice::fuzz::require;

std::string translate(std::string_view text, const std::vector<std::size_t>& cuts) {
  sluice::sse::parser parser(4096);
  sluice::dialects::chat_to_messages_stream t({"msg_fuzz", "model", 1});
  std::string out;
  std::size_t from = 0;
  auto feed = [&](std::size_t to) {
    auto r = parser.feed(text.substr(from, to - from), [&](const sluice::sse::event_view& ev) { return t.on_event(ev.data, out); });
    from = to;
    if (!r) t.fail("api_error", "an upstream event over the cap", out);
  };
  for (std::size_t c : cuts)
    if (!t.finished()) feed(c);
  if (!t.finished()) feed(text.size());
  t.on_end(out);
  return out;
}

void check_grammar(std::string_view translated) {
  sluice::sse::parser parser(1 << 20);
  long open = -1, next = 0;
  bool ended = false;
  auto r = parser.feed(translated, [&](const sluice::sse::event_view& ev) {
    require(!ended, "nothing follows message_stop or error");
    boost::system::error_code ec;
    auto v = boost::json::parse(ev.data, ec);
    require(!ec && v.is_object(), "every event is a JSON object");
    const auto& o = v.get_object();
    const auto* type = o.if_contains("type");
    require(type && type->is_string() && std::string_view(type->get_string()) == ev.type, "the data's type names the event");
    if (ev.type == "content_block_start") {
      require(open == -1 && o.at("index").to_number<long>() == next, "a block starts alone, at the next index");
      open = next;
    } else if (ev.type == "content_block_delta") {
      require(o.at("index").to_number<long>() == open, "a delta is the open block's");
    } else if (ev.type == "content_block_stop") {
      require(o.at("index").to_number<long>() == open, "the open block stops");
      open = -1;
      ++next;
    } else if (ev.type == "message_stop" || ev.type == "error") {
      ended = true;
    }
  });
  require(static_cast<bool>(r), "the translation is a well-formed event stream");
  require(ended, "the stream ends with message_stop or error");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = sluice::fuzz::split_from(sluice::fuzz::as_text(data, size));
  const auto whole = translate(in.text, {});
  require(translate(in.text, in.cuts) == whole, "the translation does not depend on the split");
  check_grammar(whole);
  return 0;
}
