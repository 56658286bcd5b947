// A foreground job's head (proxy/responses/wire_head.hpp): what the worker writes, the front reads back
// whole; the framing fields are the front's own; anything else is refused.
#include <gtest/gtest.h>

#include "proxy/responses/wire_head.hpp"

using namespace sluice::proxy;

TEST(wire_head, aHeadReadsBackWithItsEndToEndFieldsOnly) {
  bhttp::fields f;
  f.set(bhttp::field::content_type, "text/event-stream");
  f.set("x-ratelimit-remaining-requests", "7");
  f.set(bhttp::field::transfer_encoding, "chunked");
  f.set(bhttp::field::connection, "close");
  f.set(bhttp::field::content_length, "12");
  auto h = parse_wire_head(wire_head_text(f, 200, true));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200u);
  EXPECT_TRUE(h->stream);
  const std::vector<std::pair<std::string, std::string>> want{{"Content-Type", "text/event-stream"},
                                                              {"x-ratelimit-remaining-requests", "7"}};
  EXPECT_EQ(h->headers, want);
  auto whole = parse_wire_head(wire_head_text(bhttp::fields{}, 429, false));
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->status, 429u);
  EXPECT_FALSE(whole->stream);
  EXPECT_TRUE(whole->headers.empty());
}

TEST(wire_head, anythingButAHeadIsRefused) {
  for (const char* bad : {"", "data: {}", "[]", R"({"status":200,"stream":true})", R"({"status":99,"stream":true,"headers":[]})",
                          R"({"status":600,"stream":false,"headers":[]})", R"({"status":"200","stream":false,"headers":[]})",
                          R"({"status":200,"stream":1,"headers":[]})", R"({"status":200,"stream":false,"headers":[["a"]]})",
                          R"({"status":200,"stream":false,"headers":[["a",1]]})", R"({"status":200,"stream":false,"headers":{}})"})
    EXPECT_FALSE(parse_wire_head(bad)) << bad;
}

TEST(wire_head, aTargetNamesPostOrGetAndAV1Path) {
  auto t = parse_wire_target(wire_target(bhttp::verb::post, "/v1/chat/completions"));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->first, bhttp::verb::post);
  EXPECT_EQ(t->second, "/v1/chat/completions");
  EXPECT_EQ(wire_target(bhttp::verb::get, "/v1/models"), "GET /v1/models");
  for (const char* bad : {"", "POST", "POST /healthz", "DELETE /v1/models", "post /v1/models", "POST  /v1/models"})
    EXPECT_FALSE(parse_wire_target(bad)) << bad;
}
