// The request side of an Anthropic upstream (proxy/adapters/anthropic_upstream.hpp, through
// prepare_attempt): the attempt's body is the Messages request, its path /v1/messages, its
// credential x-api-key with anthropic-version and never Authorization or OpenAI's billing headers;
// an attempt on an OpenAI upstream after it sends the chat body and the Bearer key again; a route
// or a field the Messages API cannot carry is refused before anything is sent.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "proxy/adapters/anthropic_upstream.hpp"
#include "proxy/upstream_request.hpp"
#include "routing/router.hpp"

using namespace sluice;
namespace json = boost::json;
namespace bhttp = boost::beast::http;

namespace {

routing::upstream_spec spec(std::string name, routing::upstream_dialect d) {
  routing::upstream_spec s;
  s.name = std::move(name);
  s.url = "http://127.0.0.1:1/base";
  s.dialect = d;
  s.organization = "org-gateway";
  return s;
}

struct fixture {
  routing::options o;
  std::unique_ptr<routing::router> r;
  fixture() {
    o.upstreams = {spec("claude", routing::upstream_dialect::anthropic), spec("gpt", routing::upstream_dialect::openai)};
    o.upstreams[0].default_max_tokens = 777;
    EXPECT_TRUE(o.finish({}, "OPENAI_API_KEY").has_value());
    r = std::make_unique<routing::router>(o, std::vector<std::string>{"Bearer sk-ant-gw", "Bearer sk-gw"},
                                          std::chrono::steady_clock::now());
  }
};

proxy::upstream_call chat_call(std::string body, bool pass_through = false) {
  http::request client{bhttp::verb::post, "/v1/chat/completions", 11};
  client.set(bhttp::field::authorization, "Bearer sk-client");
  client.set("openai-organization", "org-client");
  client.body() = std::move(body);
  return proxy::make_upstream_call(client, "req-1", true, pass_through, true);
}

const std::string chat_body =
    R"({"model":"claude-x", "messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}],
        "stream":true})";

}  // namespace

TEST(AnthropicUpstream, AnAttemptSendsTheMessagesRequestWithXApiKey) {
  fixture f;
  auto call = chat_call(chat_body);
  ASSERT_FALSE(proxy::prepare_attempt(call, f.r->at(0), "/v1/chat/completions", "m", routing::usage_mode::auto_));
  EXPECT_EQ(call.req.target(), "/base/v1/messages");
  EXPECT_EQ(call.req["x-api-key"], "sk-ant-gw");
  EXPECT_EQ(call.req["anthropic-version"], "2023-06-01");
  EXPECT_EQ(call.req.find(bhttp::field::authorization), call.req.end());
  EXPECT_EQ(call.req.find("openai-organization"), call.req.end());
  const auto sent = json::parse(call.req.body()).as_object();
  EXPECT_EQ(sent.at("system"), json::value("Be brief."));
  EXPECT_EQ(sent.at("max_tokens"), json::value(777));
  EXPECT_EQ(sent.at("stream"), json::value(true));
  ASSERT_EQ(sent.at("messages").as_array().size(), 1u);
}

TEST(AnthropicUpstream, AnAttemptOnAnOpenAIUpstreamAfterItSendsTheChatBodyAgain) {
  fixture f;
  auto call = chat_call(chat_body);
  ASSERT_FALSE(proxy::prepare_attempt(call, f.r->at(0), "/v1/chat/completions", "m", routing::usage_mode::never));
  ASSERT_FALSE(proxy::prepare_attempt(call, f.r->at(1), "/v1/chat/completions", "m", routing::usage_mode::never));
  EXPECT_EQ(call.req.target(), "/base/v1/chat/completions");
  EXPECT_EQ(call.req.body(), chat_body);
  EXPECT_EQ(call.req[bhttp::field::authorization], "Bearer sk-gw");
  EXPECT_EQ(call.req["openai-organization"], "org-gateway");
  EXPECT_EQ(call.req.find("x-api-key"), call.req.end());
  EXPECT_EQ(call.req.find("anthropic-version"), call.req.end());
  // ...and back again: the same translation.
  ASSERT_FALSE(proxy::prepare_attempt(call, f.r->at(0), "/v1/chat/completions", "m", routing::usage_mode::never));
  EXPECT_EQ(json::parse(call.req.body()).as_object().at("max_tokens"), json::value(777));
}

TEST(AnthropicUpstream, UsageIsReportedWhenTheClientAskedOrTheGatewayInjected) {
  fixture f;
  auto asked = chat_call(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,
                             "stream_options":{"include_usage":true}})");
  ASSERT_FALSE(proxy::prepare_attempt(asked, f.r->at(0), "/v1/chat/completions", "m", routing::usage_mode::never));
  EXPECT_TRUE(asked.client_asked_usage);
  EXPECT_FALSE(asked.usage_injected);
  auto injected = chat_call(chat_body);
  ASSERT_FALSE(proxy::prepare_attempt(injected, f.r->at(0), "/v1/chat/completions", "m", routing::usage_mode::always));
  EXPECT_FALSE(injected.client_asked_usage);
  EXPECT_TRUE(injected.usage_injected);
  EXPECT_EQ(json::parse(injected.req.body()).as_object().if_contains("stream_options"), nullptr);
}

TEST(AnthropicUpstream, APassThroughClientsKeyGoesAsXApiKey) {
  routing::options o;
  o.upstreams = {spec("claude", routing::upstream_dialect::anthropic)};
  ASSERT_TRUE(o.finish({}, "OPENAI_API_KEY").has_value());
  routing::router r(o, {""}, std::chrono::steady_clock::now());
  auto call = chat_call(chat_body, true);
  ASSERT_FALSE(proxy::prepare_attempt(call, r.at(0), "/v1/chat/completions", "m", routing::usage_mode::never));
  EXPECT_EQ(call.req["x-api-key"], "sk-client");
  EXPECT_EQ(call.req.find(bhttp::field::authorization), call.req.end());
  EXPECT_EQ(call.req.find("openai-organization"), call.req.end());
}

TEST(AnthropicUpstream, AResponsesRequestIsTranslatedToo) {
  fixture f;
  auto call = chat_call(R"({"model":"claude-x","instructions":"Be brief.","input":"hi","max_output_tokens":50,"stream":true})");
  ASSERT_FALSE(proxy::prepare_attempt(call, f.r->at(0), "/v1/responses", "m", routing::usage_mode::never));
  EXPECT_EQ(call.req.target(), "/base/v1/messages");
  const auto sent = json::parse(call.req.body()).as_object();
  EXPECT_EQ(sent.at("system"), json::value("Be brief."));
  EXPECT_EQ(sent.at("max_tokens"), json::value(50));
  EXPECT_EQ(sent.at("messages").as_array().at(0).at("role"), json::value("user"));
  auto stateful = chat_call(R"({"model":"claude-x","input":"more","previous_response_id":"resp_1"})");
  auto e = proxy::prepare_attempt(stateful, f.r->at(0), "/v1/responses", "m", routing::usage_mode::never);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "previous_response_id");
}

TEST(AnthropicUpstream, ARouteOrAFieldTheMessagesAPICannotCarryIsRefused) {
  fixture f;
  auto embeddings = chat_call(R"({"model":"m","input":"x"})");
  auto e = proxy::prepare_attempt(embeddings, f.r->at(0), "/v1/embeddings", "m", routing::usage_mode::never);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, errc::not_found);
  // count_tokens: the Messages API's own route, only an Anthropic upstream has it.
  auto count = chat_call(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})");
  e = proxy::prepare_attempt(count, f.r->at(1), "/v1/messages/count_tokens", "m", routing::usage_mode::never);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, errc::not_found);
  ASSERT_FALSE(proxy::prepare_attempt(count, f.r->at(0), "/v1/messages/count_tokens", "m", routing::usage_mode::never));
  EXPECT_EQ(count.req.target(), "/base/v1/messages/count_tokens");
  EXPECT_EQ(count.req["x-api-key"], "sk-ant-gw");
  EXPECT_EQ(count.req.body(), R"({"model":"m","messages":[{"role":"user","content":"hi"}]})");
  auto n2 = chat_call(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"n":2})");
  e = proxy::prepare_attempt(n2, f.r->at(0), "/v1/chat/completions", "m", routing::usage_mode::never);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, errc::bad_request);
  EXPECT_EQ(e->param, "n");
}

TEST(AnthropicUpstream, TheDialectIsAnUpstreamsConfigKey) {
  auto ups = routing::parse_upstreams_yaml("- url: http://a\n  dialect: anthropic\n  anthropic-version: 2024-01-01\n"
                                           "  default-max-tokens: 99\n- url: http://b\n");
  ASSERT_TRUE(ups);
  EXPECT_EQ((*ups)[0].dialect, routing::upstream_dialect::anthropic);
  EXPECT_EQ((*ups)[0].anthropic_version, "2024-01-01");
  EXPECT_EQ((*ups)[0].default_max_tokens, 99u);
  EXPECT_EQ((*ups)[1].dialect, routing::upstream_dialect::openai);
  EXPECT_FALSE(routing::parse_upstreams_yaml("- url: http://a\n  dialect: gemini\n"));
  routing::options o;
  o.upstreams = {spec("claude", routing::upstream_dialect::anthropic)};
  o.upstreams[0].default_max_tokens = 0;
  EXPECT_FALSE(o.finish({}, "K"));
}
