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

// --- n > 1: one choice per index ---------------------------------------------------------------

TEST(SimContent, OneChoiceIsTheSingleChoiceAnswer) {
  // n = 1 (given or not) renders exactly what the simulator always rendered.
  auto one = parse(sim::api::chat, chat_body);
  std::string with_n = chat_body;
  with_n.insert(1, R"("n":1,)");
  auto req_n = parse(sim::api::chat, with_n);
  EXPECT_EQ(req_n.n, 1u);
  auto a = events(sim::render_stream(one, 4, 3));
  ASSERT_EQ(a.size(), 1u + 4u + 1u + 1u);
  for (std::size_t i = 0; i + 1 < a.size(); ++i)
    EXPECT_EQ(json::parse(a[i]).at("choices").at(0).at("index").as_int64(), 0);
}

TEST(SimContent, ChatStreamInterleavesChoicesWithTheirIndex) {
  auto req = parse(sim::api::chat,
                   R"({"model":"m","n":3,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]})");
  ASSERT_EQ(req.n, 3u);
  auto ev = events(sim::render_stream(req, 2, 4));
  // 3 role chunks, 2 steps x 3 tokens, 3 finish chunks, usage, [DONE]
  ASSERT_EQ(ev.size(), 3u + 6u + 3u + 1u + 1u);
  EXPECT_EQ(ev.back(), "[DONE]");
  std::string text[3];
  std::string last_id;
  for (std::size_t i = 0; i < 12; ++i) {
    auto v = json::parse(ev[i]).as_object();
    if (!last_id.empty()) {
      EXPECT_EQ(v.at("id").as_string(), last_id) << "one completion id for every choice";
    }
    last_id = v.at("id").as_string();
    auto& ch = v.at("choices").as_array();
    ASSERT_EQ(ch.size(), 1u);
    auto idx = ch[0].at("index").as_int64();
    EXPECT_EQ(idx, static_cast<std::int64_t>(i % 3)) << "choices take turns: " << ev[i];
    auto& delta = ch[0].at("delta").as_object();
    if (auto* c = delta.if_contains("content")) text[idx] += c->as_string();
    if (i >= 9) {
      EXPECT_EQ(ch[0].at("finish_reason").as_string(), "stop");
    } else {
      EXPECT_TRUE(ch[0].at("finish_reason").is_null());
    }
  }
  for (auto& t : text) EXPECT_EQ(t.size(), 8u);
  EXPECT_NE(text[0], text[1]) << "each choice draws its own words";
  EXPECT_NE(text[1], text[2]);
  auto usage = json::parse(ev[12]).at("usage").as_object();
  EXPECT_EQ(usage.at("completion_tokens").as_int64(), 6) << "usage counts every choice";
}

TEST(SimContent, ChoicesWithTheirOwnContentFinishWhenTheirTokensRunOut) {
  auto req = parse(sim::api::chat, R"({"model":"m","n":3,"stream":true,"messages":[{"role":"user","content":"x"}]})");
  std::vector<std::string> texts{R"({"a":1})", R"({"a":"longer text"})"};  // choice 2 repeats the last
  sim::choice_set set(req, 16, 4, texts.front(), texts);
  ASSERT_EQ(set.size(), 3u);
  EXPECT_EQ(set.steps(), 5u);  // 17 bytes / 4
  std::string out;
  set.append_role_chunks(out);
  for (std::uint64_t i = 0; i <= set.steps(); ++i) set.append_step(out, i);
  std::string text[3];
  std::vector<int> finish_order;
  for (const auto& e : events(out)) {
    auto ch = json::parse(e).at("choices").at(0).as_object();
    auto idx = ch.at("index").as_int64();
    if (auto* c = ch.at("delta").as_object().if_contains("content")) text[idx] += c->as_string();
    if (ch.at("finish_reason").is_string()) finish_order.push_back(static_cast<int>(idx));
  }
  EXPECT_EQ(text[0], texts[0]);
  EXPECT_EQ(text[1], texts[1]);
  EXPECT_EQ(text[2], texts[1]);
  EXPECT_EQ(finish_order, (std::vector<int>{0, 1, 2})) << "choice 0 (2 tokens) finishes first";

  // The whole answer: one choice per index, usage over all of them.
  sim::choice_set whole(req, 16, 4, texts.front(), texts);
  auto body = json::parse(whole.body()).as_object();
  auto& choices = body.at("choices").as_array();
  ASSERT_EQ(choices.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(choices[i].at("index").as_int64(), static_cast<std::int64_t>(i));
    EXPECT_EQ(choices[i].at("message").at("content").as_string(), texts[std::min<std::size_t>(i, 1)]);
  }
  EXPECT_EQ(body.at("usage").at("completion_tokens").as_int64(), 2 + 5 + 5);
}

TEST(SimContent, LegacyCompletionChoices) {
  auto req = parse(sim::api::completion, R"({"model":"m","prompt":"p","n":2})");
  sim::choice_set set(req, 3, 4);
  auto body = json::parse(set.body()).as_object();
  auto& choices = body.at("choices").as_array();
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[1].at("index").as_int64(), 1);
  EXPECT_EQ(choices[1].at("text").as_string().size(), 12u);
  EXPECT_NE(choices[0].at("text"), choices[1].at("text"));
  auto stream_req = parse(sim::api::completion, R"({"model":"m","prompt":"p","n":2,"stream":true})");
  auto ev = events(sim::render_stream(stream_req, 1, 4));
  ASSERT_EQ(ev.size(), 2u + 2u + 1u);  // no role chunks
  EXPECT_EQ(json::parse(ev[1]).at("choices").at(0).at("index").as_int64(), 1);
}

TEST(SimContent, NIsCheckedAndTheResponsesApiHasNone) {
  for (const char* body : {R"({"model":"m","n":0,"messages":[{"role":"user"}]})",
                           R"({"model":"m","n":129,"messages":[{"role":"user"}]})",
                           R"({"model":"m","n":"2","messages":[{"role":"user"}]})"}) {
    auto r = sim::parse_completion(sim::api::chat, body, 1);
    ASSERT_FALSE(r.has_value()) << body;
    EXPECT_EQ(r.err().param, "n");
  }
  auto resp = parse(sim::api::responses, R"({"model":"m","input":"x","n":3})");
  EXPECT_EQ(resp.n, 1u);
  sim::choice_set set(resp, 2, 4);
  EXPECT_EQ(set.size(), 1u);
}
