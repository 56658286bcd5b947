// An Azure OpenAI upstream's address and credential (proxy/adapters/azure_upstream.hpp, through
// prepare_attempt): deployment paths for the routes that name a model, the api-version query of the
// upstream's URL on every request, the key as `api-key` and never as Authorization; a model no
// Azure path can carry is refused before anything is sent. Any other upstream's target is its base
// and the route, with the URL's query when it has one.
#include <gtest/gtest.h>

#include "proxy/adapters/azure_upstream.hpp"
#include "proxy/upstream_request.hpp"
#include "routing/router.hpp"

using namespace sluice;
namespace bhttp = boost::beast::http;

namespace {

struct azure_fixture {
  routing::options o;
  std::unique_ptr<routing::router> r;
  explicit azure_fixture(std::string url = "https://res.openai.azure.com/openai?api-version=2024-10-21") {
    auto ups = routing::parse_upstreams_yaml("- name: az\n  url: " + url +
                                             "\n  dialect: azure\n  deployments: {gpt-4o: prod-4o}\n"
                                             "- name: plain\n  url: http://127.0.0.1:1/base?tenant=7\n");
    EXPECT_TRUE(ups) << ups.err().message;
    o.upstreams = std::move(*ups);
    EXPECT_TRUE(o.finish({}, "OPENAI_API_KEY").has_value());
    r = std::make_unique<routing::router>(o, std::vector<std::string>{"Bearer az-key", "Bearer sk-plain"},
                                          std::chrono::steady_clock::now());
  }
};

proxy::upstream_call call_for(std::string_view target) {
  http::request client{bhttp::verb::post, target, 11};
  client.body() = R"({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]})";
  return proxy::make_upstream_call(client, "req-1", false, false, false);
}

}  // namespace

TEST(AzureUpstream, ARouteNamingAModelGoesToItsDeploymentWithTheApiVersion) {
  azure_fixture f;
  const auto& az = f.r->at(0);
  EXPECT_EQ(*proxy::upstream_target(az, "/v1/chat/completions", "gpt-4o"),
            "/openai/deployments/prod-4o/chat/completions?api-version=2024-10-21");
  EXPECT_EQ(*proxy::upstream_target(az, "/v1/embeddings", "text-embedding-3-small"),
            "/openai/deployments/text-embedding-3-small/embeddings?api-version=2024-10-21")
      << "a model not listed is its own deployment";
  EXPECT_EQ(*proxy::upstream_target(az, "/v1/models", ""), "/openai/models?api-version=2024-10-21");
  auto bad = proxy::upstream_target(az, "/v1/chat/completions", "meta-llama/Llama-3-8B");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.err().code, errc::not_found);
  EXPECT_EQ(bad.err().param, "model");
}

TEST(AzureUpstream, TheKeyGoesAsApiKeyAndAPlainUpstreamKeepsBearerAndItsQuery) {
  azure_fixture f;
  auto call = call_for("/v1/chat/completions");
  ASSERT_FALSE(proxy::prepare_attempt(call, f.r->at(0), "/v1/chat/completions", "gpt-4o", routing::usage_mode::never));
  EXPECT_EQ(call.req.target(), "/openai/deployments/prod-4o/chat/completions?api-version=2024-10-21");
  EXPECT_EQ(call.req["api-key"], "az-key");
  EXPECT_EQ(call.req.find(bhttp::field::authorization), call.req.end());
  // Failover to the plain upstream: Bearer again, no api-key, its own query.
  ASSERT_FALSE(proxy::prepare_attempt(call, f.r->at(1), "/v1/chat/completions", "gpt-4o", routing::usage_mode::never));
  EXPECT_EQ(call.req.target(), "/base/v1/chat/completions?tenant=7");
  EXPECT_EQ(call.req[bhttp::field::authorization], "Bearer sk-plain");
  EXPECT_EQ(call.req.find("api-key"), call.req.end());
}

TEST(AzureUpstream, ConfigChecksWhatAnAzureUpstreamNeeds) {
  EXPECT_FALSE(routing::parse_upstreams_yaml("- url: http://a\n  dialect: azure\n  deployments: [x]\n"));
  EXPECT_FALSE(routing::parse_upstreams_yaml("- url: http://a\n  dialect: azure\n  deployments: {m: 'has space'}\n"));
  EXPECT_FALSE(routing::parse_upstreams_yaml("- url: http://a\n  key-header: bearer\n"));
  auto bad_pairing = [](const std::string& yaml) {
    routing::options o;
    o.upstreams = *routing::parse_upstreams_yaml(yaml);
    return o.finish({}, "K");
  };
  EXPECT_FALSE(bad_pairing("- url: http://a\n  deployments: {m: d}\n")) << "deployments need dialect: azure";
  EXPECT_FALSE(bad_pairing("- url: http://a\n  dialect: anthropic\n  key-header: api-key\n"));
  EXPECT_FALSE(bad_pairing("- url: http://a#frag\n"));
  EXPECT_TRUE(bad_pairing("- url: http://a/openai?api-version=1\n  dialect: azure\n"));
  auto v1 = routing::parse_upstreams_yaml("- url: https://res.openai.azure.com/openai\n  key-header: api-key\n");
  ASSERT_TRUE(v1);
  EXPECT_EQ((*v1)[0].key_style(), routing::key_header::api_key) << "Azure's v1 API: OpenAI's paths, api-key";
}
