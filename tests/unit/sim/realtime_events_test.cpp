// The Realtime API's event logic (sim/ws_realtime_events.hpp): every client event type, the error
// events, deterministic ids, the session.update merge and the streamed response.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <set>

#include "sim/ws_realtime_events.hpp"

using namespace sluice;
namespace json = boost::json;

namespace {

sim::realtime_state rt_state(std::uint64_t tokens = 3, std::uint64_t key = sim::realtime_key(1, 0, 1)) {
  return sim::realtime_state({"gpt-4o-realtime-preview", tokens, key});
}

// The one reply a client event gets, parsed.
json::object rt_reply(sim::realtime_state& s, std::string_view text) {
  const auto out = sim::realtime_replies(text, s);
  EXPECT_EQ(out.size(), 1u) << text;
  return out.empty() ? json::object{} : json::parse(out.front()).as_object();
}

// Every event of the response in s, parsed, in order.
std::vector<json::object> rt_drain(sim::realtime_state& s) {
  std::vector<json::object> events;
  while (auto e = sim::realtime_next_response_event(s)) events.push_back(json::parse(e->text).as_object());
  return events;
}

}  // namespace

TEST(SimRealtime, SessionCreated) {
  auto s = rt_state();
  const auto e = json::parse(sim::realtime_session_created(s)).as_object();
  EXPECT_EQ(e.at("type"), "session.created");
  EXPECT_TRUE(e.at("event_id").as_string().starts_with("event_"));
  const auto& session = e.at("session").as_object();
  EXPECT_TRUE(session.at("id").as_string().starts_with("sess_"));
  EXPECT_EQ(session.at("object"), "realtime.session");
  EXPECT_EQ(session.at("model"), "gpt-4o-realtime-preview");
  EXPECT_EQ(session.at("modalities"), (json::array{"text", "audio"}));
  EXPECT_EQ(session.at("voice"), "alloy");
  EXPECT_EQ(session.at("instructions"), "");
}

TEST(SimRealtime, SessionUpdateMergesShallowly) {
  auto s = rt_state();
  const std::string id(s.session.at("id").as_string());
  auto e = rt_reply(s, R"({"type":"session.update","session":{"voice":"verse","instructions":"be brief",
      "turn_detection":{"type":"server_vad"},"id":"sess_mine","object":"other"}})");
  EXPECT_EQ(e.at("type"), "session.updated");
  auto session = e.at("session").as_object();
  EXPECT_EQ(session.at("voice"), "verse");
  EXPECT_EQ(session.at("instructions"), "be brief");
  EXPECT_EQ(session.at("turn_detection").at("type"), "server_vad");
  EXPECT_EQ(session.at("id").as_string(), id);  // id and object stay the session's
  EXPECT_EQ(session.at("object"), "realtime.session");
  EXPECT_EQ(session.at("model"), "gpt-4o-realtime-preview");
  // A field given again replaces the whole field (shallow).
  e = rt_reply(s, R"({"type":"session.update","session":{"turn_detection":{"silence_duration_ms":200}}})");
  EXPECT_EQ(e.at("session").at("turn_detection"), (json::object{{"silence_duration_ms", 200}}));
  EXPECT_EQ(e.at("session").at("voice"), "verse");

  e = rt_reply(s, R"({"type":"session.update","event_id":"c1"})");
  EXPECT_EQ(e.at("type"), "error");
  EXPECT_EQ(e.at("error").at("code"), "missing_required_parameter");
  EXPECT_EQ(e.at("error").at("param"), "session");
  EXPECT_EQ(e.at("error").at("event_id"), "c1");
  e = rt_reply(s, R"({"type":"session.update","session":[1]})");
  EXPECT_EQ(e.at("error").at("code"), "invalid_type");
}

TEST(SimRealtime, SessionFieldsAreBounded) {
  auto s = rt_state();
  json::object many;
  for (std::size_t i = 0; i < sim::realtime_max_session_fields; ++i) many["f" + std::to_string(i)] = i;
  const auto e = rt_reply(s, json::serialize(json::object{{"type", "session.update"}, {"session", many}}));
  EXPECT_EQ(e.at("error").at("code"), "invalid_value");
  EXPECT_EQ(s.session.size(), 6u);  // nothing applied
}

TEST(SimRealtime, ConversationItemCreate) {
  auto s = rt_state();
  auto e = rt_reply(s, R"({"type":"conversation.item.create","item":{"type":"message","role":"user",
      "content":[{"type":"input_text","text":"hi"}]}})");
  EXPECT_EQ(e.at("type"), "conversation.item.created");
  EXPECT_TRUE(e.at("previous_item_id").is_null());
  const std::string first(e.at("item").at("id").as_string());
  EXPECT_TRUE(first.starts_with("item_"));
  EXPECT_EQ(e.at("item").at("content").at(0).at("text"), "hi");
  EXPECT_GT(s.item_bytes, 0u);

  e = rt_reply(s, R"({"type":"conversation.item.create","item":{"id":"mine","type":"message"}})");
  EXPECT_EQ(e.at("item").at("id"), "mine");
  EXPECT_EQ(e.at("previous_item_id").as_string(), first);
  e = rt_reply(s, R"({"type":"conversation.item.create","previous_item_id":"root","item":{"type":"message"}})");
  EXPECT_EQ(e.at("previous_item_id"), "root");

  EXPECT_EQ(rt_reply(s, R"({"type":"conversation.item.create"})").at("error").at("param"), "item");
  EXPECT_EQ(rt_reply(s, R"({"type":"conversation.item.create","item":{"id":7}})").at("error").at("param"), "item.id");
}

TEST(SimRealtime, InputAudioBuffer) {
  auto s = rt_state();
  EXPECT_TRUE(sim::realtime_replies(R"({"type":"input_audio_buffer.append","audio":"AAECAw=="})", s).empty());
  EXPECT_TRUE(sim::realtime_replies(R"({"type":"input_audio_buffer.append","audio":"AAEC"})", s).empty());
  EXPECT_EQ(s.audio_bytes, 7u);
  EXPECT_EQ(s.audio_buffered, 7u);
  auto e = rt_reply(s, R"({"type":"input_audio_buffer.append","audio":"not base64!"})");
  EXPECT_EQ(e.at("error").at("code"), "invalid_value");
  EXPECT_EQ(e.at("error").at("param"), "audio");
  EXPECT_EQ(rt_reply(s, R"({"type":"input_audio_buffer.append"})").at("error").at("code"), "missing_required_parameter");

  e = rt_reply(s, R"({"type":"input_audio_buffer.commit"})");
  EXPECT_EQ(e.at("type"), "input_audio_buffer.committed");
  EXPECT_TRUE(e.at("item_id").as_string().starts_with("item_"));
  EXPECT_TRUE(e.at("previous_item_id").is_null());
  EXPECT_EQ(s.audio_committed, 7u);
  EXPECT_EQ(s.audio_buffered, 0u);
  EXPECT_EQ(s.last_item_id, e.at("item_id").as_string());

  (void)sim::realtime_replies(R"({"type":"input_audio_buffer.append","audio":"AA"})", s);
  EXPECT_EQ(rt_reply(s, R"({"type":"input_audio_buffer.clear"})").at("type"), "input_audio_buffer.cleared");
  EXPECT_EQ(s.audio_buffered, 0u);
  EXPECT_EQ(s.audio_bytes, 8u);
}

TEST(SimRealtime, ResponseCreateStreamsWords) {
  auto s = rt_state(3);
  (void)sim::realtime_replies(R"({"type":"conversation.item.create","item":{"type":"message"}})", s);
  const auto created = rt_reply(s, R"({"type":"response.create"})");
  EXPECT_EQ(created.at("type"), "response.created");
  const auto& response = created.at("response").as_object();
  EXPECT_EQ(response.at("object"), "realtime.response");
  EXPECT_EQ(response.at("status"), "in_progress");
  ASSERT_TRUE(s.response);
  // A second one while this streams is refused.
  EXPECT_EQ(rt_reply(s, R"({"type":"response.create"})").at("error").at("code"), "conversation_already_has_active_response");

  const auto events = rt_drain(s);
  ASSERT_EQ(events.size(), 5u);
  std::string text;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(events[i].at("type"), "response.output_text.delta");
    EXPECT_EQ(events[i].at("response_id"), response.at("id"));
    EXPECT_EQ(events[i].at("output_index"), 0);
    EXPECT_EQ(events[i].at("content_index"), 0);
    const std::string delta(events[i].at("delta").as_string());
    EXPECT_TRUE(delta.ends_with(' ') && delta.size() > 1) << delta;
    text += delta;
  }
  EXPECT_EQ(events[3].at("type"), "response.output_text.done");
  EXPECT_EQ(events[3].at("text").as_string(), text);
  EXPECT_EQ(events[3].at("item_id"), events[0].at("item_id"));
  const auto& done = events[4].at("response").as_object();
  EXPECT_EQ(events[4].at("type"), "response.done");
  EXPECT_EQ(done.at("id"), response.at("id"));
  EXPECT_EQ(done.at("status"), "completed");
  EXPECT_EQ(done.at("output").at(0).at("content").at(0).at("text").as_string(), text);
  EXPECT_EQ(done.at("usage").at("output_tokens"), 3);
  EXPECT_GT(done.at("usage").at("input_tokens").as_int64(), 0);
  EXPECT_EQ(done.at("usage").at("total_tokens"),
            done.at("usage").at("input_tokens").as_int64() + done.at("usage").at("output_tokens").as_int64());
  EXPECT_FALSE(s.response);
  EXPECT_FALSE(sim::realtime_next_response_event(s));
}

TEST(SimRealtime, ResponseTokenCaps) {
  auto s = rt_state(5);
  (void)rt_reply(s, R"({"type":"response.create","response":{"max_output_tokens":2}})");
  auto events = rt_drain(s);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[3].at("response").at("status"), "incomplete");
  EXPECT_EQ(events[3].at("response").at("status_details").at("reason"), "max_output_tokens");
  (void)rt_reply(s, R"({"type":"session.update","session":{"max_response_output_tokens":1}})");
  (void)rt_reply(s, R"({"type":"response.create"})");
  EXPECT_EQ(rt_drain(s).size(), 3u);
  (void)rt_reply(s, R"({"type":"response.create","response":{"max_output_tokens":"inf"}})");
  EXPECT_EQ(rt_drain(s).size(), 7u);
  const auto e = rt_reply(s, R"({"type":"response.create","response":{"max_output_tokens":0}})");
  EXPECT_EQ(e.at("error").at("param"), "response.max_output_tokens");
  EXPECT_EQ(rt_reply(s, R"({"type":"response.create","response":3})").at("error").at("param"), "response");
  EXPECT_FALSE(s.response);
}

TEST(SimRealtime, EchoIsByteForByte) {
  auto s = rt_state();
  const std::string text = "{ \"type\" : \"sim.echo\", \"pad\":\"" + std::string(100'000, 'x') + "\" , \"n\": 1.50 }";
  const auto out = sim::realtime_replies(text, s);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.front(), text);
}

TEST(SimRealtime, BadEvents) {
  auto s = rt_state();
  for (std::string_view bad : {"not json", "[1,2]", "{\"type\":3}", "{}", "", "{\"type\":\"x\""}) {
    const auto e = rt_reply(s, bad);
    EXPECT_EQ(e.at("type"), "error") << bad;
    EXPECT_EQ(e.at("error").at("type"), "invalid_request_error");
    EXPECT_EQ(e.at("error").at("code"), "invalid_json") << bad;
    EXPECT_TRUE(e.at("error").at("event_id").is_null());
  }
  auto e = rt_reply(s, R"({"type":"response.cancel_everything","event_id":"evt_7"})");
  EXPECT_EQ(e.at("error").at("code"), "unknown_event");
  EXPECT_EQ(e.at("error").at("event_id"), "evt_7");
  EXPECT_NE(std::string(e.at("error").at("message").as_string()).find("response.cancel_everything"), std::string::npos);
  // A long type is quoted cut at a character boundary: the reply stays valid UTF-8 JSON.
  const std::string long_type = std::string(63, 'a') + "\xc3\xa9" + std::string(1000, 'b');
  e = rt_reply(s, json::serialize(json::object{{"type", long_type}}));
  EXPECT_LT(e.at("error").at("message").as_string().size(), 400u);
}

TEST(SimRealtime, IdsAreDeterministicAndUnique) {
  const std::vector<std::string> script{R"({"type":"session.update","session":{"voice":"ash"}})",
                                        R"({"type":"conversation.item.create","item":{"type":"message"}})",
                                        R"({"type":"input_audio_buffer.commit"})", R"({"type":"response.create"})",
                                        R"({"type":"bogus"})"};
  auto run = [&script](std::uint64_t key) {
    auto s = rt_state(4, key);
    std::vector<std::string> all{sim::realtime_session_created(s)};
    for (const auto& text : script) {
      for (auto& r : sim::realtime_replies(text, s)) all.push_back(std::move(r));
      while (auto e = sim::realtime_next_response_event(s)) all.push_back(std::move(e->text));
    }
    return all;
  };
  const auto a = run(sim::realtime_key(1, 0, 1)), b = run(sim::realtime_key(1, 0, 1));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, run(sim::realtime_key(1, 0, 2)));
  EXPECT_NE(sim::realtime_key(1, 0, 1), sim::realtime_key(1, 1, 1));
  EXPECT_NE(sim::realtime_key(1, 0, 1), sim::realtime_key(2, 0, 1));
  std::set<std::string> ids;
  for (const auto& text : a) ids.insert(std::string(json::parse(text).at("event_id").as_string()));
  EXPECT_EQ(ids.size(), a.size());
}

TEST(SimRealtime, Base64DecodedSize) {
  EXPECT_EQ(sim::base64_decoded_size(""), 0u);
  EXPECT_EQ(sim::base64_decoded_size("Zg=="), 1u);
  EXPECT_EQ(sim::base64_decoded_size("Zm8="), 2u);
  EXPECT_EQ(sim::base64_decoded_size("Zm9v"), 3u);
  EXPECT_EQ(sim::base64_decoded_size("Zm9vYg"), 4u);  // unpadded
  EXPECT_EQ(sim::base64_decoded_size("+/+/"), 3u);
  EXPECT_FALSE(sim::base64_decoded_size("Zm9vY"));
  EXPECT_FALSE(sim::base64_decoded_size("Zg="));
  EXPECT_FALSE(sim::base64_decoded_size("Z=g="));
  EXPECT_FALSE(sim::base64_decoded_size("===="));
  EXPECT_FALSE(sim::base64_decoded_size("Zm9v\n"));
}
