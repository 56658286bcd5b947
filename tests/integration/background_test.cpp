// Background responses in one process (--queue memory; docs/queue.md), against the simulator:
// create -> retrieve until completed, with the output a direct stream of the same request gives;
// resume a stream after N events (exactly the events after N, in order, ending with
// response.completed); cancel while queued and while running (the upstream sees the close); the
// job slots bound what runs at once; another client key's response is not found.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include <string>
#include <thread>
#include <vector>

#include "app/gateway.hpp"
#include "sim/server.hpp"
#include "process.hpp"
#include "responses_events.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;
using test::bhttp::verb;
using headers = std::vector<std::pair<std::string, std::string>>;
using test::output_text;
using test::open_stream;
using test::parse_events;

namespace {

const std::string kBody = R"({"model":"sim-1","input":"tell me","background":true})";

struct Background : ::testing::Test {
  std::unique_ptr<sim::server> sim;
  std::unique_ptr<app::gateway> gw;
  std::uint16_t port = 0;

  void start(std::uint64_t worker_slots = 8, const std::string& keys_file = "", duration drain_timeout = 30s) {
    sim::options so;
    so.listen = "127.0.0.1:0";
    so.threads = 1;
    so.tokens = 12;
    sim = std::make_unique<sim::server>(so);
    auto sp = sim->start();
    ASSERT_TRUE(sp.has_value()) << sp.err().message;
    app::serve_options go;
    go.http.listen = "127.0.0.1:0";
    go.http.threads = 2;
    go.upstream.urls = {"http://127.0.0.1:" + std::to_string(sp->port())};
    go.routing.max_attempts = 1;
    go.jobs.worker_max_jobs = worker_slots;
    go.admission.keys_file = keys_file;
    go.drain_delay = 0ms;
    go.drain_timeout = drain_timeout;
    auto made = app::gateway::make(go, "sk-upstream");
    ASSERT_TRUE(made.has_value()) << made.err().message;
    gw = std::move(made).value();
    auto gp = gw->start();
    ASSERT_TRUE(gp.has_value()) << gp.err().message;
    port = gp->port();
  }
  void TearDown() override {
    gw.reset();
    sim.reset();
  }

  boost::json::object create(const std::string& body = kBody, headers h = {}) {
    auto r = test::call(port, verb::post, "/v1/responses", body, std::move(h));
    EXPECT_EQ(r.result_int(), 200u) << r.body();
    return boost::json::parse(r.body()).as_object();
  }
  boost::json::object get(const std::string& id, headers h = {}) {
    auto r = test::call(port, verb::get, "/v1/responses/" + id, "", std::move(h));
    EXPECT_EQ(r.result_int(), 200u) << r.body();
    return boost::json::parse(r.body()).as_object();
  }
  std::string status(const std::string& id) { return std::string(get(id).at("status").as_string()); }
  std::string wait_final(const std::string& id) {
    std::string s;
    test::wait_until([&] {
      s = status(id);
      return s != "queued" && s != "in_progress";
    }, 10s);
    return s;
  }
  double metric(const std::string& series) {
    const std::string m = test::call(port, verb::get, "/metrics").body();
    auto pos = m.find("\n" + series + " ");
    return pos == std::string::npos ? -1 : std::strtod(m.c_str() + pos + series.size() + 2, nullptr);
  }
};

}  // namespace

TEST_F(Background, CreateThenRetrieveUntilCompletedGivesWhatADirectStreamGives) {
  start();
  auto created = create();
  const std::string id(created.at("id").as_string());
  EXPECT_EQ(id.rfind("resp_", 0), 0u);
  EXPECT_EQ(created.at("status").as_string(), "queued");
  EXPECT_TRUE(created.at("background").as_bool());
  ASSERT_EQ(wait_final(id), "completed");
  auto done = get(id);
  EXPECT_EQ(done.at("id").as_string(), id) << "the upstream's id is replaced by the gateway's";
  EXPECT_EQ(done.at("created_at"), created.at("created_at"));
  // The job sends the request streamed, without `background`: the same body, directly, streams
  // the same text (the simulator's content is a function of the body).
  auto direct = test::call(port, verb::post, "/v1/responses", R"({"model":"sim-1","input":"tell me","stream":true})");
  ASSERT_EQ(direct.result_int(), 200u);
  auto events = parse_events(direct.body());
  ASSERT_FALSE(events.empty());
  ASSERT_EQ(events.back().type, "response.completed");
  EXPECT_EQ(output_text(done), output_text(events.back().data.at("response").as_object()));
  EXPECT_FALSE(output_text(done).empty());
  EXPECT_EQ(metric("sluice_jobs_total{state=\"completed\"}"), 1);
}

TEST_F(Background, ResumingAfterNGivesExactlyTheEventsAfterN) {
  start();
  const std::string id(create().at("id").as_string());
  ASSERT_EQ(wait_final(id), "completed");
  auto all = parse_events(test::call(port, verb::get, "/v1/responses/" + id + "?stream=true").body());
  ASSERT_GT(all.size(), 8u);
  for (std::size_t i = 1; i < all.size(); ++i) ASSERT_EQ(all[i].seq, all[i - 1].seq + 1) << "no gap, no repeat";
  EXPECT_EQ(all.front().type, "response.created");
  EXPECT_EQ(all.back().type, "response.completed");
  for (std::int64_t n : {std::int64_t{0}, std::int64_t{5}, all.back().seq - 1}) {
    auto rest = parse_events(
        test::call(port, verb::get, "/v1/responses/" + id + "?stream=true&starting_after=" + std::to_string(n)).body());
    ASSERT_EQ(rest.size(), all.size() - static_cast<std::size_t>(n) - 1) << "after " << n;
    EXPECT_EQ(rest.front().seq, n + 1);
    EXPECT_EQ(rest.back().type, "response.completed");
  }
  EXPECT_EQ(test::call(port, verb::get, "/v1/responses/" + id + "?stream=true&starting_after=x").result_int(), 400u);
}

TEST_F(Background, AFollowerSeesTheLiveEventsUntilTheEnd) {
  start();
  // Slow tokens: the follower joins while the job runs and receives the rest as they come.
  const std::string id(create(kBody, {{"x-sim-token-delay", "40ms"}}).at("id").as_string());
  test::wait_until([&] { return status(id) == "in_progress"; }, 5s);
  auto followed = parse_events(test::call(port, verb::get, "/v1/responses/" + id + "?stream=true").body());
  ASSERT_FALSE(followed.empty());
  EXPECT_EQ(followed.front().seq, 0);
  EXPECT_EQ(followed.back().type, "response.completed");
  for (std::size_t i = 1; i < followed.size(); ++i) ASSERT_EQ(followed[i].seq, followed[i - 1].seq + 1);
}

TEST_F(Background, CancelWhileRunningClosesTheUpstream) {
  start();
  const std::string id(create(kBody, {{"x-sim-tokens", "400"}, {"x-sim-token-delay", "50ms"}}).at("id").as_string());
  ASSERT_LT(test::wait_until([&] { return sim->snapshot().active_streams == 1; }, 5s), 5s);
  auto r = test::call(port, verb::post, "/v1/responses/" + id + "/cancel");
  ASSERT_EQ(r.result_int(), 200u) << r.body();
  EXPECT_EQ(boost::json::parse(r.body()).at("status").as_string(), "cancelled");
  const auto took = test::wait_until([&] { return sim->snapshot().streams_aborted == 1; }, 5s);
  EXPECT_LT(took, 1s) << "the upstream is closed at once (the issue asks for 100 ms on an idle machine)";
  EXPECT_EQ(wait_final(id), "cancelled");
  // A follower of a cancelled response gets a stream that ends.
  auto rest = test::call(port, verb::get, "/v1/responses/" + id + "?stream=true");
  EXPECT_EQ(rest.result_int(), 200u);
  EXPECT_EQ(test::call(port, verb::post, "/v1/responses/" + id + "/cancel").result_int(), 200u) << "idempotent";
}

TEST_F(Background, CancelWhileQueuedNeverRuns) {
  start(1);  // one job slot, taken by a long job
  const std::string busy(create(kBody, {{"x-sim-tokens", "400"}, {"x-sim-token-delay", "50ms"}}).at("id").as_string());
  ASSERT_LT(test::wait_until([&] { return sim->snapshot().active_streams == 1; }, 5s), 5s);
  const std::string queued(create().at("id").as_string());
  EXPECT_EQ(status(queued), "queued");
  EXPECT_EQ(metric("sluice_jobs_waiting"), 1);
  ASSERT_EQ(test::call(port, verb::post, "/v1/responses/" + queued + "/cancel").result_int(), 200u);
  EXPECT_EQ(status(queued), "cancelled");
  EXPECT_EQ(metric("sluice_jobs_waiting"), 0);
  ASSERT_EQ(test::call(port, verb::post, "/v1/responses/" + busy + "/cancel").result_int(), 200u);
  EXPECT_EQ(wait_final(busy), "cancelled");
  EXPECT_EQ(sim->snapshot().completion_requests, 1u) << "the cancelled queued job never reached the upstream";
}

TEST_F(Background, WorkerSlotsBoundWhatRunsAtOnce) {
  start(3);
  std::vector<std::string> ids;
  for (int i = 0; i < 12; ++i) ids.emplace_back(create(kBody, {{"x-sim-token-delay", "5ms"}}).at("id").as_string());
  std::uint64_t most = 0;
  test::wait_until([&] {
    most = std::max(most, sim->snapshot().active_streams);
    return metric("sluice_jobs_total{state=\"completed\"}") == 12;
  }, 20s);
  EXPECT_LE(most, 3u);
  for (const auto& id : ids) EXPECT_EQ(status(id), "completed");
}

TEST_F(Background, AnotherKeysResponseIsNotFound) {
  const std::string keys = test::temp_file_with("sk-alice 10 0 alice\nsk-bob 10 0 bob\n");
  start(8, keys);
  const headers alice{{"Authorization", "Bearer sk-alice"}}, bob{{"Authorization", "Bearer sk-bob"}};
  const std::string id(create(kBody, alice).at("id").as_string());
  EXPECT_EQ(test::call(port, verb::get, "/v1/responses/" + id, "", bob).result_int(), 404u);
  EXPECT_EQ(test::call(port, verb::post, "/v1/responses/" + id + "/cancel", "", bob).result_int(), 404u);
  EXPECT_EQ(test::call(port, verb::get, "/v1/responses/" + id).result_int(), 401u);
  EXPECT_EQ(test::call(port, verb::get, "/v1/responses/" + id, "", alice).result_int(), 200u);
  std::remove(keys.c_str());
}

TEST_F(Background, BadRequestsAreRefusedWithTheirField) {
  start();
  auto r = test::call(port, verb::post, "/v1/responses", R"({"model":"sim-1","input":"x","background":"yes"})");
  EXPECT_EQ(r.result_int(), 400u);
  EXPECT_NE(r.body().find("\"param\":\"background\""), std::string::npos) << r.body();
  r = test::call(port, verb::post, "/v1/responses", R"({"model":"sim-1","input":"x","background":true,"store":false})");
  EXPECT_EQ(r.result_int(), 400u);
  EXPECT_NE(r.body().find("\"param\":\"store\""), std::string::npos) << r.body();
  EXPECT_EQ(test::call(port, verb::get, "/v1/responses/resp_nope").result_int(), 404u);
  EXPECT_EQ(test::call(port, verb::get, "/v1/responses/bad%20id").result_int(), 404u);
  EXPECT_EQ(test::call(port, verb::post, "/v1/responses/resp_x").result_int(), 405u);
}

TEST_F(Background, AClientsStreamIsResumedAfterItLeftExactlyAfterN) {
  start();
  const std::string body = R"({"model":"sim-1","input":"resume a foreground one","stream":true})";
  std::string id;
  std::int64_t n = 0;
  {
    open_stream s(port, body, "x-sim-tokens: 40\r\nx-sim-token-delay: 20ms\r\n");
    s.read_events(6);
    id = s.response_id();
    n = s.last_seq();
    ASSERT_FALSE(id.empty()) << s.got;
  }  // the client leaves mid-stream
  auto rest = parse_events(
      test::call(port, verb::get, "/v1/responses/" + id + "?stream=true&starting_after=" + std::to_string(n)).body());
  ASSERT_FALSE(rest.empty());
  EXPECT_EQ(rest.front().seq, n + 1);
  for (std::size_t i = 1; i < rest.size(); ++i) ASSERT_EQ(rest[i].seq, rest[i - 1].seq + 1);
  EXPECT_EQ(rest.back().type, "response.completed");
  EXPECT_EQ(sim->snapshot().streams_aborted, 0u) << "the upstream stream ran to its end";
  EXPECT_EQ(status(id), "completed");
  test::wait_until([&] { return metric("sluice_recorded_streams_total{state=\"completed\"}") == 1; }, 2s);
  EXPECT_EQ(metric("sluice_recorded_streams_total{state=\"completed\"}"), 1);
}

TEST_F(Background, AStreamNoOneFollowsIsCancelledAfterTheOrphanTimeout) {
  sim::options so;  // started by hand: a short orphan-timeout
  so.listen = "127.0.0.1:0";
  so.tokens = 12;
  sim = std::make_unique<sim::server>(so);
  auto sp = sim->start();
  ASSERT_TRUE(sp.has_value());
  app::serve_options go;
  go.http.listen = "127.0.0.1:0";
  go.http.threads = 1;
  go.upstream.urls = {"http://127.0.0.1:" + std::to_string(sp->port())};
  go.jobs.orphan_timeout = std::chrono::milliseconds(200);
  auto made = app::gateway::make(go, "sk-upstream");
  ASSERT_TRUE(made.has_value()) << made.err().message;
  gw = std::move(made).value();
  auto gp = gw->start();
  ASSERT_TRUE(gp.has_value());
  port = gp->port();
  std::string id;
  {
    open_stream s(port, R"({"model":"sim-1","input":"left alone","stream":true})",
                  "x-sim-tokens: 400\r\nx-sim-token-delay: 20ms\r\n");
    s.read_events(4);
    id = s.response_id();
  }
  ASSERT_LT(test::wait_until([&] { return sim->snapshot().streams_aborted == 1; }, 5s), 5s)
      << "the upstream is closed once no one followed for orphan-timeout";
  EXPECT_EQ(wait_final(id), "cancelled");
  EXPECT_EQ(metric("sluice_recorded_streams_total{state=\"cancelled\"}"), 1);
}

TEST_F(Background, StoreFalseStreamsAreNotKept) {
  start();
  auto r = test::call(port, verb::post, "/v1/responses", R"({"model":"sim-1","input":"not kept","stream":true,"store":false})");
  ASSERT_EQ(r.result_int(), 200u);
  auto events = parse_events(r.body());
  ASSERT_FALSE(events.empty());
  const std::string id(events.front().data.at("response").at("id").as_string());
  EXPECT_EQ(test::call(port, verb::get, "/v1/responses/" + id).result_int(), 404u);
  auto kept = test::call(port, verb::post, "/v1/responses", R"({"model":"sim-1","input":"kept","stream":true})");
  auto kept_events = parse_events(kept.body());
  const std::string kept_id(kept_events.front().data.at("response").at("id").as_string());
  auto stored = get(kept_id);
  EXPECT_EQ(stored.at("status").as_string(), "completed");
  EXPECT_EQ(output_text(stored), output_text(kept_events.back().data.at("response").as_object()));
}

TEST_F(Background, AFollowerCutByTheDrainGetsAnErrorEventToResumeFrom) {
  start(8, "", 300ms);
  const std::string id(create(kBody, {{"x-sim-tokens", "400"}, {"x-sim-token-delay", "20ms"}}).at("id").as_string());
  test::wait_until([&] { return status(id) == "in_progress"; }, 5s);
  std::string followed;
  std::thread follower([&] { followed = test::call(port, verb::get, "/v1/responses/" + id + "?stream=true").body(); });
  ASSERT_LT(test::wait_until([&] { return metric("sluice_response_followers") == 1; }, 5s), 5s);
  gw->drain();  // the job outlives drain-timeout: the cut ends the follower in-band
  follower.join();
  auto events = parse_events(followed);
  ASSERT_FALSE(events.empty()) << followed;
  EXPECT_EQ(events.back().type, "error") << "an SSE error event, not a bare line: " << followed.substr(followed.size() - std::min<std::size_t>(followed.size(), 300));
  EXPECT_NE(events.back().data.at("message").as_string().find("starting_after"), boost::json::string::npos);
  for (std::size_t i = 1; i < events.size(); ++i) ASSERT_EQ(events[i].seq, events[i - 1].seq + 1);
}
