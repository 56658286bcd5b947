// Background responses through Redis (--queue redis; docs/queue.md): fronts and workers as separate
// `sluice serve` processes around one real redis-server (a free loopback port) and the simulator.
// Create on one front, retrieve and resume on another; cancel while queued and while running (the
// upstream sees the close); a worker never runs more than worker-max-jobs; a worker killed with -9
// after starting a job fails it `worker_lost` for its followers, one that died before starting it has
// it claimed by another worker; Redis down answers 503 and recovers.
#include <gtest/gtest.h>

#include <signal.h>

#include <boost/json/parse.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "process.hpp"
#include "queue_fleet.hpp"
#include "responses_events.hpp"
#include "redis_server.hpp"
#include "serve_node.hpp"
#include "sim/server.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;
using test::bhttp::verb;
using headers = std::vector<std::pair<std::string, std::string>>;
using test::output_text;
using test::parse_events;

namespace {

const std::string kBody = R"({"model":"sim-1","input":"tell me","background":true})";

using node = test::serve_node;

struct Queue : test::queue_fleet {};

// Each call first reads what the node logged: a child whose output pipe fills up blocks.
boost::json::object create(node& n, const std::string& body = kBody, headers h = {}) {
  n.p.pump(0);
  auto r = test::call(n.port, verb::post, "/v1/responses", body, std::move(h));
  EXPECT_EQ(r.result_int(), 200u) << r.body();
  if (r.result_int() != 200) return {};
  return boost::json::parse(r.body()).as_object();
}
boost::json::object get(node& n, const std::string& id) {
  n.p.pump(0);
  auto r = test::call(n.port, verb::get, "/v1/responses/" + id);
  EXPECT_EQ(r.result_int(), 200u) << r.body();
  if (r.result_int() != 200) return {};
  return boost::json::parse(r.body()).as_object();
}
std::string status(node& n, const std::string& id) {
  auto o = get(n, id);
  return o.contains("status") ? std::string(o.at("status").as_string()) : std::string("?");
}
std::string wait_final(node& n, const std::string& id, std::chrono::milliseconds limit = 15s) {
  std::string s;
  test::wait_until([&] {
    std::this_thread::sleep_for(5ms);
    s = status(n, id);
    return s != "queued" && s != "in_progress";
  }, limit);
  return s;
}
std::string id_of(const boost::json::object& o) { return o.contains("id") ? std::string(o.at("id").as_string()) : ""; }

// A long job (400 tokens, 20 ms apart) running, and a client following its events on front `n`:
// `follower` fills `followed` with what the client read once the stream ends (join it).
std::string follow_a_long_job(node& n, std::thread& follower, std::string& followed) {
  const std::string id = id_of(create(n, kBody, {{"x-sim-tokens", "400"}, {"x-sim-token-delay", "20ms"}}));
  EXPECT_LT(test::wait_until([&] { return status(n, id) == "in_progress"; }, 10s), 10s);
  follower = std::thread([&followed, port = n.port, id] {
    followed = test::call(port, verb::get, "/v1/responses/" + id + "?stream=true").body();
  });
  // Reading by now: the front counts it among the followers.
  EXPECT_LT(test::wait_until([&] { return n.metric("sluice_response_followers") >= 1; }, 5s), 5s);
  return id;
}

}  // namespace

TEST_F(Queue, CreatedOnOneFrontRunByAWorkerRetrievedOnAnotherGivesWhatADirectStreamGives) {
  auto a = front(), b = front();
  auto w = worker();
  auto created = create(*a);
  const std::string id = id_of(created);
  ASSERT_EQ(id.rfind("resp_", 0), 0u);
  EXPECT_EQ(created.at("status").as_string(), "queued");
  ASSERT_EQ(wait_final(*b, id), "completed");
  auto done = get(*b, id);
  EXPECT_EQ(done.at("id").as_string(), id);
  EXPECT_EQ(done.at("created_at"), created.at("created_at"));
  auto direct = test::call(sim->port(), verb::post, "/v1/responses", R"({"model":"sim-1","input":"tell me","stream":true})");
  ASSERT_EQ(direct.result_int(), 200u);
  auto events = parse_events(direct.body());
  ASSERT_FALSE(events.empty());
  ASSERT_EQ(events.back().type, "response.completed");
  EXPECT_FALSE(output_text(done).empty());
  EXPECT_EQ(output_text(done), output_text(events.back().data.at("response").as_object()));
  // (Counted once the worker let go of its lease, just after the final status is stored.)
  EXPECT_LT(test::wait_until([&] { return w->metric("sluice_jobs_total{state=\"completed\"}") == 1; }, 5s), 5s);
  EXPECT_EQ(a->metric("sluice_jobs_total{state=\"completed\"}"), 0) << "a front runs no jobs";
  EXPECT_TRUE(w->logged("\"msg\":\"job completed\""));
  // The worker serves probes and metrics only.
  auto refused = test::call(w->port, verb::post, "/v1/responses", kBody);
  EXPECT_EQ(refused.result_int(), 404u);
  EXPECT_NE(refused.body().find("--role worker"), std::string::npos);
  EXPECT_EQ(test::call(w->port, verb::get, "/readyz").result_int(), 200u);
}

TEST_F(Queue, ResumingOnAnotherFrontGivesExactlyTheEventsAfterN) {
  auto a = front(), b = front();
  auto w = worker();
  // Background and streamed: the client follows its job from the start, on front a.
  auto live = test::call(a->port, verb::post, "/v1/responses", R"({"model":"sim-1","input":"tell me","background":true,"stream":true})",
                         {{"x-sim-token-delay", "20ms"}});
  ASSERT_EQ(live.result_int(), 200u) << live.body();
  auto all = parse_events(live.body());
  ASSERT_GT(all.size(), 8u);
  for (std::size_t i = 1; i < all.size(); ++i) ASSERT_EQ(all[i].seq, all[i - 1].seq + 1) << "no gap, no repeat";
  EXPECT_EQ(all.front().type, "response.created");
  ASSERT_EQ(all.back().type, "response.completed");
  const std::string id(all.front().data.at("response").at("id").as_string());
  for (std::int64_t n : {std::int64_t{0}, std::int64_t{5}, all.back().seq - 1}) {
    auto rest = parse_events(
        test::call(b->port, verb::get, "/v1/responses/" + id + "?stream=true&starting_after=" + std::to_string(n)).body());
    ASSERT_EQ(rest.size(), all.size() - static_cast<std::size_t>(n) - 1) << "after " << n;
    EXPECT_EQ(rest.front().seq, n + 1);
    for (std::size_t i = 1; i < rest.size(); ++i) ASSERT_EQ(rest[i].seq, rest[i - 1].seq + 1);
    EXPECT_EQ(rest.back().type, "response.completed");
  }
  EXPECT_EQ(test::call(b->port, verb::get, "/v1/responses/" + id + "?stream=true&starting_after=-3").result_int(), 400u);
  EXPECT_EQ(test::call(b->port, verb::get, "/v1/responses/resp_00000000000000000000000000000000").result_int(), 404u);
}

TEST_F(Queue, AFollowerOnAnotherFrontSeesTheLiveEventsUntilTheEnd) {
  auto a = front(), b = front();
  auto w = worker();
  const std::string id = id_of(create(*a, kBody, {{"x-sim-token-delay", "40ms"}}));
  ASSERT_LT(test::wait_until([&] { return status(*b, id) == "in_progress"; }, 10s), 10s);
  auto followed = parse_events(test::call(b->port, verb::get, "/v1/responses/" + id + "?stream=true").body());
  ASSERT_FALSE(followed.empty());
  EXPECT_EQ(followed.front().seq, 0);
  EXPECT_EQ(followed.back().type, "response.completed");
  for (std::size_t i = 1; i < followed.size(); ++i) ASSERT_EQ(followed[i].seq, followed[i - 1].seq + 1);
}

TEST_F(Queue, CancelWhileQueuedNeverRunsAndWhileRunningClosesTheUpstream) {
  auto a = front();
  auto w = worker({"--worker-max-jobs", "1"});
  const std::string busy = id_of(create(*a, kBody, {{"x-sim-tokens", "400"}, {"x-sim-token-delay", "50ms"}}));
  ASSERT_LT(test::wait_until([&] { return sim->snapshot().active_streams == 1; }, 10s), 10s);
  const std::string queued = id_of(create(*a));
  EXPECT_EQ(status(*a, queued), "queued");
  auto r = test::call(a->port, verb::post, "/v1/responses/" + queued + "/cancel");
  ASSERT_EQ(r.result_int(), 200u) << r.body();
  EXPECT_EQ(boost::json::parse(r.body()).at("status").as_string(), "cancelled");
  EXPECT_EQ(status(*a, queued), "cancelled");
  r = test::call(a->port, verb::post, "/v1/responses/" + busy + "/cancel");
  ASSERT_EQ(r.result_int(), 200u) << r.body();
  const auto took = test::wait_until([&] { return sim->snapshot().streams_aborted == 1; }, 5s);
  EXPECT_LT(took, 2s) << "the worker closes the upstream at its next cancel poll (50 ms on an idle machine)";
  EXPECT_EQ(wait_final(*a, busy), "cancelled");
  // The slot freed: the cancelled queued job is skipped, never sent upstream.
  ASSERT_LT(test::wait_until([&] { return w->metric("sluice_jobs_running") == 0; }, 5s), 5s);
  EXPECT_EQ(sim->snapshot().completion_requests, 1u) << "the cancelled queued job never reached the upstream";
  auto again = test::call(a->port, verb::post, "/v1/responses/" + busy + "/cancel");
  EXPECT_EQ(again.result_int(), 200u) << "cancelling a cancelled response answers it again";
  auto rest = test::call(a->port, verb::get, "/v1/responses/" + busy + "?stream=true");
  EXPECT_EQ(rest.result_int(), 200u) << "a follower of a cancelled response gets a stream that ends";
}

TEST_F(Queue, AWorkerNeverRunsMoreThanItsSlotsAndEveryJobCompletes) {
  auto a = front();
  auto w1 = worker({"--worker-max-jobs", "2"});
  auto w2 = worker({"--worker-max-jobs", "3"});
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(id_of(create(*a, kBody, {{"x-sim-token-delay", "5ms"}})));
  double most1 = 0, most2 = 0;
  std::uint64_t most_upstream = 0;
  test::wait_until([&] {
    most1 = std::max(most1, w1->metric("sluice_jobs_running"));
    most2 = std::max(most2, w2->metric("sluice_jobs_running"));
    most_upstream = std::max(most_upstream, sim->snapshot().active_streams);
    return w1->metric("sluice_jobs_total{state=\"completed\"}") + w2->metric("sluice_jobs_total{state=\"completed\"}") == 20;
  }, 30s);
  EXPECT_LE(most1, 2);
  EXPECT_LE(most2, 3);
  EXPECT_LE(most_upstream, 5u);
  for (const auto& id : ids) EXPECT_EQ(status(*a, id), "completed");
  EXPECT_EQ(sim->snapshot().completion_requests, 20u) << "no job ran twice";
  EXPECT_GT(w1->metric("sluice_jobs_total{state=\"completed\"}"), 0);
  EXPECT_GT(w2->metric("sluice_jobs_total{state=\"completed\"}"), 0);
  test::wait_until([&] { return a->metric("sluice_queue_jobs_waiting") == 0; }, 5s);
  EXPECT_EQ(a->metric("sluice_queue_jobs_waiting"), 0) << "the front samples the fleet's queue";
}

// The fleet's queue length is one reading every process of a pod takes from Redis: the pod's merged
// /metrics shows it once (the max), not once per process (docs/processes.md#metrics).
TEST_F(Queue, APodOfTwoProcessesShowsTheFleetsQueueOnceNotTwice) {
  auto a = front({"--processes", "2"});
  ASSERT_LT(test::wait_until([&] { return a->metric("sluice_worker_processes") == 2; }, 10s), 10s);
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(id_of(create(*a)).empty());  // no worker: they stay queued
  // Each process reads the length every second: await the first reading, then both processes'
  // next ones (2.5 s of scrapes) must leave the pod's figure at 3; summed, it would turn 6.
  ASSERT_LT(test::wait_until([&] { return a->metric("sluice_queue_jobs_waiting") == 3; }, 10s), 10s);
  EXPECT_EQ(redis_cli("XLEN 'sluice:{jobs}'"), "3") << "the queue itself";
  double seen = 3;
  EXPECT_GT(test::wait_until([&] { return (seen = a->metric("sluice_queue_jobs_waiting")) != 3; }, 2500ms), 2500ms)
      << "the pod read " << seen;
}

TEST_F(Queue, AWorkerKilledDuringAJobFailsItWorkerLostForItsFollowersWithinTheLossTimeout) {
  // redis-lease stays 30 s: detection rides on worker-loss-timeout (1 s here) alone. Any process
  // may reap: the front and the second worker both look every third of their own timeout.
  auto a = front();
  auto w1 = worker({"--worker-loss-timeout", "1s"});
  // A follower that is reading when the worker dies.
  std::string followed;
  std::thread follower;
  const std::string id = follow_a_long_job(*a, follower, followed);
  // The second worker starts once w1 runs the job: started before, it could take the job itself,
  // and the kill of w1 below would then cut nothing (the job completed: seen once in CI).
  auto w2 = worker();
  // The front has reached Redis at every heartbeat for a whole timeout of its own (3 s, beats every
  // second): its reap gate is open, so what lapses now is a death, not an outage (jobs::reap_gate).
  ASSERT_LT(test::wait_until([&] { return a->metric("sluice_jobs_heartbeats_total{outcome=\"ok\"}") >= 4; }, 10s), 10s);
  ::kill(w1->p.pid(), SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  follower.join();
  const auto heard = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed);
  std::printf("background follower: worker_lost %lld ms after kill -9 (worker-loss-timeout 1s)\n",
              static_cast<long long>(heard.count()));
  // The lease lapses within 1 s, a reaper looks within 1 s more; the rest is slack for a loaded
  // machine. Well under the 30 s redis-lease (the 400-token job alone runs 8 s).
  EXPECT_LT(heard, 5s);
  auto events = parse_events(followed);
  ASSERT_FALSE(events.empty()) << followed;
  EXPECT_EQ(events.back().type, "error");
  EXPECT_EQ(events.back().data.at("code").as_string(), "worker_lost");
  for (std::size_t i = 1; i < events.size(); ++i) ASSERT_EQ(events[i].seq, events[i - 1].seq + 1) << "no gap, no repeat";
  auto done = get(*a, id);
  EXPECT_EQ(done.at("status").as_string(), "failed");
  EXPECT_EQ(done.at("error").at("code").as_string(), "worker_lost");
  auto lost = [&] { return a->metric("sluice_jobs_lost_total") + w2->metric("sluice_jobs_lost_total"); };
  EXPECT_LT(test::wait_until([&] { return lost() == 1; }, 5s), 5s) << lost();
  EXPECT_TRUE(a->logged("failed jobs whose worker stopped (worker_lost)") ||
              w2->logged("failed jobs whose worker stopped (worker_lost)"));
  EXPECT_GE(a->metric("sluice_jobs_heartbeats_total{outcome=\"ok\"}"), 1);
  EXPECT_EQ(sim->snapshot().completion_requests, 1u) << "a started job is not run again";
}

TEST_F(Queue, AJobAWorkerTookAndNeverStartedIsClaimedByAnotherAfterALease) {
  auto a = front();
  // A worker that takes the job and dies before starting it: a consumer of the group that reads
  // the entry and never acknowledges it.
  ASSERT_EQ(redis_cli("XGROUP CREATE 'sluice:{jobs}' workers 0 MKSTREAM"), "OK");
  const std::string id = id_of(create(*a));
  const std::string taken = redis_cli("XREADGROUP GROUP workers ghost COUNT 1 STREAMS 'sluice:{jobs}' '>'");
  ASSERT_NE(taken.find(id), std::string::npos) << taken;
  auto w = std::make_unique<node>(args("worker", {"--redis-lease", "1s"}));
  ASSERT_EQ(wait_final(*a, id), "completed");
  EXPECT_EQ(w->metric("sluice_jobs_claimed_total"), 1);
  EXPECT_TRUE(w->logged("claimed jobs a dead worker had taken and never started"));
  EXPECT_EQ(sim->snapshot().completion_requests, 1u);
  EXPECT_EQ(redis_cli("XLEN 'sluice:{jobs}'"), "0") << "a started job leaves the queue";
}

TEST_F(Queue, RedisDownIsA503ThenEverythingRecovers) {
  auto a = front({"--redis-command-timeout", "200ms"});
  auto w = worker({"--redis-command-timeout", "200ms"});
  const std::string before = id_of(create(*a));
  ASSERT_EQ(wait_final(*a, before), "completed");
  redis->kill();
  auto r = test::call(a->port, verb::post, "/v1/responses", kBody);
  EXPECT_EQ(r.result_int(), 503u) << r.body();
  EXPECT_NE(r.body().find("job queue is unavailable"), std::string::npos);
  EXPECT_FALSE(r[test::bhttp::field::retry_after].empty());
  EXPECT_EQ(test::call(a->port, verb::get, "/v1/responses/" + before).result_int(), 503u);
  EXPECT_GE(a->metric("sluice_queue_redis_errors_total{op=\"create\"}"), 1);
  // (A request is counted just after its answer is written: awaited, not read at once.)
  EXPECT_LT(test::wait_until([&] { return a->metric("sluice_rejections_total{reason=\"queue_unavailable\"}") >= 1; }, 5s), 5s);
  // Back (empty, as a restarted Redis without persistence is): new jobs run again; the worker
  // makes its consumer group anew.
  ASSERT_TRUE(redis->start());
  // Every thread's connection is remade (2 threads each).
  ASSERT_LT(test::wait_until([&] { return a->metric("sluice_redis_connected") == 2 && w->metric("sluice_redis_connected") == 2; },
                             15s),
            15s);
  const std::string id = id_of(create(*a));
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(wait_final(*a, id), "completed");
  EXPECT_TRUE(a->logged("redis connected"));
}

TEST_F(Queue, AFollowerGetsAnInBandErrorWhenRedisStaysDown) {
  auto a = front({"--redis-command-timeout", "200ms"});
  auto w = worker({"--redis-command-timeout", "200ms"});
  std::string followed;
  std::thread follower;
  const std::string id = follow_a_long_job(*a, follower, followed);
  redis->kill();
  follower.join();
  auto events = parse_events(followed);
  ASSERT_FALSE(events.empty()) << followed;
  EXPECT_EQ(events.back().type, "error") << "never a silent end";
  EXPECT_NE(events.back().data.at("message").as_string().find("starting_after"), boost::json::string::npos);
}

TEST_F(Queue, RedisRestartedMidRunEndsFollowersInBandAndNewJobsRun) {
  auto a = front({"--redis-command-timeout", "200ms"});
  auto w = worker({"--redis-command-timeout", "200ms"});
  std::string followed;
  std::thread follower;
  const std::string id = follow_a_long_job(*a, follower, followed);
  // Restarted without its data: the response's keys are gone under its follower and its worker.
  redis->kill();
  ASSERT_TRUE(redis->start());
  follower.join();
  auto events = parse_events(followed);
  ASSERT_FALSE(events.empty()) << followed;
  EXPECT_EQ(events.back().type, "error") << "never a hang, never a silent end";
  for (std::size_t i = 1; i < events.size(); ++i) ASSERT_EQ(events[i].seq, events[i - 1].seq + 1);
  // The worker stops the job it can no longer store, and takes new ones.
  ASSERT_LT(test::wait_until([&] { return w->metric("sluice_jobs_running") == 0; }, 10s), 10s);
  ASSERT_LT(test::wait_until([&] { return a->metric("sluice_redis_connected") == 2 && w->metric("sluice_redis_connected") == 2; }, 15s),
            15s);
  const std::string next = id_of(create(*a));
  ASSERT_FALSE(next.empty());
  EXPECT_EQ(wait_final(*a, next), "completed");
}

TEST_F(Queue, AClientsOwnStreamResumesOnAnotherFrontWhoseFollowerOutlivesTheOrphanTimeout) {
  auto a = front({"--orphan-timeout", "300ms"});
  auto b = front();
  auto w = worker();  // runs the stream as a foreground job; front a relays and records it
  const std::string body = R"({"model":"sim-1","input":"resume a foreground one elsewhere","stream":true})";
  std::string id;
  std::int64_t n = 0;
  {
    test::open_stream s(a->port, body, "x-sim-tokens: 60\r\nx-sim-token-delay: 25ms\r\n");
    s.read_events(6);
    id = s.response_id();
    n = s.last_seq();
    ASSERT_FALSE(id.empty()) << s.got;
  }  // the client leaves front a mid-stream
  // It reconnects to front b: the rest of the stream, which runs on (about 1.4 s, far past a's
  // orphan-timeout) because someone follows it there.
  auto rest = parse_events(
      test::call(b->port, verb::get, "/v1/responses/" + id + "?stream=true&starting_after=" + std::to_string(n)).body());
  ASSERT_FALSE(rest.empty());
  EXPECT_EQ(rest.front().seq, n + 1);
  for (std::size_t i = 1; i < rest.size(); ++i) ASSERT_EQ(rest[i].seq, rest[i - 1].seq + 1);
  EXPECT_EQ(rest.back().type, "response.completed");
  EXPECT_EQ(sim->snapshot().streams_aborted, 0u) << "the upstream stream ran to its end";
  EXPECT_EQ(status(*b, id), "completed");
  // Only background responses can be cancelled, on any front.
  EXPECT_EQ(test::call(b->port, verb::post, "/v1/responses/" + id + "/cancel").result_int(), 400u);
}

TEST_F(Queue, AClientsOwnStreamNobodyFollowsAnywhereIsCancelledAfterTheOrphanTimeout) {
  auto a = front({"--orphan-timeout", "300ms"});
  auto b = front();
  auto w = worker();
  std::string id;
  {
    test::open_stream s(a->port, R"({"model":"sim-1","input":"left alone","stream":true})",
                        "x-sim-tokens: 200\r\nx-sim-token-delay: 20ms\r\n");
    s.read_events(6);
    id = s.response_id();
    ASSERT_FALSE(id.empty()) << s.got;
  }  // the client leaves; no one follows it, here or on b
  ASSERT_LT(test::wait_until([&] { return sim->snapshot().streams_aborted == 1; }, 5s), 5s)
      << "the upstream is closed once no one followed for orphan-timeout (the mirror into Redis is no follower)";
  EXPECT_EQ(wait_final(*b, id), "cancelled") << "and every front says so";
}
