// response_recorder: a relayed Responses stream cut into stored events. A client's stream is stored
// from its first lifecycle event under an id of the gateway's (128 random bits), which its lifecycle
// events then carry for the client as for the record, every other event byte for byte; a
// background job's has the gateway's id, creation time and background flag written into its
// lifecycle events; lifecycle events are found by parsing, whatever the JSON's whitespace; the end
// of the stream decides the record's final status; a stream past response-max-bytes stops.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <boost/json/parse.hpp>

#include "core/json_text.hpp"
#include "proxy/responses/job_sink.hpp"

using namespace sluice;
using namespace sluice::proxy;

namespace {

std::string recording(const std::string& name) {
  std::ifstream in(std::string(SLUICE_TEST_DATA_DIR) + "/streams/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The stream cut at its event boundaries, as the relay writes it (a few events per write).
std::vector<std::string> writes_of(const std::string& stream, std::size_t events_per_write) {
  std::vector<std::string> out;
  std::size_t pos = 0, n = 0, start = 0;
  while ((pos = stream.find("\n\n", pos)) != std::string::npos) {
    pos += 2;
    if (++n % events_per_write == 0) {
      out.push_back(stream.substr(start, pos - start));
      start = pos;
    }
  }
  if (start < stream.size()) out.push_back(stream.substr(start));
  return out;
}

jobs::options opts() {
  jobs::options o;
  o.response_max_bytes = 1 << 20;
  return o;
}

// JSON as Python's json.dumps writes it: a space after every ':' and ',' outside strings, in each
// `data:` line.
std::string spaced(const std::string& sse) {
  std::string out;
  std::size_t pos = 0;
  while (pos < sse.size()) {
    const std::size_t end = std::min(sse.find('\n', pos), sse.size() - 1) + 1;
    const std::string_view line(sse.data() + pos, end - pos);
    pos = end;
    if (!line.starts_with("data: ")) {
      out.append(line);
      continue;
    }
    out.append("data: ");
    sluice::for_each_json_byte(line.substr(6), [&out](char c, bool structural) {
      out.push_back(c);
      if (structural && (c == ':' || c == ',')) out.push_back(' ');
    });
  }
  return out;
}

bool is_gateway_id(std::string_view id) {
  if (id.size() != 37 || id.substr(0, 5) != "resp_") return false;
  for (char c : id.substr(5))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

struct parsed_event {
  std::string type;
  boost::json::object data;
};

// The `data:` payloads of an SSE text, parsed.
std::vector<parsed_event> parse_events(const std::string& sse) {
  std::vector<parsed_event> out;
  std::size_t pos = 0;
  while ((pos = sse.find("data: ", pos)) != std::string::npos) {
    const auto end = sse.find('\n', pos);
    auto data = boost::json::parse(sse.substr(pos + 6, end - pos - 6)).as_object();
    out.push_back({std::string(data.at("type").as_string()), std::move(data)});
    pos = end;
  }
  return out;
}

// Feeds the writes of `stream` and returns what the client was sent.
std::string feed_all(response_recorder& rec, const std::string& stream, std::size_t events_per_write) {
  std::string sent;
  for (const auto& w : writes_of(stream, events_per_write)) sent += rec.feed(w);
  return sent;
}

}  // namespace

TEST(response_recorder, AClientsStreamIsStoredUnderAnIdOfTheGatewaysThatTheClientSees) {
  const std::string stream = recording("responses_text.sse");
  jobs::memory_store store(opts());
  response_recorder rec(store);
  rec.set_owner("tenant-a");
  const std::string sent = feed_all(rec, stream, 3);
  ASSERT_TRUE(rec.recording());
  rec.conclude("");
  ASSERT_NE(rec.record(), nullptr);
  const std::string id = rec.record()->id();
  EXPECT_TRUE(is_gateway_id(id)) << id;
  EXPECT_EQ(store.find("resp_68c1"), nullptr) << "never under the upstream's id";
  auto stored = store.find(id);
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(stored->owner(), "tenant-a");
  EXPECT_FALSE(stored->background());
  EXPECT_EQ(stored->state(), jobs::status::completed);
  auto all = stored->read_after(-1, 1 << 20);
  std::string joined;
  for (const auto& e : all.events) joined += e;
  EXPECT_EQ(joined, sent) << "the client and a follower see the same events";
  EXPECT_EQ(sent.find("\"resp_68c1\""), std::string::npos) << "the client sees the gateway's id only";
  auto events = parse_events(sent);
  ASSERT_EQ(events.size(), all.events.size());
  for (const auto& e : events)
    if (const auto* r = e.data.if_contains("response")) {
      EXPECT_EQ(r->at("id").as_string(), id) << e.type;
    }
  // Every event without a response object is the upstream's, byte for byte.
  std::size_t upstream_pos = 0;
  for (std::size_t i = 0; i < all.events.size(); ++i) {
    const auto next = stream.find("\n\n", upstream_pos) + 2;
    if (!events[i].data.contains("response")) {
      EXPECT_EQ(all.events[i], stream.substr(upstream_pos, next - upstream_pos));
    }
    upstream_pos = next;
  }
  EXPECT_TRUE(all.finished);
  EXPECT_EQ(boost::json::parse(stored->object()).at("id").as_string(), id);
}

TEST(response_recorder, EachClientsStreamGetsItsOwnId) {
  const std::string stream = recording("responses_text.sse");
  jobs::memory_store store(opts());
  response_recorder a(store), b(store);
  feed_all(a, stream, 2);
  feed_all(b, stream, 2);
  ASSERT_NE(a.record(), nullptr);
  ASSERT_NE(b.record(), nullptr);
  EXPECT_NE(a.record()->id(), b.record()->id()) << "the same upstream id twice is two responses";
}

TEST(response_recorder, SpacedJsonIsRecordedAsCompactJsonIs) {
  const std::string stream = spaced(recording("responses_text.sse"));
  ASSERT_NE(stream.find("\"response\": {"), std::string::npos) << "the test's input is spaced";
  jobs::memory_store store(opts());
  response_recorder rec(store);
  const std::string sent = feed_all(rec, stream, 1);
  ASSERT_TRUE(rec.recording()) << "the lifecycle events are found whatever the whitespace";
  rec.conclude("");
  auto stored = rec.record();
  EXPECT_EQ(stored->state(), jobs::status::completed);
  const auto o = boost::json::parse(stored->object()).as_object();
  EXPECT_FALSE(o.at("output").as_array().empty());
  EXPECT_TRUE(o.at("usage").is_object());
  EXPECT_EQ(sent.find("resp_68c1"), std::string::npos);
}

TEST(response_recorder, ABackgroundJobOverSpacedJsonKeepsItsOutputAndUsage) {
  const std::string stream = spaced(recording("responses_text.sse"));
  jobs::memory_store store(opts());
  const std::string object = queued_response_object("resp_gateway", "m", true, "{}");
  auto rec = std::get<std::shared_ptr<jobs::response_record>>(store.create({"resp_gateway", true, object, {}, "{}", "", {}, {}}, true));
  ASSERT_TRUE(rec->start(object));
  response_recorder r(rec);
  feed_all(r, stream, 2);
  r.conclude("");
  EXPECT_EQ(rec->state(), jobs::status::completed);
  const auto o = boost::json::parse(rec->object()).as_object();
  EXPECT_EQ(o.at("id").as_string(), "resp_gateway");
  EXPECT_FALSE(o.at("output").as_array().empty()) << rec->object();
  EXPECT_TRUE(o.at("usage").is_object()) << rec->object();
}

TEST(response_recorder, AJobsLifecycleEventsCarryTheGatewaysResponse) {
  const std::string stream = recording("responses_text.sse");
  jobs::memory_store store(opts());
  const std::string object = queued_response_object("resp_gateway", "m", true, R"({"metadata":{"k":"v"}})");
  auto made = store.create({"resp_gateway", true, object, {}, "{}", "", {}, {}}, true);
  auto rec = std::get<std::shared_ptr<jobs::response_record>>(made);
  ASSERT_TRUE(rec->start(object));
  response_recorder r(rec);
  for (const auto& w : writes_of(stream, 1)) r.feed(w);
  r.conclude("");
  EXPECT_EQ(rec->state(), jobs::status::completed);
  const auto final_object = boost::json::parse(rec->object()).as_object();
  EXPECT_EQ(final_object.at("id").as_string(), "resp_gateway");
  EXPECT_TRUE(final_object.at("background").as_bool());
  EXPECT_EQ(final_object.at("created_at"), boost::json::parse(object).at("created_at"));
  auto events = rec->read_after(-1, 1 << 20).events;
  ASSERT_FALSE(events.empty());
  EXPECT_NE(events.front().find("\"id\":\"resp_gateway\""), std::string::npos) << events.front();
  EXPECT_EQ(events.front().find("resp_68c1"), std::string::npos) << "the upstream's id is not shown";
}

TEST(response_recorder, AStreamThatEndsWithoutItsFinalEventFails) {
  std::string stream = recording("responses_text.sse");
  stream = stream.substr(0, stream.find("event: response.completed"));
  jobs::memory_store store(opts());
  response_recorder rec(store);
  rec.feed(stream);
  rec.conclude("upstream_reset");
  auto stored = rec.record();
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(stored->state(), jobs::status::failed);
  const auto o = boost::json::parse(stored->object()).as_object();
  EXPECT_EQ(o.at("error").at("code").as_string(), "upstream_reset");
  auto last = stored->read_after(-1, 1 << 20).events.back();
  EXPECT_EQ(last.rfind("event: error\n", 0), 0u) << "followers see the end: " << last;
}

TEST(response_recorder, AStreamPastItsMaxBytesStopsAndFails) {
  const std::string stream = recording("responses_text.sse");
  jobs::options o = opts();
  o.response_max_bytes = 1024;
  jobs::memory_store store(o);
  response_recorder rec(store);
  const std::string sent = feed_all(rec, stream, 1);
  EXPECT_TRUE(rec.stopped());
  rec.conclude("");
  auto stored = rec.record();
  EXPECT_EQ(sent.find("resp_68c1"), std::string::npos) << "the client's ids stay the gateway's after the recording stopped";
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(stored->state(), jobs::status::failed);
  EXPECT_EQ(boost::json::parse(stored->object()).at("error").at("code").as_string(), "response_too_large");
}

TEST(response_recorder, AStreamTheStoreCannotTakeIsNotRecorded) {
  const std::string stream = recording("responses_text.sse");
  jobs::options o = opts();
  o.memory_responses = 1;
  jobs::memory_store store(o);
  ASSERT_TRUE(std::holds_alternative<std::shared_ptr<jobs::response_record>>(
      store.create({"resp_other", false, "{}", {}, "", "", {}, {}}, false)));  // the store is full (and it runs)
  response_recorder rec(store);
  rec.feed(stream);
  EXPECT_FALSE(rec.recording());
  rec.conclude("");
  EXPECT_EQ(store.stored(), 1u);
  EXPECT_EQ(store.find("resp_other")->state(), jobs::status::queued) << "the other record is untouched";
}
