#include "proxy/request_trace.hpp"

#include <gtest/gtest.h>

using namespace sluice;

TEST(RequestTrace, ContinuesAWellFormedTraceparentAndKeepsItsTracestate) {
  http::request req{boost::beast::http::verb::post, "/v1/chat/completions", 11};
  req.set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  req.set("tracestate", "vendor=opaque");
  proxy::request_trace t;
  t.begin(req, 0.0);
  EXPECT_EQ(t.trace().hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(t.parent().hex(), "00f067aa0ba902b7");
  EXPECT_TRUE(t.sampled()) << "the client's flag decides, not the ratio";
  EXPECT_EQ(t.trace_state(), "vendor=opaque");
  const auto& a = t.attempt_began("up", "127.0.0.1", 80);
  EXPECT_EQ(t.traceparent_for(a), "00-4bf92f3577b34da6a3ce929d0e0e4736-" + a.hex() + "-01");
}

TEST(RequestTrace, IdentifiesAnAnswerOnceAndNeverParsesALargeOne) {
  proxy::request_trace small;
  small.identify(R"({"id": "chatcmpl-1", "model": "m-2024", "choices": []})");
  EXPECT_EQ(small.response_id(), "chatcmpl-1");
  EXPECT_EQ(small.response_model(), "m-2024");
  small.identify(R"({"id": "other", "model": "other"})");
  EXPECT_EQ(small.response_id(), "chatcmpl-1") << "once";

  proxy::request_trace lifecycle;
  lifecycle.identify(R"({"type":"response.created","response":{"id":"resp_1","model":"m"}})");
  EXPECT_EQ(lifecycle.response_id(), "resp_1");

  // A whole answer past the bound (an embeddings list) is not parsed into a document.
  std::string big = R"({"id":"emb-1","model":"e","data":[)";
  while (big.size() <= proxy::request_trace::identify_max_bytes) big += "0.125,";
  big += "0]}";
  proxy::request_trace large;
  large.identify(big);
  EXPECT_TRUE(large.identified());
  EXPECT_EQ(large.response_id(), "");
  EXPECT_EQ(large.response_model(), "");
}
