#include "sim/content.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sse/parser.hpp"

using namespace sluice;
namespace json = boost::json;

namespace {

const std::string chat_body =
    R"({"model":"sim-1","stream":true,"messages":[{"role":"user","content":"hello there, simulator"}]})";

sim::completion_request parse(sim::api kind, const std::string& body, std::uint64_t seed = 7) {
  auto r = sim::parse_completion(kind, body, seed);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.err().message);
  return *r;
}

// Splits a rendered stream into its SSE data payloads with the project's own parser.
std::vector<std::string> events(const std::string& stream) {
  std::vector<std::string> out;
  sse::parser p;
  auto r = p.feed(stream, [&](const sse::event_view& e) { out.emplace_back(e.data); });
  EXPECT_TRUE(r.has_value());
  EXPECT_EQ(*r, stream.size()) << "stream must end on an event boundary";
  return out;
}

}  // namespace

TEST(SimContent, SameSeedAndBodyGiveIdenticalBytes) {
  auto a = sim::render_stream(parse(sim::api::chat, chat_body), 16, 4);
  auto b = sim::render_stream(parse(sim::api::chat, chat_body), 16, 4);
  EXPECT_EQ(a, b);
  sim::generator g1(parse(sim::api::chat, chat_body), 5, 3), g2(parse(sim::api::chat, chat_body), 5, 3);
  EXPECT_EQ(g1.body(), g2.body());
}

TEST(SimContent, DifferentSeedOrBodyGiveDifferentContent) {
  auto base = sim::render_stream(parse(sim::api::chat, chat_body, 7), 16, 4);
  auto other_seed = sim::render_stream(parse(sim::api::chat, chat_body, 8), 16, 4);
  std::string body2 = chat_body;
  body2.replace(body2.find("hello"), 5, "HELLO");
  auto other_body = sim::render_stream(parse(sim::api::chat, body2, 7), 16, 4);
  EXPECT_NE(base, other_seed);
  EXPECT_NE(base, other_body);
  sim::generator a(parse(sim::api::chat, chat_body, 7), 16, 4), b(parse(sim::api::chat, chat_body, 8), 16, 4);
  EXPECT_NE(a.id(), b.id());
}

TEST(SimContent, ChatChunkShape) {
  auto ev = events(sim::render_stream(parse(sim::api::chat, chat_body), 5, 6));
  ASSERT_EQ(ev.size(), 1u + 5u + 1u + 1u);  // role, 5 tokens, finish, [DONE]
  EXPECT_EQ(ev.back(), "[DONE]");
  std::string id;
  for (std::size_t i = 0; i + 1 < ev.size(); ++i) {
    auto v = json::parse(ev[i]).as_object();
    EXPECT_EQ(v.at("object").as_string(), "chat.completion.chunk");
    EXPECT_EQ(v.at("model").as_string(), "sim-1");
    EXPECT_TRUE(v.at("created").is_number());
    if (i == 0) id = std::string(v.at("id").as_string());
    EXPECT_EQ(v.at("id").as_string(), id) << "one id per stream";
    EXPECT_FALSE(v.contains("usage")) << "usage only appears with include_usage";
    auto& choices = v.at("choices").as_array();
    ASSERT_EQ(choices.size(), 1u);
    auto& c = choices[0].as_object();
    EXPECT_EQ(c.at("index").as_int64(), 0);
    auto& delta = c.at("delta").as_object();
    if (i == 0) {
      EXPECT_EQ(delta.at("role").as_string(), "assistant");
      EXPECT_EQ(delta.at("content").as_string(), "");
      EXPECT_TRUE(c.at("finish_reason").is_null());
    } else if (i + 2 < ev.size()) {
      EXPECT_FALSE(delta.contains("role"));
      EXPECT_EQ(delta.at("content").as_string().size(), 6u) << "token-size bytes per token";
      EXPECT_TRUE(c.at("finish_reason").is_null());
    } else {
      EXPECT_TRUE(delta.empty());
      EXPECT_EQ(c.at("finish_reason").as_string(), "stop");
    }
  }
  EXPECT_EQ(id.rfind("chatcmpl-", 0), 0u);
}

TEST(SimContent, UsageChunkWhenIncludeUsage) {
  std::string body =
      R"({"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"12345678"}]})";
  auto req = parse(sim::api::chat, body);
  auto ev = events(sim::render_stream(req, 3, 4));
  ASSERT_EQ(ev.size(), 1u + 3u + 1u + 1u + 1u);
  // Every chunk but the usage chunk carries usage: null, as OpenAI sends it.
  for (std::size_t i = 0; i < 5; ++i) EXPECT_TRUE(json::parse(ev[i]).as_object().at("usage").is_null());
  auto usage_chunk = json::parse(ev[5]).as_object();
  EXPECT_TRUE(usage_chunk.at("choices").as_array().empty());
  auto& u = usage_chunk.at("usage").as_object();
  EXPECT_EQ(u.at("completion_tokens").as_int64(), 3);
  EXPECT_EQ(static_cast<std::uint64_t>(u.at("prompt_tokens").as_int64()), req.prompt_tokens);
  EXPECT_EQ(u.at("total_tokens").as_int64(), u.at("prompt_tokens").as_int64() + 3);
  EXPECT_EQ(ev[6], "[DONE]");
}

TEST(SimContent, MaxTokensCapsAndReportsLength) {
  for (std::string key : {"max_tokens", "max_completion_tokens"}) {
    std::string body = R"({"model":"m","stream":true,")" + key + R"(":3,"messages":[{"role":"user","content":"x"}]})";
    auto req = parse(sim::api::chat, body);
    ASSERT_EQ(req.max_tokens, 3u);
    sim::generator g(req, 10, 4);
    EXPECT_EQ(g.completion_tokens(), 3u);
    EXPECT_EQ(g.finish_reason(), "length");
    auto ev = events(sim::render_stream(req, 10, 4));
    ASSERT_EQ(ev.size(), 1u + 3u + 1u + 1u);
    EXPECT_EQ(json::parse(ev[4]).as_object().at("choices").as_array()[0].as_object().at("finish_reason").as_string(),
              "length");
  }
  // A cap above the configured count changes nothing.
  auto req = parse(sim::api::chat, R"({"model":"m","max_tokens":50,"messages":[{"role":"user","content":"x"}]})");
  sim::generator g(req, 10, 4);
  EXPECT_EQ(g.completion_tokens(), 10u);
  EXPECT_EQ(g.finish_reason(), "stop");
}

TEST(SimContent, NonStreamChatBody) {
  auto req = parse(sim::api::chat, R"({"model":"sim-1","messages":[{"role":"user","content":"hi"}],"max_tokens":4})");
  sim::generator g(req, 8, 5);
  auto v = json::parse(g.body()).as_object();
  EXPECT_EQ(v.at("object").as_string(), "chat.completion");
  auto& c = v.at("choices").as_array()[0].as_object();
  EXPECT_EQ(c.at("message").as_object().at("role").as_string(), "assistant");
  EXPECT_EQ(c.at("message").as_object().at("content").as_string().size(), 4u * 5u);
  EXPECT_EQ(c.at("finish_reason").as_string(), "length");
  EXPECT_EQ(v.at("usage").as_object().at("completion_tokens").as_int64(), 4);
}

TEST(SimContent, LegacyCompletionShapes) {
  auto req = parse(sim::api::completion, R"({"model":"m","prompt":"once upon a time","stream":true})");
  auto ev = events(sim::render_stream(req, 2, 4));
  ASSERT_EQ(ev.size(), 2u + 1u + 1u);  // no role chunk
  auto first = json::parse(ev[0]).as_object();
  EXPECT_EQ(first.at("object").as_string(), "text_completion");
  EXPECT_EQ(first.at("id").as_string().subview().substr(0, 5), "cmpl-");
  EXPECT_EQ(first.at("choices").as_array()[0].as_object().at("text").as_string().size(), 4u);
  EXPECT_EQ(json::parse(ev[2]).as_object().at("choices").as_array()[0].as_object().at("finish_reason").as_string(), "stop");
  sim::generator g(req, 2, 4);
  auto body = json::parse(g.body()).as_object();
  EXPECT_EQ(body.at("object").as_string(), "text_completion");
  EXPECT_EQ(body.at("choices").as_array()[0].as_object().at("text").as_string().size(), 8u);
  EXPECT_EQ(body.at("usage").as_object().at("prompt_tokens").as_int64(), 4);  // 16 bytes / 4
}

TEST(SimContent, MalformedEventIsNotJson) {
  sim::generator g(parse(sim::api::chat, chat_body), 3, 4);
  std::string out;
  g.append_malformed_event(out);
  auto ev = events(out);
  ASSERT_EQ(ev.size(), 1u);
  boost::system::error_code ec;
  (void)json::parse(ev[0], ec);
  EXPECT_TRUE(ec);
}

TEST(SimContent, ErrorBodyHasOpenAiShape) {
  auto v = json::parse(sim::error_body("nope", "invalid_request_error", "model")).as_object();
  auto& e = v.at("error").as_object();
  EXPECT_EQ(e.at("message").as_string(), "nope");
  EXPECT_EQ(e.at("type").as_string(), "invalid_request_error");
  EXPECT_EQ(e.at("param").as_string(), "model");
  EXPECT_TRUE(e.at("code").is_null());
  EXPECT_EQ(sim::error_type_for_status(503), "server_error");
  EXPECT_EQ(sim::error_type_for_status(401), "authentication_error");
}

TEST(SimContent, ModelsList) {
  auto v = json::parse(sim::models_body({"a", "b"})).as_object();
  EXPECT_EQ(v.at("object").as_string(), "list");
  ASSERT_EQ(v.at("data").as_array().size(), 2u);
  EXPECT_EQ(v.at("data").as_array()[1].as_object().at("id").as_string(), "b");
  EXPECT_EQ(v.at("data").as_array()[1].as_object().at("object").as_string(), "model");
}

TEST(SimContent, OpenAiResetFormat) {
  using namespace std::chrono_literals;
  EXPECT_EQ(sim::openai_reset_format(0s), "0s");
  EXPECT_EQ(sim::openai_reset_format(20ms), "20ms");
  EXPECT_EQ(sim::openai_reset_format(1500us), "1.5ms");
  EXPECT_EQ(sim::openai_reset_format(1s), "1s");
  EXPECT_EQ(sim::openai_reset_format(1500ms), "1.5s");
  EXPECT_EQ(sim::openai_reset_format(360s), "6m0s");
  EXPECT_EQ(sim::openai_reset_format(90s), "1m30s");
  EXPECT_EQ(sim::openai_reset_format(3600s), "1h0m0s");
  EXPECT_EQ(sim::openai_reset_format(120ms), "120ms");
  EXPECT_EQ(sim::openai_reset_format(90500ms), "1m30.5s");
  EXPECT_EQ(sim::openai_reset_format(3725s), "1h2m5s");
  EXPECT_EQ(sim::openai_reset_format(-1s), "0s");
}
