// The Messages API's two seams in the pipeline: a request adopted as chat completions, and the
// downstream that translates what the pipeline writes (messages_dialect.hpp). The translators
// themselves are tested in tests/unit/dialects; here, what the seams add: the request's target,
// credential and errors; whole answers and error bodies reshaped; a stream translated whatever
// pieces the relay writes it in, with no empty chunk (which would end the body).
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <fstream>
#include <sstream>

#include "proxy/adapters/messages_dialect.hpp"

namespace {

using namespace sluice;
namespace json = boost::json;
namespace bhttp = boost::beast::http;

// Collects what the downstream is asked to write.
class collecting_downstream final : public http::downstream {
 public:
  std::string body;
  std::vector<std::string> chunks;
  bool finished = false;
  unsigned status = 0;

  task<result<void>> write(http::response& res) override {
    status = res.result_int();
    body = res.body();
    co_return ok;
  }
  task<result<void>> write_head(bhttp::response<bhttp::empty_body>& head) override {
    status = head.result_int();
    co_return ok;
  }
  void hold_head(bhttp::response<bhttp::empty_body>& head) override { status = head.result_int(); }
  bool holds_head() const noexcept override { return false; }
  task<result<void>> flush_head() override { co_return ok; }
  task<result<void>> write_chunk(std::string_view data) override {
    EXPECT_FALSE(data.empty()) << "an empty chunk ends a chunked body";
    EXPECT_FALSE(finished);
    chunks.emplace_back(data);
    co_return ok;
  }
  task<result<void>> finish_chunks() override {
    finished = true;
    co_return ok;
  }
  task<result<void>> write_last_chunk(std::string_view data) override {
    if (!data.empty()) chunks.emplace_back(data);
    finished = true;
    co_return ok;
  }
  [[nodiscard]] peer_watch watch_peer(http::peer_listener&) override { return peer_watch(*this); }
  bool peer_gone() const noexcept override { return false; }
  void close() noexcept override {}
  bool stalled() const noexcept override { return false; }
  std::uint64_t bytes_written() const noexcept override { return 0; }
  std::string streamed() const {
    std::string all;
    for (const auto& c : chunks) all += c;
    return all;
  }

 protected:
  void end_watch() noexcept override {}
};

template <class F>
void run(F&& f) {
  net::io_context io;
  net::co_spawn(io, std::forward<F>(f)(), [](std::exception_ptr e) { EXPECT_FALSE(e); });
  io.run();
}

http::request messages_request(std::string body, std::string target = "/v1/messages") {
  http::request req{bhttp::verb::post, target, 11};
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

const std::string ask = R"({ "model" : "claude-x", "max_tokens" : 32, "stream" : true,
  "messages" : [ { "role" : "user", "content" : "hi" } ] })";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(MessagesRequest, BecomesAChatCompletionsRequestWithTheClientsKeyAsBearer) {
  auto req = messages_request(ask);
  req.set("x-api-key", "sk-client-1");
  ASSERT_FALSE(proxy::adopt_messages_request(req));
  EXPECT_EQ(req.target(), "/v1/chat/completions");
  EXPECT_EQ(req[bhttp::field::authorization], "Bearer sk-client-1");
  EXPECT_EQ(req.find("x-api-key"), req.end());
  EXPECT_EQ(req[bhttp::field::content_length], std::to_string(req.body().size()));
  const auto chat = json::parse(req.body()).as_object();
  EXPECT_EQ(chat.at("model"), "claude-x");
  EXPECT_EQ(chat.at("stream"), true);
  EXPECT_EQ(chat.at("stream_options").at("include_usage"), true);
  EXPECT_EQ(chat.at("messages").at(0).at("content"), "hi");
}

TEST(MessagesRequest, AnAuthorizationHeaderWinsAndXApiKeyNeverGoesOn) {
  auto req = messages_request(ask);
  req.set(bhttp::field::authorization, "Bearer sk-a");
  req.set("x-api-key", "sk-b");
  ASSERT_FALSE(proxy::adopt_messages_request(req));
  EXPECT_EQ(req[bhttp::field::authorization], "Bearer sk-a");
  EXPECT_EQ(req.find("x-api-key"), req.end());
}

TEST(MessagesRequest, WrongPathMethodOrBodyIsAnErrorThatSaysSo) {
  auto batches = messages_request(ask, "/v1/messages/batches");
  auto e = proxy::adopt_messages_request(batches);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, errc::not_found);
  EXPECT_NE(e->message.find("count_tokens"), std::string::npos) << "it names what is served";
  // count_tokens is the Messages API's own request, passed on as it is (to an Anthropic upstream).
  auto count = messages_request(ask, "/v1/messages/count_tokens");
  count.set("x-api-key", "sk-c");
  ASSERT_FALSE(proxy::adopt_messages_request(count));
  EXPECT_EQ(count.target(), "/v1/messages/count_tokens");
  EXPECT_EQ(count.body(), ask);
  EXPECT_EQ(count[bhttp::field::authorization], "Bearer sk-c");

  auto get = messages_request("");
  get.method(bhttp::verb::get);
  ASSERT_TRUE(proxy::adopt_messages_request(get));
  EXPECT_EQ(proxy::adopt_messages_request(get)->code, errc::method_not_allowed);

  auto junk = messages_request("{not json");
  ASSERT_TRUE(proxy::adopt_messages_request(junk));
  EXPECT_EQ(proxy::adopt_messages_request(junk)->code, errc::bad_request);

  auto zero = messages_request(R"({"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]})");
  auto z = proxy::adopt_messages_request(zero);
  ASSERT_TRUE(z);
  EXPECT_EQ(z->code, errc::bad_request);
  EXPECT_NE(z->message.find("max_tokens"), std::string::npos);
  EXPECT_EQ(zero.target(), "/v1/messages") << "a refused request is left as it came";
}

TEST(MessagesRequest, OnlyTheMessagesPathsAreTheDialects) {
  EXPECT_TRUE(proxy::is_messages_request(messages_request("", "/v1/messages")));
  EXPECT_TRUE(proxy::is_messages_request(messages_request("", "/v1/messages?beta=true")));
  EXPECT_TRUE(proxy::is_messages_request(messages_request("", "/v1/messages/count_tokens")));
  EXPECT_FALSE(proxy::is_messages_request(messages_request("", "/v1/messagesx")));
  EXPECT_FALSE(proxy::is_messages_request(messages_request("", "/v1/chat/completions")));
}

struct downstream_fixture : ::testing::Test {
  collecting_downstream client;
  proxy::request_context ctx{client, 11};
  proxy::messages_downstream messages{client, ctx};
  downstream_fixture() {
    ctx.model = "claude-x";
    ctx.prompt_estimate = 7;
  }
  void write_whole(unsigned status, std::string body) {
    http::response res{static_cast<bhttp::status>(status), 11};
    res.body() = std::move(body);
    run([&]() -> task<void> { (void)co_await messages.write(res); });
  }
};

TEST_F(downstream_fixture, AWholeCompletionInSpacedJsonBecomesAMessage) {
  write_whole(200, R"({ "id" : "chatcmpl-1", "object" : "chat.completion", "model" : "up-model",
    "choices" : [ { "index" : 0, "finish_reason" : "stop",
                    "message" : { "role" : "assistant", "content" : "Hello" } } ],
    "usage" : { "prompt_tokens" : 5, "completion_tokens" : 1 } })");
  EXPECT_EQ(client.status, 200u);
  const auto m = json::parse(client.body).as_object();
  EXPECT_EQ(m.at("type"), "message");
  EXPECT_TRUE(m.at("id").as_string().starts_with("msg_"));
  EXPECT_EQ(m.at("id").as_string().size(), 4u + 32u);
  EXPECT_EQ(m.at("content").at(0).at("text"), "Hello");
  EXPECT_EQ(m.at("stop_reason"), "end_turn");
  EXPECT_EQ(m.at("usage").at("input_tokens"), 5);
}

TEST_F(downstream_fixture, AnOpenAIErrorKeepsItsStatusAndMessageInTheMessagesShape) {
  write_whole(429, R"({"error":{"message":"Rate limit reached for requests per minute on this key.","type":"rate_limit_error","param":null,"code":null}})");
  EXPECT_EQ(client.status, 429u);
  const auto e = json::parse(client.body).as_object();
  EXPECT_EQ(e.at("type"), "error");
  EXPECT_EQ(e.at("error").at("type"), "rate_limit_error");
  EXPECT_EQ(e.at("error").at("message"), "Rate limit reached for requests per minute on this key.");
}

TEST_F(downstream_fixture, TheGatewaysSheddingIsA529OverloadedError) {
  write_whole(503, R"({"error":{"message":"The gateway is at capacity; retry shortly.","type":"server_error","param":null,"code":"queue_full"}})");
  EXPECT_EQ(client.status, 529u);
  EXPECT_EQ(json::parse(client.body).at("error").at("type"), "overloaded_error");
}

TEST_F(downstream_fixture, AnUpstreamPageIsNotRepeatedAndAnUntranslatableAnswerIsA502) {
  write_whole(500, "<html>internal details</html>");
  EXPECT_EQ(client.body.find("internal details"), std::string::npos);
  EXPECT_EQ(json::parse(client.body).at("error").at("type"), "api_error");
  write_whole(200, R"({"object":"chat.completion","choices":[]})");
  EXPECT_EQ(client.status, 502u);
  EXPECT_EQ(json::parse(client.body).at("error").at("type"), "api_error");
}

// The corpus's upstream stream written in pieces of every size from 1 to 64 bytes: the client gets
// the same translation each time, never an empty chunk, and the body ends once.
TEST_F(downstream_fixture, AStreamIsTranslatedWhateverPiecesTheRelayWritesItIn) {
  const auto upstream = read_file(std::string(SLUICE_TEST_DATA_DIR) + "/dialects/anthropic/parallel_tools.upstream.sse");
  ASSERT_FALSE(upstream.empty());
  std::string first;
  for (std::size_t piece = 1; piece <= 64; ++piece) {
    collecting_downstream c;
    proxy::messages_downstream d{c, ctx};
    run([&]() -> task<void> {
      for (std::size_t at = 0; at < upstream.size(); at += piece)
        (void)co_await d.write_chunk(std::string_view(upstream).substr(at, piece));
      (void)co_await d.finish_chunks();
    });
    ASSERT_TRUE(c.finished);
    auto got = c.streamed();
    // The message id is the gateway's and new for each stream: compare without it.
    const auto id_at = got.find("msg_");
    ASSERT_NE(id_at, std::string::npos);
    got.replace(id_at, 4 + 32, "msg_ID");
    if (piece == 1) first = got;
    EXPECT_EQ(got, first) << "pieces of " << piece;
  }
  EXPECT_NE(first.find("event: message_start"), std::string::npos);
  EXPECT_NE(first.find("event: message_stop"), std::string::npos);
}

TEST_F(downstream_fixture, TheGatewaysInBandErrorBecomesAnErrorEvent) {
  run([&]() -> task<void> {
    (void)co_await messages.write_chunk("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n");
    (void)co_await messages.write_last_chunk("data: {\"error\":{\"message\":\"The upstream stopped answering.\",\"type\":\"server_error\"}}\n\n");
  });
  const auto all = client.streamed();
  EXPECT_NE(all.find("event: error"), std::string::npos);
  EXPECT_NE(all.find("The upstream stopped answering."), std::string::npos);
  EXPECT_EQ(all.find("message_stop"), std::string::npos);
  EXPECT_TRUE(client.finished);
}

}  // namespace
