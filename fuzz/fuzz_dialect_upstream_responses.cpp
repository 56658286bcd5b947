// An Anthropic upstream behind /v1/responses on any input. The stream translator
// (messages_to_responses_stream), fed any upstream bytes through the relay's SSE parser whole and
// in pieces, writes the same bytes, and what it writes holds to the Responses stream's grammar
// (tests/unit/dialects/anthropic_upstream_responses_grammar.hpp: sequence numbers 0, 1, 2...,
// response.created first, items opened and closed one at a time with their deltas, .done events
// repeating the deltas, response.completed/incomplete or an error last). The whole-body
// translators on any JSON object: a Responses request into a Messages request
// (messages_request_of_responses), a Messages answer into a response (response_of_message); none
// may crash, a request it accepts has a model, messages and a max_tokens in [1, 2^31), a refusal
// names its field, a response has the gateway's id and usage.
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <string>

#include "anthropic_upstream_responses_grammar.hpp"
#include "dialects/anthropic_upstream_responses_request.hpp"
#include "dialects/anthropic_upstream_responses_response.hpp"
#include "fuzz_util.hpp"
#include "sse/parser.hpp"

namespace {

namespace json = boost::json;
using sluice::fuzz::require;

const sluice::dialects::response_start_info info{"resp_fuzz", "model", 1700000000};

std::string translate(std::string_view text, const std::vector<std::size_t>& cuts) {
  sluice::sse::parser parser(4096);
  sluice::dialects::messages_to_responses_stream t(info);
  return sluice::dialects::testing::translate_in_pieces(t, parser, text, cuts);
}

void check_request(const json::object& in) {
  const auto m = sluice::dialects::messages_request_of_responses(in, {});
  if (!m) return require(!m.err().message.empty() && !m.err().param.empty(), "a refusal says why and names the field");
  const auto* max = m->if_contains("max_tokens");
  const double max_tokens = max && max->is_number() ? max->to_number<double>() : 0.0;
  require(m->at("model").is_string() && !m->at("messages").as_array().empty() && max_tokens >= 1 && max_tokens < 2147483648.0,
          "an accepted request has a model, messages and a max_tokens in [1, 2^31)");
}

void check_response(const json::object& in) {
  auto r = sluice::dialects::response_of_message(in, info);
  if (!r) return;
  require(r->at("object") == "response" && r->at("id") == "resp_fuzz", "a response's object and id");
  require(r->at("output").is_array() && r->at("usage").at("total_tokens").is_number(), "a response's output and usage");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = sluice::fuzz::split_from(sluice::fuzz::as_text(data, size));
  const auto whole = translate(in.text, {});
  require(translate(in.text, in.cuts) == whole, "the translation does not depend on the split");
  const auto violation = sluice::dialects::testing::responses_grammar_violation(whole);
  if (!violation.empty()) std::fprintf(stderr, "%s\n", violation.c_str());
  require(violation.empty(), "the translation holds to the Responses stream's grammar");
  boost::system::error_code ec;
  const json::value v = json::parse(in.text, ec);
  if (ec || !v.is_object()) return 0;
  check_request(v.get_object());
  check_response(v.get_object());
  return 0;
}
