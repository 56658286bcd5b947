// What Redis holds under --queue redis (docs/queue.md, docs/security.md), against a real
// redis-server: a started job's request leaves Redis; the fleet's bytes are bounded
// (redis-response-bytes: 503 with Retry-After past it, room again once responses' retention ends);
// no client credential or cookie is ever stored in clear, and a pass-through job still reaches the
// upstream with the client's key; Redis's eviction policy is checked at start; a response deleted
// under its follower is counted and ended in-band.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "process.hpp"
#include "queue_fleet.hpp"
#include "recording_upstream.hpp"
#include "redis_server.hpp"
#include "responses_events.hpp"
#include "serve_node.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;
using test::bhttp::verb;
using headers = std::vector<std::pair<std::string, std::string>>;
using test::parse_events;

namespace {

using node = test::serve_node;

struct RedisHolds : test::queue_fleet {
  // Every value under the prefix, whatever its type (hash fields, stream entries, members, strings).
  std::string everything_stored() const {
    std::string all;
    std::istringstream keys(redis_cli("--scan --pattern 'sluice:*'"));
    for (std::string key; std::getline(keys, key);) {
      if (key.empty()) continue;
      const std::string type = redis_cli("TYPE '" + key + "'");
      const std::string q = " '" + key + "'";
      if (type == "hash") all += redis_cli("HGETALL" + q);
      else if (type == "stream") all += redis_cli("XRANGE" + q + " - +");
      else if (type == "zset") all += redis_cli("ZRANGE" + q + " 0 -1 WITHSCORES");
      else if (type == "set") all += redis_cli("SMEMBERS" + q);
      else if (type == "list") all += redis_cli("LRANGE" + q + " 0 -1");
      else all += redis_cli("GET" + q);
      all += "\n" + key + "\n";
    }
    return all;
  }
  std::string hash_of(const std::string& id) const { return redis_cli("HGETALL 'sluice:{resp:" + id + "}'"); }
  bool has_field(const std::string& id, const std::string& field) const {
    return redis_cli("HEXISTS 'sluice:{resp:" + id + "}' " + field) == "1";
  }
};

std::string id_of(const test::bhttp::response<test::bhttp::string_body>& r) {
  if (r.result_int() != 200) return "";
  auto v = boost::json::parse(r.body());
  return std::string(v.at("id").as_string());
}

// (`h`: the credential the response was created with; it belongs to that tenant: docs/security.md.)
std::string status_of(node& n, const std::string& id, const headers& h = {}) {
  n.p.pump(0);
  auto r = test::call(n.port, verb::get, "/v1/responses/" + id, "", h);
  if (r.result_int() != 200) return "?";
  return std::string(boost::json::parse(r.body()).at("status").as_string());
}

std::string wait_final(node& n, const std::string& id, const headers& h = {}, std::chrono::milliseconds limit = 15s) {
  std::string s;
  test::wait_until([&] {
    s = status_of(n, id, h);
    return s != "queued" && s != "in_progress" && s != "?";
  }, limit);
  return s;
}

// A background request whose input is `bytes` long.
std::string big_body(std::size_t bytes) {
  return R"({"model":"sim-1","background":true,"input":")" + std::string(bytes, 'x') + R"("})";
}

// A Responses stream the recording upstream answers with (two lifecycle events).
std::string responses_stream() {
  const std::string body =
      "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"up_1\","
      "\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}\n\n"
      "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1,\"response\":{\"id\":\"up_1\","
      "\"object\":\"response\",\"status\":\"completed\",\"output\":[]}}\n\n";
  return test::recording_upstream::response(200, body, "", "text/event-stream");
}

const std::string kSecret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const std::string kClientKey = "sk-client-own-7f3a9c21d4e8b6";
const std::string kCookie = "session=cookie-5b1e90aa77";
const std::string kApiKey = "xkey-92c4410f0e";

}  // namespace

TEST_F(RedisHolds, AStartedJobsRequestLeavesRedis) {
  auto a = front();
  auto w = worker();
  auto r = test::call(a->port, verb::post, "/v1/responses", big_body(200 * 1024));
  const std::string id = id_of(r);
  ASSERT_FALSE(id.empty()) << r.body();
  ASSERT_EQ(wait_final(*a, id), "completed");
  EXPECT_FALSE(has_field(id, "body")) << "a finished job keeps no copy of its request body";
  EXPECT_FALSE(has_field(id, "hdr"));
  EXPECT_TRUE(has_field(id, "obj"));
  EXPECT_LT(hash_of(id).size(), 20u * 1024) << "the hash holds the object, not the 200 KiB input";
}

TEST_F(RedisHolds, PastRedisResponseBytesANewJobIsRefusedUntilOldOnesExpire) {
  // 100 KiB of ledger: three 30 KiB requests fit while no worker runs them, a fourth does not.
  auto a = front({"--redis-response-bytes", "100KiB", "--response-max-bytes", "16KiB"});
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto r = test::call(a->port, verb::post, "/v1/responses", big_body(30 * 1024));
    ids.push_back(id_of(r));
    ASSERT_FALSE(ids.back().empty()) << r.body();
  }
  auto refused = test::call(a->port, verb::post, "/v1/responses", big_body(30 * 1024));
  ASSERT_EQ(refused.result_int(), 503u) << refused.body();
  EXPECT_FALSE(refused[test::bhttp::field::retry_after].empty());
  auto err = boost::json::parse(refused.body()).at("error").as_object();
  EXPECT_NE(std::string(err.at("message").as_string()).find("full"), std::string::npos);
  EXPECT_EQ(a->metric("sluice_jobs_refused_total{reason=\"store_full\"}"), 1);
  EXPECT_LT(test::wait_until([&] { return a->metric("sluice_queue_redis_bytes") >= 80 * 1024; }, 5s), 5s);
  EXPECT_EQ(a->metric("sluice_queue_redis_bytes_limit"), 100 * 1024);
  // A worker runs them; each then counts what it holds (object and events) for its retention.
  auto w = worker({"--response-retention", "1s"});
  for (const auto& id : ids) ASSERT_EQ(wait_final(*a, id), "completed");
  // Retention over: their bytes stop counting, and new jobs fit again.
  EXPECT_LT(test::wait_until([&] { return a->metric("sluice_queue_redis_bytes") == 0; }, 10s), 10s);
  for (int i = 0; i < 3; ++i) {
    auto r = test::call(a->port, verb::post, "/v1/responses", big_body(30 * 1024));
    EXPECT_EQ(r.result_int(), 200u) << r.body();
  }
}

TEST_F(RedisHolds, NoClientCredentialRestsInRedisAndAPassThroughJobStillCarriesIt) {
  test::recording_upstream up([](const test::recording_upstream::seen&) { return responses_stream(); });
  auto with_upstream = [&](std::vector<std::string> a) {
    for (std::size_t i = 0; i + 1 < a.size(); ++i)
      if (a[i] == "--upstream") a[i + 1] = up.url();
    return a;
  };
  // Pass-through: no client keys, no upstream key; the fleet shares a queue secret.
  const std::vector<std::string> env{"SLUICE_QUEUE_SECRET=" + kSecret};
  node a(with_upstream(args("front")), env);
  const headers h{{"Authorization", "Bearer " + kClientKey}, {"Cookie", kCookie}, {"X-Api-Key", kApiKey},
                  {"Proxy-Authorization", "Basic " + kApiKey}};
  auto r = test::call(a.port, verb::post, "/v1/responses", big_body(16), h);
  const std::string id = id_of(r);
  ASSERT_FALSE(id.empty()) << r.body();
  // Queued, nobody ran it yet: the key travels sealed only.
  std::string stored = everything_stored();
  EXPECT_NE(stored.find(id), std::string::npos) << "the scan sees the job";
  EXPECT_EQ(stored.find(kClientKey), std::string::npos) << stored;
  EXPECT_EQ(stored.find("cookie-5b1e90aa77"), std::string::npos);
  EXPECT_EQ(stored.find(kApiKey), std::string::npos);
  EXPECT_TRUE(has_field(id, "sec"));
  node w(with_upstream(args("worker")), env);
  ASSERT_EQ(wait_final(a, id, h), "completed");
  std::vector<test::recording_upstream::seen> posts;
  for (auto& s : up.requests())
    if (s.head.rfind("POST ", 0) == 0) posts.push_back(s);
  ASSERT_EQ(posts.size(), 1u);
  EXPECT_EQ(posts[0].header("authorization"), "Bearer " + kClientKey) << "the client's own key reached the upstream";
  EXPECT_EQ(posts[0].header("cookie"), "");
  stored = everything_stored();
  EXPECT_EQ(stored.find(kClientKey), std::string::npos);
  EXPECT_FALSE(has_field(id, "sec")) << "the sealed key left Redis once the job started";
  // A front without the fleet's secret refuses such a job rather than store the key in clear.
  node bare(with_upstream(args("front")), {});
  auto refused = test::call(bare.port, verb::post, "/v1/responses", big_body(16), h);
  EXPECT_EQ(refused.result_int(), 503u) << refused.body();
  EXPECT_NE(refused.body().find("queue_secret_missing"), std::string::npos) << refused.body();
  EXPECT_EQ(everything_stored().find(kClientKey), std::string::npos);
}

TEST_F(RedisHolds, AnEvictingRedisIsWarnedOfOrRefusedAtStart) {
  test::redis_server evicting({"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"});
  ASSERT_TRUE(evicting.running());
  auto on = [&](std::vector<std::string> a) {
    for (std::size_t i = 0; i + 1 < a.size(); ++i)
      if (a[i] == "--redis") a[i + 1] = "redis://127.0.0.1:" + std::to_string(evicting.port());
    return a;
  };
  node warned(on(args("front")));
  EXPECT_TRUE(warned.logged("maxmemory-policy noeviction")) << warned.p.output();
  EXPECT_TRUE(warned.logged("allkeys-lru"));
  test::child_process refused(on(args("front", {"--redis-eviction-check", "refuse"})), {"OPENAI_API_KEY=sk-upstream-test"});
  EXPECT_EQ(refused.signal_and_wait(0, 20s), 1) << refused.output();
  EXPECT_NE(refused.output().find("allkeys-lru"), std::string::npos) << refused.output();
  // The fleet's own Redis (noeviction) starts quietly, even under refuse.
  node quiet(args("front", {"--redis-eviction-check", "refuse"}));
  EXPECT_NE(quiet.port, 0);
  EXPECT_FALSE(quiet.logged("maxmemory-policy noeviction"));
}

TEST_F(RedisHolds, AResponseDeletedUnderItsFollowerIsCountedAndEndedInBand) {
  auto a = front();
  auto w = worker();
  auto r = test::call(a->port, verb::post, "/v1/responses",
                      R"({"model":"sim-1","input":"tell me","background":true})",
                      {{"x-sim-tokens", "400"}, {"x-sim-token-delay", "20ms"}});
  const std::string id = id_of(r);
  ASSERT_FALSE(id.empty()) << r.body();
  ASSERT_LT(test::wait_until([&] { return status_of(*a, id) == "in_progress"; }, 10s), 10s);
  std::string followed;
  std::thread follower([&followed, port = a->port, id] {
    followed = test::call(port, verb::get, "/v1/responses/" + id + "?stream=true").body();
  });
  ASSERT_LT(test::wait_until([&] { return a->metric("sluice_response_followers") >= 1; }, 5s), 5s);
  EXPECT_EQ(a->metric("sluice_jobs_vanished_total{what=\"response\"}"), 0);
  redis_cli("DEL 'sluice:{resp:" + id + "}' 'sluice:{resp:" + id + "}:ev'");
  follower.join();
  auto events = parse_events(followed);
  ASSERT_FALSE(events.empty()) << followed;
  EXPECT_EQ(events.back().type, "error") << "never a silent end";
  EXPECT_EQ(a->metric("sluice_jobs_vanished_total{what=\"response\"}"), 1);
  EXPECT_TRUE(a->logged("response missing from redis"));
  // The worker stops the job it no longer owns.
  EXPECT_LT(test::wait_until([&] { return w->metric("sluice_jobs_running") == 0; }, 10s), 10s);
}
