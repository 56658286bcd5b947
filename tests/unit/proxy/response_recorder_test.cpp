// response_recorder: a relayed Responses stream cut into stored events. A client's stream is stored
// byte for byte under the upstream's id from its first lifecycle event; a background job's has the
// gateway's id, creation time and background flag written into its lifecycle events; the end of the
// stream decides the record's final status; a stream past response-max-bytes stops.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <boost/json/parse.hpp>

#include "proxy/job_sink.hpp"

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

}  // namespace

TEST(response_recorder, AClientsStreamIsStoredByteForByteUnderTheUpstreamsId) {
  const std::string stream = recording("responses_text.sse");
  jobs::memory_store store(opts());
  response_recorder rec(store);
  rec.set_owner("alice");
  for (const auto& w : writes_of(stream, 3)) rec.feed(w);
  ASSERT_TRUE(rec.recording());
  rec.conclude("");
  auto stored = store.find("resp_68c1");
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(stored->owner(), "alice");
  EXPECT_FALSE(stored->background());
  EXPECT_EQ(stored->state(), jobs::status::completed);
  auto all = stored->read_after(-1, 1 << 20);
  std::string joined;
  for (const auto& e : all.events) joined += e;
  EXPECT_EQ(joined, stream) << "every event kept as the upstream sent it";
  EXPECT_TRUE(all.finished);
}

TEST(response_recorder, AJobsLifecycleEventsCarryTheGatewaysResponse) {
  const std::string stream = recording("responses_text.sse");
  jobs::memory_store store(opts());
  const std::string object = queued_response_object("resp_gateway", "m", true, R"({"metadata":{"k":"v"}})");
  auto made = store.create({"resp_gateway", true, object, {}, "{}", "", {}}, true);
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
  auto stored = store.find("resp_68c1");
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
  for (const auto& w : writes_of(stream, 1)) rec.feed(w);
  EXPECT_TRUE(rec.stopped());
  rec.conclude("");
  auto stored = store.find("resp_68c1");
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(stored->state(), jobs::status::failed);
  EXPECT_EQ(boost::json::parse(stored->object()).at("error").at("code").as_string(), "response_too_large");
}

TEST(response_recorder, AStreamTheStoreCannotTakeIsNotRecorded) {
  const std::string stream = recording("responses_text.sse");
  jobs::memory_store store(opts());
  ASSERT_TRUE(std::holds_alternative<std::shared_ptr<jobs::response_record>>(
      store.create({"resp_68c1", false, "{}", {}, "", "", {}}, false)));  // the id is taken
  response_recorder rec(store);
  rec.feed(stream);
  EXPECT_FALSE(rec.recording());
  rec.conclude("");
  EXPECT_EQ(store.find("resp_68c1")->state(), jobs::status::queued) << "the other record is untouched";
}
