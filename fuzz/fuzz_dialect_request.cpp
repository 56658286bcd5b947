// The Messages dialect's whole-body translators on any JSON: a Messages request translated into a
// chat-completions request (chat_request_of), and a chat completion into a message (message_of).
// Neither may crash; a request it accepts has a model, messages, and a max_tokens in [1, 2^31); a
// message it makes is of type `message` with a content array and usage counts; an error names
// what is wrong.
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "dialects/anthropic_error.hpp"
#include "dialects/anthropic_request.hpp"
#include "dialects/anthropic_response.hpp"
#include "fuzz_util.hpp"

namespace {

namespace json = boost::json;
using sluice::fuzz::require;

void check_request(const json::object& in) {
  auto chat = sluice::dialects::chat_request_of(in);
  if (!chat) {
    require(!chat.err().message.empty(), "a refusal says why");
    return;
  }
  const auto* messages = chat->if_contains("messages");
  require(messages && messages->is_array(), "a chat request has messages");
  const auto* max = chat->if_contains("max_tokens");
  require(max && max->is_int64() && max->get_int64() >= 1 && max->get_int64() < (std::int64_t{1} << 31),
          "max_tokens is range-checked");
}

void check_message(const json::object& in) {
  auto m = sluice::dialects::message_of(in, {"msg_fuzz", "model", 1});
  if (!m) return;
  require(m->at("type") == "message", "a message's type");
  require(m->at("content").is_array(), "a message's content");
  const auto& usage = m->at("usage").as_object();
  require(usage.at("input_tokens").is_number() && usage.at("output_tokens").is_number(), "usage counts");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = sluice::fuzz::as_text(data, size);
  boost::system::error_code ec;
  const json::value v = json::parse(text, ec);
  // Whatever the body, an upstream error body reshapes to the Messages error shape.
  const auto err = json::parse(sluice::dialects::error_body_of_openai(502, text));
  require(err.at("type") == "error" && err.at("error").at("type") == "api_error", "an error body's shape");
  if (ec || !v.is_object()) return 0;
  check_request(v.get_object());
  check_message(v.get_object());
  return 0;
}
