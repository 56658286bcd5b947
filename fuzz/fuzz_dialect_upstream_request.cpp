// An Anthropic upstream's whole-body translators on any JSON: a chat-completions request into a
// Messages request (messages_request_of), a Messages answer into a chat completion
// (chat_completion_of), and any body into OpenAI's error shape (openai_error_body_of_messages).
// None may crash; a request it accepts has a model, a non-empty messages array and a max_tokens in
// [1, 2^31); a completion it makes has one choice and usage counts; a refusal names its field; an
// error body is always OpenAI's shape.
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "dialects/anthropic_upstream_request.hpp"
#include "dialects/anthropic_upstream_response.hpp"
#include "fuzz_util.hpp"

namespace {

namespace json = boost::json;
using sluice::fuzz::require;

void check_request(const json::object& in) {
  auto m = sluice::dialects::messages_request_of(in, {});
  if (!m) {
    require(!m.err().message.empty() && !m.err().param.empty(), "a refusal says why and names the field");
    return;
  }
  require(m->at("model").is_string(), "a Messages request has a model");
  const auto* messages = m->if_contains("messages");
  require(messages && messages->is_array() && !messages->get_array().empty(), "a Messages request has messages");
  const auto* max = m->if_contains("max_tokens");
  require(max && max->is_number() && max->to_number<double>() >= 1 && max->to_number<double>() < 2147483648.0,
          "max_tokens is there and range-checked");
}

void check_completion(const json::object& in) {
  auto c = sluice::dialects::chat_completion_of(in, {"chatcmpl-fuzz", "model", 1, false});
  if (!c) return;
  require(c->at("object") == "chat.completion", "a completion's object");
  require(c->at("choices").as_array().size() == 1, "one choice");
  const auto& usage = c->at("usage").as_object();
  require(usage.at("prompt_tokens").is_number() && usage.at("total_tokens").is_number(), "usage counts");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = sluice::fuzz::as_text(data, size);
  // Whatever the body, an upstream's error body reshapes to OpenAI's error shape.
  const auto err = json::parse(sluice::dialects::openai_error_body_of_messages(529, text));
  require(err.at("error").at("message").is_string() && err.at("error").at("code").is_string(), "an error body's shape");
  boost::system::error_code ec;
  const json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return 0;
  check_request(v.get_object());
  check_completion(v.get_object());
  return 0;
}
