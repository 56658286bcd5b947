// The gateway's credentials never reach a client, and a client cannot choose who is billed:
//  - an upstream that refuses the gateway's own key (401/403) gives the client the gateway's 502
//    (upstream_auth_failed), never the upstream's body, and counts against the upstream's circuit;
//  - upstream error bodies and streamed error events are scrubbed of every piece of the key (in
//    full, or masked the way OpenAI quotes it);
//  - OpenAI-Organization / OpenAI-Project come from the upstream's config with the gateway's key,
//    from the client only with the client's own key; the forwarded-header allow-list holds;
//  - with a keys file, every route but the probes needs a client key (GET /v1/models too).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <boost/json/parse.hpp>

#include "boxes.hpp"
#include "recording_upstream.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;
using test::bhttp::verb;
using test::recording_upstream;

namespace {

constexpr const char* kKey = "sk-proj-PLANTED0key0abcdef123456wxyz";

// No piece of the gateway's key (6 bytes or more) in `text`.
void expect_no_key_piece(const std::string& text, const std::string& where) {
  const std::string key = kKey;
  for (std::size_t i = 0; i + 6 <= key.size(); ++i)
    ASSERT_EQ(text.find(key.substr(i, 6)), std::string::npos) << where << " leaks '" << key.substr(i, 6) << "': " << text;
}

std::string all_of(const test::bhttp::response<test::bhttp::string_body>& r) {
  std::string out;
  for (const auto& f : r) out += std::string(f.name_string()) + ": " + std::string(f.value()) + "\n";
  return out + r.body();
}

app::serve_options options_for(const std::string& url) {
  app::serve_options o;
  o.http.listen = "127.0.0.1:0";
  o.http.threads = 1;
  routing::upstream_spec s;
  s.name = "up";
  s.url = url;
  s.organization = "org-gateway";
  s.project = "proj-gateway";
  o.routing.upstreams.push_back(s);
  o.routing.max_attempts = 1;
  o.log.level = "warn";
  return o;
}

// What OpenAI answers a bad key with, plus an upstream that quotes the header it got.
std::string quoting_error(const std::string& authorization) {
  const std::string key = std::string(kKey);
  const std::string masked = key.substr(0, 8) + "****" + key.substr(key.size() - 4);
  return R"({"error":{"message":"Incorrect API key provided: )" + masked + R"(. You sent: )" + authorization +
         R"(","type":"invalid_request_error","param":null,"code":"invalid_api_key"}})";
}

}  // namespace

TEST(Credentials, AnUpstreamRefusingTheGatewaysKeyIsTheGatewaysOwn502) {
  for (int status : {401, 403}) {
    recording_upstream up([status](const recording_upstream::seen& r) {
      return recording_upstream::response(status, quoting_error(r.header("authorization")));
    });
    auto o = options_for(up.url());
    o.routing.circuit_failures = 3;
    test::gateway_box g(o, kKey);
    for (int i = 0; i < 3; ++i) {
      auto r = test::post_chat(g.port, false);
      EXPECT_EQ(r.result_int(), 502u) << r.body();
      EXPECT_NE(r.body().find("\"code\":\"upstream_auth_failed\""), std::string::npos) << r.body();
      expect_no_key_piece(all_of(r), "the refusal");
    }
    ASSERT_EQ(up.requests().size(), 3u);
    EXPECT_EQ(up.requests()[0].header("authorization"), std::string("Bearer ") + kKey);
    // The upstream's fault: its circuit is open now, and the next request is not sent to it.
    auto r = test::post_chat(g.port, false);
    EXPECT_EQ(r.result_int(), 503u) << r.body();
    EXPECT_EQ(up.requests().size(), 3u);
  }
}

TEST(Credentials, WithTheClientsOwnKeyAnUpstream401IsTheClients) {
  recording_upstream up([](const recording_upstream::seen& r) {
    return recording_upstream::response(401, quoting_error(r.header("authorization")));
  });
  test::gateway_box g(options_for(up.url()), "");  // no gateway key: the client's is passed on
  auto r = test::post_chat(g.port, false, {{"Authorization", "Bearer sk-the-clients-own"}});
  EXPECT_EQ(r.result_int(), 401u) << r.body();
  EXPECT_NE(r.body().find("invalid_api_key"), std::string::npos);
}

TEST(Credentials, UpstreamErrorBodiesAreScrubbedOfTheKey) {
  recording_upstream up([](const recording_upstream::seen& r) {
    return recording_upstream::response(400, quoting_error(r.header("authorization")));
  });
  test::gateway_box g(options_for(up.url()), kKey);
  auto r = test::post_chat(g.port, false);
  EXPECT_EQ(r.result_int(), 400u);
  expect_no_key_piece(all_of(r), "a relayed 400");
  // Still the upstream's error, still JSON.
  auto v = boost::json::parse(r.body()).as_object();
  EXPECT_EQ(v.at("error").at("code").as_string(), "invalid_api_key");
  // Each run of the key's bytes is one fixed mask, whatever the key's length.
  const std::string message(v.at("error").at("message").as_string());
  EXPECT_NE(message.find("Incorrect API key provided: [redacted]****"), std::string::npos) << r.body();
  EXPECT_TRUE(message.ends_with("You sent: Bearer [redacted]")) << "no star per byte of the key: " << r.body();
}

TEST(Credentials, StreamedErrorEventsAreScrubbedOfTheKey) {
  recording_upstream up([](const recording_upstream::seen& r) {
    const std::string events =
        R"(data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]})"
        "\n\n"
        "data: " + quoting_error(r.header("authorization")) + "\n\n";
    return recording_upstream::response(200, events, "", "text/event-stream");
  });
  test::gateway_box g(options_for(up.url()), kKey);
  auto r = test::post_chat(g.port, true);
  EXPECT_EQ(r.result_int(), 200u);
  EXPECT_NE(r.body().find("\"content\":\"hi\""), std::string::npos) << r.body();
  EXPECT_NE(r.body().find("invalid_api_key"), std::string::npos) << "the upstream's error event is forwarded";
  expect_no_key_piece(all_of(r), "a streamed error event");
  EXPECT_NE(r.body().find("You sent: Bearer [redacted]\""), std::string::npos) << "one fixed mask, not one star a byte: " << r.body();
}

TEST(Credentials, WhoIsBilledGoesWithWhoseKey) {
  recording_upstream up([](const recording_upstream::seen&) {
    return recording_upstream::response(200, R"({"id":"x","object":"chat.completion","choices":[]})",
                                        "openai-organization: org-gateway\r\nopenai-processing-ms: 7\r\n");
  });
  const std::vector<std::pair<std::string, std::string>> client_headers = {
      {"OpenAI-Organization", "org-evil"}, {"OpenAI-Project", "proj-evil"}, {"OpenAI-Beta", "assistants=v2"},
      {"x-api-key", "sk-client-secret"},   {"x-custom", "kept"},            {"x-sluice-schema-events", "1"},
      {"x-forwarded-for", "10.0.0.1"},    {"Authorization", "Bearer sk-client-own"}};
  {
    test::gateway_box g(options_for(up.url()), kKey);
    auto r = test::post_chat(g.port, false, client_headers);
    EXPECT_EQ(r.result_int(), 200u) << r.body();
    EXPECT_TRUE(r["openai-organization"].empty()) << "the gateway's organization stays the gateway's";
    EXPECT_EQ(r["openai-processing-ms"], "7");
    const auto seen = up.requests().back();
    EXPECT_EQ(seen.header("authorization"), std::string("Bearer ") + kKey);
    EXPECT_EQ(seen.header("openai-organization"), "org-gateway");
    EXPECT_EQ(seen.header("openai-project"), "proj-gateway");
    EXPECT_EQ(seen.header("openai-beta"), "assistants=v2");
    EXPECT_EQ(seen.header("x-custom"), "kept");
    EXPECT_EQ(seen.header("x-api-key"), "");
    EXPECT_EQ(seen.header("x-sluice-schema-events"), "");
    EXPECT_EQ(seen.header("x-forwarded-for"), "");
  }
  {
    // No gateway key: the client's own key goes on, and its organization and project with it.
    test::gateway_box g(options_for(up.url()), "");
    auto r = test::post_chat(g.port, false, client_headers);
    EXPECT_EQ(r.result_int(), 200u) << r.body();
    const auto seen = up.requests().back();
    EXPECT_EQ(seen.header("authorization"), "Bearer sk-client-own");
    EXPECT_EQ(seen.header("openai-organization"), "org-evil");
    EXPECT_EQ(seen.header("openai-project"), "proj-evil");
  }
}

TEST(Credentials, WithAKeysFileEveryRouteButTheProbesNeedsAClientKey) {
  recording_upstream up([](const recording_upstream::seen&) {
    return recording_upstream::response(200, R"({"object":"list","data":[{"id":"m","object":"model"}]})");
  });
  char path[] = "/tmp/sluice-cred-keys-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string keys = "sk-client-good 0 0 good\n";
  ASSERT_EQ(::write(fd, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  ::close(fd);
  auto o = options_for(up.url());
  o.admission.keys_file = path;
  test::gateway_box g(o, kKey);
  EXPECT_EQ(test::call(g.port, verb::get, "/v1/models").result_int(), 401u);
  EXPECT_EQ(test::call(g.port, verb::get, "/v1/models", "", {{"Authorization", "Bearer sk-wrong"}}).result_int(), 401u);
  EXPECT_TRUE(up.requests().empty()) << "nothing went upstream without a key";
  auto ok = test::call(g.port, verb::get, "/v1/models", "", {{"Authorization", "Bearer sk-client-good"}});
  EXPECT_EQ(ok.result_int(), 200u) << ok.body();
  ASSERT_EQ(up.requests().size(), 1u);
  EXPECT_EQ(up.requests()[0].header("authorization"), std::string("Bearer ") + kKey);
  for (const char* probe : {"/healthz", "/readyz", "/metrics"})
    EXPECT_EQ(test::call(g.port, verb::get, probe).result_int(), 200u) << probe;
  EXPECT_EQ(test::post_chat(g.port, false).result_int(), 401u);
  std::remove(path);
}
