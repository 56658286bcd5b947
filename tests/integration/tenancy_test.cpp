// Stored responses between tenants (docs/security.md, "Tenants"), in one process (--queue memory)
// and in a fleet over a real redis-server (--queue redis):
//  - a stored response belongs to its key's identity: another key reads and cancels nothing of
//    it, and neither does a key that inherits its old default name when a line is inserted at the
//    top of the keys file; a keys file in which two keys share a name is refused;
//  - a client's own recorded stream is stored under an id of the gateway's (128 random bits) that
//    the client sees, never under the upstream's (the simulator's ids are a hash of the request);
//    without a keys file, the credential a client presents is its tenant;
//  - starting_after is range-checked before use (a 400 naming it, in both modes);
//  - an upstream that writes spaced JSON (as Python does) is understood as a compact one is;
//  - a member written twice in a body is refused before anything goes upstream;
//  - a keys file that starts with a UTF-8 byte-order mark works.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fstream>
#include <sstream>

#include "boxes.hpp"
#include "process.hpp"
#include "recording_upstream.hpp"
#include "queue_fleet.hpp"
#include "responses_events.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;
using test::bhttp::verb;
using headers = std::vector<std::pair<std::string, std::string>>;
using test::parse_events;

namespace {

const std::string kBackground = R"({"model":"sim-1","input":"tenancy","background":true})";
const std::string kStream = R"({"model":"sim-1","input":"a recorded stream","stream":true})";

headers bearer(const std::string& key) { return {{"Authorization", "Bearer " + key}}; }

bool is_gateway_id(const std::string& id) {
  if (id.size() != 37 || id.rfind("resp_", 0) != 0) return false;
  return id.find_first_not_of("0123456789abcdef", 5) == std::string::npos;
}

unsigned status_of(std::uint16_t port, verb v, const std::string& target, const headers& h = {}) {
  return test::call(port, v, target, "", h).result_int();
}

// The final status of a stored response, polled (a condition, with a deadline).
std::string wait_final(std::uint16_t port, const std::string& id, const headers& h = {}) {
  std::string s;
  test::wait_until([&] {
    auto r = test::call(port, verb::get, "/v1/responses/" + id, "", h);
    if (r.result_int() != 200) return false;
    s = std::string(boost::json::parse(r.body()).at("status").as_string());
    return s != "queued" && s != "in_progress";
  }, 15s);
  return s;
}

struct Tenancy : ::testing::Test {
  std::unique_ptr<test::sim_box> sim;
  std::unique_ptr<test::gateway_box> gw;
  std::string keys_path;

  void start(const std::string& keys = "", bool spaced_json = false) {
    sim::options so;
    so.listen = "127.0.0.1:0";
    so.tokens = 12;
    so.spaced_json = spaced_json;
    sim = std::make_unique<test::sim_box>(so);
    app::serve_options go;
    go.http.listen = "127.0.0.1:0";
    go.http.threads = 2;
    go.upstream.urls = {sim->url()};
    go.routing.max_attempts = 1;
    if (!keys.empty()) go.admission.keys_file = keys_path = test::temp_file_with(keys);
    gw = std::make_unique<test::gateway_box>(go);
  }
  void TearDown() override {
    gw.reset();
    sim.reset();
    if (!keys_path.empty()) std::remove(keys_path.c_str());
  }
  std::uint16_t port() const { return gw->port; }
};

}  // namespace

TEST_F(Tenancy, AnotherKeyReadsAndCancelsNothingOfAResponse) {
  start("sk-tenant-alice 10 0\nsk-tenant-bob 10 0\n");
  auto r = test::call(port(), verb::post, "/v1/responses", kBackground, bearer("sk-tenant-alice"));
  ASSERT_EQ(r.result_int(), 200u) << r.body();
  const std::string id(boost::json::parse(r.body()).at("id").as_string());
  EXPECT_TRUE(is_gateway_id(id)) << id;
  EXPECT_EQ(status_of(port(), verb::get, "/v1/responses/" + id, bearer("sk-tenant-bob")), 404u);
  EXPECT_EQ(status_of(port(), verb::get, "/v1/responses/" + id + "?stream=true", bearer("sk-tenant-bob")), 404u);
  EXPECT_EQ(status_of(port(), verb::post, "/v1/responses/" + id + "/cancel", bearer("sk-tenant-bob")), 404u);
  EXPECT_EQ(wait_final(port(), id, bearer("sk-tenant-alice")), "completed") << "bob's cancel did nothing";
}

TEST_F(Tenancy, AKeysFileWhereTwoKeysShareANameIsRefusedWithItsLines) {
  for (const std::string keys : {"sk-one-000 1 1 team\nsk-two-000 1 1 team\n", "sk-one-000 1 1 key-2\nsk-two-000 1 1\n"}) {
    const std::string path = test::temp_file_with(keys);
    test::child_process p({"serve", "--listen", "127.0.0.1:0", "--keys-file", path});
    EXPECT_NE(p.signal_and_wait(0, 20s), 0) << "the gateway must not start: " << p.output();
    EXPECT_NE(p.output().find("line 2"), std::string::npos) << p.output();
    EXPECT_EQ(p.output().find("sk-"), std::string::npos) << "never the key: " << p.output();
    std::remove(path.c_str());
  }
}

TEST_F(Tenancy, ARecordedStreamHasAnIdOfTheGatewaysThatOnlyItsClientCanRead) {
  start();  // no keys file: the credential a client presents is who it is
  auto r = test::call(port(), verb::post, "/v1/responses", kStream, bearer("sk-client-one"));
  ASSERT_EQ(r.result_int(), 200u) << r.body();
  auto events = parse_events(r.body());
  ASSERT_FALSE(events.empty());
  const std::string id(events.front().data.at("response").at("id").as_string());
  EXPECT_TRUE(is_gateway_id(id)) << "the client sees the id it can resume with: " << id;
  for (const auto& e : events)
    if (e.data.contains("response")) {
      EXPECT_EQ(e.data.at("response").at("id").as_string(), id) << e.type;
    }
  // The simulator's own id for this request (its ids are a function of the body) finds nothing.
  auto direct = test::call(sim->port, verb::post, "/v1/responses", kStream);
  const std::string upstream_id(parse_events(direct.body()).front().data.at("response").at("id").as_string());
  EXPECT_NE(upstream_id, id);
  EXPECT_EQ(status_of(port(), verb::get, "/v1/responses/" + upstream_id, bearer("sk-client-one")), 404u);
  ASSERT_EQ(wait_final(port(), id, bearer("sk-client-one")), "completed");
  // A stranger, or no credential at all, reads nothing of it; its client reads and replays it.
  EXPECT_EQ(status_of(port(), verb::get, "/v1/responses/" + id, bearer("sk-client-two")), 404u);
  EXPECT_EQ(status_of(port(), verb::get, "/v1/responses/" + id + "?stream=true", bearer("sk-client-two")), 404u);
  EXPECT_EQ(status_of(port(), verb::get, "/v1/responses/" + id), 404u);
  auto replay = test::call(port(), verb::get, "/v1/responses/" + id + "?stream=true", "", bearer("sk-client-one"));
  ASSERT_EQ(replay.result_int(), 200u);
  EXPECT_EQ(parse_events(replay.body()).size(), events.size());
}

TEST_F(Tenancy, StartingAfterOutOfRangeIsA400NamingIt) {
  start();
  auto r = test::call(port(), verb::post, "/v1/responses", kBackground);
  ASSERT_EQ(r.result_int(), 200u);
  const std::string id(boost::json::parse(r.body()).at("id").as_string());
  ASSERT_EQ(wait_final(port(), id), "completed");
  for (const char* bad : {"9223372036854775807", "9223372036854775808", "9007199254740992", "-1", "abc", "1e3", "+1"}) {
    auto b = test::call(port(), verb::get, "/v1/responses/" + id + "?stream=true&starting_after=" + bad);
    EXPECT_EQ(b.result_int(), 400u) << bad << ": " << b.body();
    EXPECT_NE(b.body().find("\"param\":\"starting_after\""), std::string::npos) << b.body();
  }
  auto last = test::call(port(), verb::get, "/v1/responses/" + id + "?stream=true&starting_after=9007199254740991");
  EXPECT_EQ(last.result_int(), 200u) << "the largest sequence number is in range: nothing follows it";
  EXPECT_TRUE(parse_events(last.body()).empty()) << last.body();
}

TEST_F(Tenancy, AnUpstreamWritingSpacedJsonIsUnderstoodAsACompactOne) {
  start("", true);
  auto direct = test::call(sim->port, verb::post, "/v1/responses", kStream);
  ASSERT_NE(direct.body().find("\"response\": {"), std::string::npos) << "the simulator writes spaced JSON";
  // A background response: its output and usage come from the lifecycle events.
  auto r = test::call(port(), verb::post, "/v1/responses", kBackground);
  ASSERT_EQ(r.result_int(), 200u) << r.body();
  const std::string id(boost::json::parse(r.body()).at("id").as_string());
  ASSERT_EQ(wait_final(port(), id), "completed");
  auto done = boost::json::parse(test::call(port(), verb::get, "/v1/responses/" + id).body()).as_object();
  EXPECT_FALSE(test::output_text(done).empty()) << boost::json::serialize(done);
  EXPECT_TRUE(done.at("usage").is_object()) << boost::json::serialize(done);
  // A client's stream is recorded.
  auto s = test::call(port(), verb::post, "/v1/responses", kStream);
  const auto streamed = parse_events(s.body());
  const std::string sid(streamed.front().data.at("response").at("id").as_string());
  ASSERT_EQ(wait_final(port(), sid), "completed");
  auto stored = boost::json::parse(test::call(port(), verb::get, "/v1/responses/" + sid).body()).as_object();
  EXPECT_FALSE(test::output_text(stored).empty());
  EXPECT_EQ(test::output_text(stored), test::output_text(streamed.back().data.at("response").as_object()));
  // Chat streams: usage is counted from spaced chunks too.
  auto chat = test::post_chat(port(), true);
  EXPECT_EQ(chat.result_int(), 200u);
  EXPECT_NE(chat.body().find("[DONE]"), std::string::npos);
}

TEST_F(Tenancy, AMemberWrittenTwiceIsRefusedBeforeAnythingGoesUpstream) {
  start();
  const auto before = sim->server.snapshot().requests;
  auto r = test::call(port(), verb::post, "/v1/responses",
                      R"({"model":"sim-1","input":"x","text":{"format":{"type":"json_schema","name":"a","schema":{"type":"object"}},)"
                      R"("format":{"type":"text"}}})");
  EXPECT_EQ(r.result_int(), 400u) << r.body();
  EXPECT_NE(r.body().find("\"param\":\"text.format\""), std::string::npos) << r.body();
  r = test::call(port(), verb::post, "/v1/chat/completions",
                 R"({"model":"sim-1","stream":false,"messages":[{"role":"user","content":"x"}],"stream":true})");
  EXPECT_EQ(r.result_int(), 400u) << r.body();
  EXPECT_NE(r.body().find("\"param\":\"stream\""), std::string::npos) << r.body();
  EXPECT_EQ(sim->server.snapshot().requests, before);
}

TEST_F(Tenancy, AKeysFileWithAByteOrderMarkServesItsFirstKey) {
  start("\xEF\xBB\xBFsk-first-key 10 0\nsk-second-key 10 0\n");
  EXPECT_EQ(test::post_chat(port(), false, bearer("sk-first-key")).result_int(), 200u);
  EXPECT_EQ(test::post_chat(port(), false, bearer("sk-second-key")).result_int(), 200u);
}

TEST(TenancyChains, APreviousResponseIdOfTheGatewaysGoesUpstreamAsTheUpstreamsOwn) {
  // An upstream that answers every Responses request with a recorded stream whose id is resp_68c1.
  std::ifstream in(std::string(SLUICE_TEST_DATA_DIR) + "/streams/responses_text.sse", std::ios::binary);
  std::stringstream recorded;
  recorded << in.rdbuf();
  test::recording_upstream up([stream = recorded.str()](const test::recording_upstream::seen&) {
    return test::recording_upstream::response(200, stream, "", "text/event-stream");
  });
  app::serve_options o;
  o.http.listen = "127.0.0.1:0";
  o.http.threads = 1;
  o.upstream.urls = {up.url()};
  o.routing.max_attempts = 1;
  test::gateway_box g(o);
  auto first = test::call(g.port, verb::post, "/v1/responses", R"({"model":"m","input":"one","stream":true})", bearer("sk-chain-a"));
  ASSERT_EQ(first.result_int(), 200u) << first.body();
  const std::string id(parse_events(first.body()).front().data.at("response").at("id").as_string());
  ASSERT_TRUE(is_gateway_id(id)) << id;
  const std::string next = R"({"model":"m","input":"two","stream":true,"previous_response_id":")" + id + R"("})";
  ASSERT_EQ(test::call(g.port, verb::post, "/v1/responses", next, bearer("sk-chain-a")).result_int(), 200u);
  ASSERT_EQ(test::call(g.port, verb::post, "/v1/responses", next, bearer("sk-chain-b")).result_int(), 200u);
  const auto seen = up.requests();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(boost::json::parse(seen[1].body).at("previous_response_id").as_string(), "resp_68c1")
      << "its owner's continuation reaches the upstream under the upstream's id";
  EXPECT_EQ(boost::json::parse(seen[2].body).at("previous_response_id").as_string(), id)
      << "another tenant's is not mapped: the upstream answers for an id it does not know";
}

// --- the same promises in a fleet over Redis ---------------------------------------------------

struct TenancyRedis : test::queue_fleet {};

TEST_F(TenancyRedis, AResponseBelongsToItsKeyNotToTheNameItHadAcrossARestart) {
  const std::string v1 = test::temp_file_with("sk-fleet-alice 10 0\nsk-fleet-bob 10 0\n");
  // Carol's line is inserted at the top: she now has alice's old default name, key-1.
  const std::string v2 = test::temp_file_with("sk-fleet-carol 10 0\nsk-fleet-alice 10 0\nsk-fleet-bob 10 0\n");
  auto w = worker({"--keys-file", v1});
  std::string id;
  {
    auto f = front({"--keys-file", v1});
    auto r = test::call(f->port, verb::post, "/v1/responses", kBackground, bearer("sk-fleet-alice"));
    ASSERT_EQ(r.result_int(), 200u) << r.body();
    id = std::string(boost::json::parse(r.body()).at("id").as_string());
    EXPECT_EQ(status_of(f->port, verb::get, "/v1/responses/" + id, bearer("sk-fleet-bob")), 404u);
    EXPECT_EQ(status_of(f->port, verb::post, "/v1/responses/" + id + "/cancel", bearer("sk-fleet-bob")), 404u);
    ASSERT_EQ(wait_final(f->port, id, bearer("sk-fleet-alice")), "completed");
  }
  // What Redis holds as the owner names no key and no display name.
  const std::string own = redis_cli("HGET '" + std::string("sluice:{resp:") + id + "}' own");
  EXPECT_EQ(own.size(), 32u) << own;
  EXPECT_EQ(own.find("alice"), std::string::npos);
  EXPECT_EQ(own.find("key-"), std::string::npos);
  auto f2 = front({"--keys-file", v2});
  EXPECT_EQ(status_of(f2->port, verb::get, "/v1/responses/" + id, bearer("sk-fleet-carol")), 404u);
  EXPECT_EQ(status_of(f2->port, verb::get, "/v1/responses/" + id, bearer("sk-fleet-alice")), 200u);
  std::remove(v1.c_str());
  std::remove(v2.c_str());
}

TEST_F(TenancyRedis, StartingAfterOutOfRangeIsA400AndNoRedisError) {
  auto f = front();
  auto w = worker();
  auto r = test::call(f->port, verb::post, "/v1/responses", kBackground);
  ASSERT_EQ(r.result_int(), 200u) << r.body();
  const std::string id(boost::json::parse(r.body()).at("id").as_string());
  ASSERT_EQ(wait_final(f->port, id), "completed");
  const double errors = f->metric_sum("sluice_queue_redis_errors_total");
  for (const char* bad : {"9223372036854775807", "9007199254740992", "x"}) {
    auto b = test::call(f->port, verb::get, "/v1/responses/" + id + "?stream=true&starting_after=" + bad);
    EXPECT_EQ(b.result_int(), 400u) << bad << ": " << b.body();
    EXPECT_NE(b.body().find("\"param\":\"starting_after\""), std::string::npos) << b.body();
  }
  EXPECT_EQ(f->metric_sum("sluice_queue_redis_errors_total"), errors);
}

TEST_F(TenancyRedis, ARecordedStreamIsResumableOnAnotherFrontUnderTheGatewaysIdOnly) {
  auto a = front(), b = front();
  auto w = worker();  // runs the stream as a foreground job; front a relays and records it
  auto r = test::call(a->port, verb::post, "/v1/responses", kStream, bearer("sk-fleet-one"));
  ASSERT_EQ(r.result_int(), 200u);
  const std::string id(parse_events(r.body()).front().data.at("response").at("id").as_string());
  ASSERT_TRUE(is_gateway_id(id)) << id;
  ASSERT_EQ(wait_final(b->port, id, bearer("sk-fleet-one")), "completed");
  EXPECT_EQ(status_of(b->port, verb::get, "/v1/responses/" + id, bearer("sk-fleet-two")), 404u);
  // No Redis key carries an id the upstream chose.
  auto direct = test::call(sim->port(), verb::post, "/v1/responses", kStream);
  const std::string upstream_id(parse_events(direct.body()).front().data.at("response").at("id").as_string());
  EXPECT_EQ(redis_cli("--scan --pattern '*" + upstream_id + "*'"), "");
}

// --- a refused schema's cost -------------------------------------------------------------------


// A 900 KB schema with a 100,000-value enum is refused (enum values are limited to 1,000) with the
// 400 naming the place, and the gateway's peak RSS rises by a small multiple of the body, not by
// the ~17.4 MiB it took when the canonical cache key (and its 6 MiB of work stack) was built
// before the limits were checked. VmHWM is reset first (clear_refs 5): the rise is this request's.
TEST(SchemaLimits, AHugeEnumIsRefusedForASmallMultipleOfItsOwnSize) {
  sim::options so;
  so.listen = "127.0.0.1:0";
  test::sim_box sim(so);
  test::child_process gw({"serve", "--listen", "127.0.0.1:0", "--threads", "1", "--upstream", sim.url(), "--log-level", "warn"},
                         {"OPENAI_API_KEY=sk-upstream-test"});
  const auto port = gw.wait_port();
  ASSERT_TRUE(port.has_value()) << gw.output();
  std::string values;
  for (int i = 0; i < 100000; ++i) values += (i ? ",\"v" : "\"v") + std::to_string(100000 + i) + "\"";
  const std::string body = R"({"model":"sim-1","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema",)"
                           R"("json_schema":{"name":"big","schema":{"type":"object","properties":{"x":{"type":"string","enum":[)" +
                           values + "]}}}}}}";
  ASSERT_GT(body.size(), 800000u);
  EXPECT_EQ(test::post_chat(*port, false).result_int(), 200u);  // the allocator's arena warmed
  std::ofstream("/proc/" + std::to_string(gw.pid()) + "/clear_refs") << "5";
  const std::uint64_t before = test::proc_status_kib(gw.pid(), "VmHWM");
  ASSERT_GT(before, 0u);
  auto r = test::call(*port, verb::post, "/v1/chat/completions", body);
  EXPECT_EQ(r.result_int(), 400u) << r.body().substr(0, 300);
  EXPECT_NE(r.body().find("\"param\":\"response_format.json_schema.schema/properties/x/enum\""), std::string::npos)
      << r.body().substr(0, 300);
  const std::uint64_t rise_kib = test::proc_status_kib(gw.pid(), "VmHWM") - before;
  RecordProperty("rss_rise_kib", std::to_string(rise_kib));
  // The body (880 KiB), its parse (~3 MiB: 100,000 values and the parse arena's growth) and the
  // schema's copy out of it (~2 MiB); 8 times the body's size leaves the allocator its slack.
#if defined(__SANITIZE_ADDRESS__)
  constexpr std::uint64_t times = 16;  // ASan's redzones and quarantine of freed blocks count in RSS
#else
  constexpr std::uint64_t times = 8;
#endif
  EXPECT_LE(rise_kib * 1024, times * body.size()) << "peak RSS rose by " << rise_kib << " KiB for a " << body.size() / 1024
                                              << " KiB body";
}
