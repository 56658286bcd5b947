// The streamed routes' table (ADR 0027): which paths and methods it serves, how {id} segments are
// checked, which bodies stream, and when a request may be sent again.
#include <gtest/gtest.h>

#include "proxy/streamed_routes.hpp"

namespace sluice::proxy {
namespace {

using bhttp::verb;

const streamed_route* find(verb m, std::string_view path) {
  bool known = false;
  return find_streamed_route(m, path, known);
}

TEST(StreamedRoutes, FindsEachFamilyWithItsLabelAndBodyKind) {
  const auto* speech = find(verb::post, "/v1/audio/speech");
  ASSERT_NE(speech, nullptr);
  EXPECT_EQ(speech->route, obs::route::audio);
  EXPECT_FALSE(speech->upload) << "speech sends JSON and streams its answer";
  EXPECT_FALSE(speech->stores);
  const auto* upload = find(verb::post, "/v1/files");
  ASSERT_NE(upload, nullptr);
  EXPECT_TRUE(upload->upload);
  EXPECT_TRUE(upload->stores);
  const auto* content = find(verb::get, "/v1/files/file-abc123/content");
  ASSERT_NE(content, nullptr);
  EXPECT_EQ(content->route, obs::route::files);
  EXPECT_FALSE(content->upload);
  const auto* part = find(verb::post, "/v1/uploads/upload_abc/parts");
  ASSERT_NE(part, nullptr);
  EXPECT_TRUE(part->upload);
  const auto* item = find(verb::delete_, "/v1/conversations/conv_1/items/msg_2");
  ASSERT_NE(item, nullptr);
  EXPECT_EQ(item->route, obs::route::conversations);
  EXPECT_EQ(find(verb::post, "/v1/images/edits")->route, obs::route::images);
  EXPECT_TRUE(find(verb::post, "/v1/audio/transcriptions")->upload);
}

TEST(StreamedRoutes, AnotherMethodOnAKnownPathIsKnownButNotServed) {
  bool known = false;
  EXPECT_EQ(find_streamed_route(verb::put, "/v1/files", known), nullptr);
  EXPECT_TRUE(known);
  EXPECT_EQ(find_streamed_route(verb::get, "/v1/nothing/here", known), nullptr);
  EXPECT_FALSE(known);
}

TEST(StreamedRoutes, AnIdIsOneSegmentOfPlainCharacters) {
  EXPECT_NE(find(verb::get, "/v1/files/file-ABC_09.x"), nullptr);
  EXPECT_EQ(find(verb::get, "/v1/files/.."), nullptr);
  EXPECT_EQ(find(verb::get, "/v1/files/."), nullptr);
  EXPECT_EQ(find(verb::get, "/v1/files/a%2Fb"), nullptr);
  EXPECT_EQ(find(verb::get, "/v1/files/"), nullptr);
  EXPECT_EQ(find(verb::get, "/v1/files//content"), nullptr);
  EXPECT_EQ(find(verb::get, "/v1/files/" + std::string(129, 'a')), nullptr);
  EXPECT_NE(find(verb::get, "/v1/files/" + std::string(128, 'a')), nullptr);
  EXPECT_EQ(find(verb::get, "/v1/files/a/b"), nullptr) << "an id never spans two segments";
  EXPECT_EQ(find(verb::get, "/v1/files/a/content/more"), nullptr);
  EXPECT_EQ(find(verb::get, "/v1/filesx"), nullptr);
}

TEST(StreamedRoutes, EveryRowIsUniqueAndUnderV1) {
  const auto rows = streamed_route_table();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_TRUE(rows[i].pattern.starts_with("/v1/")) << rows[i].pattern;
    EXPECT_FALSE(rows[i].upload && rows[i].method != verb::post) << rows[i].pattern;
    for (std::size_t j = i + 1; j < rows.size(); ++j)
      EXPECT_FALSE(rows[i].method == rows[j].method && rows[i].pattern == rows[j].pattern) << rows[i].pattern;
  }
}

TEST(StreamedRoutes, OnlyUploadRoutesStreamTheirRequestBody) {
  const upload_policy policy(1000);
  http::request req{verb::post, "/v1/files?x=1", 11};
  EXPECT_EQ(policy.streamed_body_cap(req), 1000u) << "the query is no part of the route";
  req.target("/v1/audio/speech");
  EXPECT_EQ(policy.streamed_body_cap(req), 0u) << "a JSON body is read whole under max-body";
  req.target("/v1/chat/completions");
  EXPECT_EQ(policy.streamed_body_cap(req), 0u);
  req.method(verb::get);
  req.target("/v1/files");
  EXPECT_EQ(policy.streamed_body_cap(req), 0u);
}

TEST(StreamedRoutes, EveryUploadRowStreamsWhateverItsIds) {
  // The policy decides most requests by prefix before it looks at the table: no upload row may
  // fall outside its prefixes.
  const upload_policy policy(1000);
  for (const auto& row : streamed_route_table()) {
    std::string path(row.pattern);
    for (auto at = path.find("{id}"); at != std::string::npos; at = path.find("{id}")) path.replace(at, 4, "obj_1");
    const http::request req{row.method, path, 11};
    EXPECT_EQ(policy.streamed_body_cap(req), row.upload ? 1000u : 0u) << path;
  }
}

TEST(StreamedRoutes, APostThatReachedTheUpstreamIsNeverReplayed) {
  EXPECT_TRUE(may_replay(verb::post, false)) << "a connect that failed sent nothing";
  EXPECT_FALSE(may_replay(verb::post, true));
  EXPECT_TRUE(may_replay(verb::get, true));
  EXPECT_TRUE(may_replay(verb::delete_, true));
}

}  // namespace
}  // namespace sluice::proxy
