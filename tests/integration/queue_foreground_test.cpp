// Foreground requests through the queue (--queue redis, --role front; docs/queue.md): a front whose
// own upstream is unreachable serves chat, completions and Responses requests, streamed and whole,
// through a worker, and the client sees what the upstream's answer is; a client that leaves
// cancels its job (the upstream sees the close); queue-depth and queue-timeout hold for the fleet's
// queue (503 with Retry-After); a worker killed with -9 mid-stream ends the client's stream with an
// in-band worker_lost error; POST /v1/messages is served the same way in its dialect. Fronts and workers are separate processes around a real redis-server.
#include <gtest/gtest.h>

#include <signal.h>

#include <boost/json/parse.hpp>

#include <cstdio>
#include <string>
#include <thread>

#include "process.hpp"
#include "queue_fleet.hpp"
#include "responses_events.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;
using test::bhttp::verb;
using test::parse_events;

namespace {

struct QueueForeground : test::queue_fleet {
  // A front with no upstream of its own: nothing listens on port 1.
  std::unique_ptr<node> bare_front(std::vector<std::string> more = {}) {
    auto a = args("front", std::move(more));
    auto up = std::find(a.begin(), a.end(), "--upstream");
    *(up + 1) = "http://127.0.0.1:1";
    return std::make_unique<node>(std::move(a));
  }
};

// The text of a chat stream: its deltas' content, in order; and whether it ended with [DONE].
std::string chat_stream_text(const std::string& body, bool& done) {
  std::string text;
  done = false;
  std::size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    pos += 6;
    const auto end = body.find('\n', pos);
    const std::string data = body.substr(pos, end - pos);
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    boost::system::error_code ec;
    auto v = boost::json::parse(data, ec);
    if (ec || !v.is_object() || !v.as_object().contains("choices")) continue;
    for (const auto& c : v.at("choices").as_array())
      if (const auto* d = c.as_object().if_contains("delta"))
        if (const auto* t = d->as_object().if_contains("content"); t && t->is_string()) text += t->as_string();
  }
  return text;
}

}  // namespace

TEST_F(QueueForeground, AFrontWithNoUpstreamServesStreamsAndWholeAnswersThroughAWorker) {
  auto a = bare_front();
  auto w = worker();
  // A chat stream: what the upstream streams directly, ended by [DONE].
  auto direct = test::post_chat(sim->port(), true);
  auto queued = test::call(a->port, verb::post, "/v1/chat/completions", test::chat_body(true), {{"x-request-id", "req-fg-1"}});
  ASSERT_EQ(queued.result_int(), 200u) << queued.body();
  EXPECT_EQ(queued[test::bhttp::field::content_type], "text/event-stream");
  EXPECT_EQ(queued["x-request-id"], "req-fg-1");
  bool done_direct = false, done_queued = false;
  const std::string want = chat_stream_text(direct.body(), done_direct);
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(chat_stream_text(queued.body(), done_queued), want);
  EXPECT_TRUE(done_queued) << queued.body();
  // A whole chat answer: the same JSON the upstream gives, with its status and content type.
  auto whole = test::post_chat(a->port, false);
  ASSERT_EQ(whole.result_int(), 200u) << whole.body();
  EXPECT_EQ(whole[test::bhttp::field::content_type].substr(0, 16), "application/json");
  auto direct_whole = boost::json::parse(test::post_chat(sim->port(), false).body());
  EXPECT_EQ(boost::json::parse(whole.body()).at("choices"), direct_whole.at("choices"));
  // A Responses stream: every event, numbered without a gap, ending with response.completed.
  auto resp = test::call(a->port, verb::post, "/v1/responses", R"({"model":"sim-1","input":"hi","stream":true})");
  ASSERT_EQ(resp.result_int(), 200u) << resp.body();
  auto events = parse_events(resp.body());
  ASSERT_FALSE(events.empty()) << resp.body();
  EXPECT_EQ(events.back().type, "response.completed");
  for (std::size_t i = 1; i < events.size(); ++i) EXPECT_EQ(events[i].seq, events[i - 1].seq + 1);
  // An upstream's error answer reaches the client as the upstream gave it (the worker relays it).
  auto bad = test::call(a->port, verb::post, "/v1/chat/completions", test::chat_body(false), {{"x-sim-status", "429"}});
  EXPECT_EQ(bad.result_int(), 429u) << bad.body();
  // GET /v1/models too: the worker's upstream lists them.
  auto models = test::call(a->port, verb::get, "/v1/models");
  ASSERT_EQ(models.result_int(), 200u) << models.body();
  EXPECT_TRUE(boost::json::parse(models.body()).at("data").is_array()) << models.body();
  a->p.pump(0);
  EXPECT_EQ(a->metric("sluice_foreground_jobs_total{result=\"completed\"}"), 5);
  EXPECT_EQ(a->metric_sum("sluice_upstream_requests_total"), 0) << "the front never tried its own upstream";
  EXPECT_GE(w->metric_sum("sluice_upstream_requests_total"), 5) << "(the sum sees the worker's)";
  EXPECT_EQ(w->metric("sluice_jobs_total{state=\"completed\"}"), 5);
  // A foreground job is no stored response: its id is unknown to GET (here while it runs).
  std::string job_id;
  std::thread slow([&] {
    (void)test::call(a->port, verb::post, "/v1/chat/completions", test::chat_body(true),
                     {{"x-sim-tokens", "30"}, {"x-sim-token-delay", "20ms"}});
  });
  ASSERT_LT(test::wait_until([&] {
    job_id = redis_cli("--scan --pattern 'sluice:{resp:job_*}'");
    return !job_id.empty();
  }, 5s), 5s);
  job_id = job_id.substr(job_id.find("job_"));
  job_id = job_id.substr(0, job_id.find('}'));
  auto lookup = test::call(a->port, verb::get, "/v1/responses/" + job_id);
  EXPECT_EQ(lookup.result_int(), 404u) << job_id << " " << lookup.body();
  slow.join();
  // Finished jobs' keys are deleted by the front once relayed: nothing is left of them in Redis.
  EXPECT_LT(test::wait_until([&] { return redis_cli("--scan --pattern '*{resp:job_*'").empty(); }, 3s), 3s)
      << redis_cli("--scan --pattern '*{resp:job_*'");
}

// POST /v1/messages (the Anthropic dialect, issue 33) through the fleet's queue: the front adopts
// the request as a chat request and translates what the worker's job log carries back into the
// Messages API, streamed, whole, an upstream's error, and a worker lost mid-stream.
TEST_F(QueueForeground, AMessagesRequestThroughTheQueueIsAnsweredInTheMessagesDialect) {
  auto a = bare_front({"--worker-loss-timeout", "1s"});
  auto w1 = worker({"--worker-loss-timeout", "1s"});
  const std::string ask = R"({"model":"sim-1","max_tokens":64,"messages":[{"role":"user","content":"hi"}])";
  auto streamed = test::call(a->port, verb::post, "/v1/messages", ask + R"(,"stream":true})", {{"x-sim-tokens", "6"}});
  ASSERT_EQ(streamed.result_int(), 200u) << streamed.body();
  auto events = parse_events(streamed.body());
  ASSERT_GE(events.size(), 6u) << streamed.body();
  EXPECT_EQ(events.front().type, "message_start");
  EXPECT_EQ(events.back().type, "message_stop");
  std::string text;
  for (const auto& e : events)
    if (e.type == "content_block_delta") text += e.data.at("delta").at("text").as_string();
  EXPECT_FALSE(text.empty());
  auto whole = test::call(a->port, verb::post, "/v1/messages", ask + "}", {{"x-sim-tokens", "6"}});
  ASSERT_EQ(whole.result_int(), 200u) << whole.body();
  auto message = boost::json::parse(whole.body()).as_object();
  EXPECT_EQ(message.at("type"), "message");
  EXPECT_EQ(message.at("stop_reason"), "end_turn");
  EXPECT_EQ(message.at("usage").at("output_tokens"), 6);
  auto limited = test::call(a->port, verb::post, "/v1/messages", ask + "}", {{"x-sim-status", "429"}});
  EXPECT_EQ(limited.result_int(), 429u) << limited.body();
  EXPECT_EQ(boost::json::parse(limited.body()).at("error").at("type"), "rate_limit_error") << limited.body();
  // A worker killed mid-stream: the stream ends with the Messages API's error event, never silently.
  test::open_stream live(a->port, R"({"model":"sim-1","max_tokens":500,"stream":true,"messages":[{"role":"user","content":"hi"}]})",
                         "x-sim-tokens: 400\r\nx-sim-token-delay: 20ms\r\nConnection: close\r\n", "/v1/messages");
  live.read_events(4);  // message_start, ping, the block's start, a delta: the stream is relayed
  ::kill(w1->p.pid(), SIGKILL);
  auto w2 = worker();
  live.read_events(100000);  // to the end of the body (the connection closes after it)
  const std::string got = live.got.substr(live.got.find("\r\n\r\n"));
  auto cut = parse_events(got);
  ASSERT_FALSE(cut.empty()) << got;
  EXPECT_EQ(cut.front().type, "message_start");
  EXPECT_EQ(cut.back().type, "error") << got;
  EXPECT_EQ(got.find("message_stop"), std::string::npos) << got;
  EXPECT_EQ(a->metric("sluice_foreground_jobs_total{result=\"lost\"}"), 1);
}

TEST_F(QueueForeground, AClientThatLeavesCancelsItsJobAndTheUpstreamSeesTheClose) {
  auto a = bare_front();
  auto w = worker();
  {
    test::open_stream s(a->port, test::chat_body(true), "x-sim-tokens: 400\r\nx-sim-token-delay: 20ms\r\n",
                        "/v1/chat/completions");
    s.read_events(3);
    ASSERT_EQ(sim->snapshot().active_streams, 1u);
  }  // the client closes its connection
  const auto took = test::wait_until([&] { return sim->snapshot().streams_aborted == 1; }, 5s);
  EXPECT_LT(took, 2s) << "the front cancels at its next poll, the worker closes at its next cancel poll";
  EXPECT_LT(test::wait_until([&] { return a->metric("sluice_foreground_jobs_total{result=\"cancelled\"}") == 1; }, 5s), 5s);
  EXPECT_LT(test::wait_until([&] { return w->metric("sluice_jobs_total{state=\"cancelled\"}") == 1; }, 5s), 5s);
}

TEST_F(QueueForeground, QueueDepthAndQueueTimeoutHoldForTheFleetsQueue) {
  auto a = bare_front({"--queue-depth", "1", "--queue-timeout", "500ms"});
  auto w = worker({"--worker-max-jobs", "1"});
  // The one slot busy for a while; one request waits in the queue; a third finds it full.
  std::thread busy([port = a->port] {
    (void)test::call(port, verb::post, "/v1/chat/completions", test::chat_body(true),
                     {{"x-sim-tokens", "100"}, {"x-sim-token-delay", "30ms"}});
  });
  ASSERT_LT(test::wait_until([&] { return sim->snapshot().active_streams == 1; }, 10s), 10s);
  std::thread waiting_one([&] {
    auto r = test::post_chat(a->port, false);
    EXPECT_EQ(r.result_int(), 503u) << r.body();
    EXPECT_NE(r.body().find("waited too long"), std::string::npos) << r.body();
    EXPECT_FALSE(r["retry-after"].empty());
  });
  ASSERT_LT(test::wait_until([&] { return redis_cli("XLEN 'sluice:{jobs}:fg'") == "1"; }, 5s), 5s) << redis_cli("KEYS '*'");
  auto full = test::post_chat(a->port, false);
  EXPECT_EQ(full.result_int(), 503u) << full.body();
  EXPECT_NE(full.body().find("queue is full"), std::string::npos) << full.body();
  EXPECT_FALSE(full["retry-after"].empty());
  waiting_one.join();
  busy.join();
  EXPECT_EQ(a->metric("sluice_foreground_jobs_total{result=\"queue_full\"}"), 1);
  EXPECT_EQ(a->metric("sluice_foreground_jobs_total{result=\"queue_timeout\"}"), 1);
  EXPECT_EQ(a->metric("sluice_rejections_total{reason=\"queue_timeout\"}"), 1);
  EXPECT_EQ(sim->snapshot().completion_requests, 1u) << "the timed-out job never reached the upstream";
}

TEST_F(QueueForeground, AWorkerKilledMidStreamEndsTheClientsStreamWithWorkerLost) {
  auto a = bare_front();
  auto w1 = worker({"--worker-loss-timeout", "1s"});
  std::string got;
  std::thread client([&] {
    got = test::call(a->port, verb::post, "/v1/chat/completions", test::chat_body(true),
                     {{"x-sim-tokens", "400"}, {"x-sim-token-delay", "20ms"}})
              .body();
  });
  ASSERT_LT(test::wait_until([&] { return sim->snapshot().active_streams == 1; }, 10s), 10s);
  std::this_thread::sleep_for(100ms);  // some of the stream relayed
  ::kill(w1->p.pid(), SIGKILL);
  auto w2 = worker();  // it or the front reaps the dead worker's lease
  client.join();
  EXPECT_NE(got.find("\"delta\""), std::string::npos) << "the stream had begun";
  EXPECT_NE(got.find("\"code\":\"worker_lost\""), std::string::npos) << got;
  EXPECT_EQ(got.find("[DONE]"), std::string::npos) << "a broken stream never ends with [DONE]";
  EXPECT_EQ(a->metric("sluice_foreground_jobs_total{result=\"lost\"}"), 1);
  EXPECT_TRUE(a->logged("foreground job's worker lost"));
  EXPECT_EQ(sim->snapshot().completion_requests, 1u) << "a started job is not run again";
}

TEST_F(QueueForeground, AKilledWorkersClientHearsWorkerLostWithinTheLossTimeoutNotTheLease) {
  // worker-loss-timeout 2 s; redis-lease keeps its 30 s (shared limits' slots, claims). The front
  // is the only other process: its own heartbeat rounds reap the dead worker's job.
  auto a = bare_front({"--worker-loss-timeout", "2s"});
  auto w = worker({"--worker-loss-timeout", "2s"});
  // 2000 tokens 20 ms apart: 40 s of stream, longer than redis-lease.
  test::open_stream s(a->port, test::chat_body(true), "x-sim-tokens: 2000\r\nx-sim-token-delay: 20ms\r\n",
                      "/v1/chat/completions");
  s.read_events(5);  // the stream has begun, relayed from the worker through Redis
  ASSERT_NE(s.got.find("\"delta\""), std::string::npos) << s.got;
  // The front has reached Redis at every heartbeat (every 2/3 s) for a whole timeout: its reap gate
  // is open, so what lapses now is a death, not an outage (jobs::reap_gate).
  ASSERT_LT(test::wait_until([&] { return a->metric("sluice_jobs_heartbeats_total{outcome=\"ok\"}") >= 4; }, 10s), 10s);
  ::kill(w->p.pid(), SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  // Read until the error arrives or the front ends the stream (the socket's 10 s receive timeout
  // bounds a hang).
  char buf[4096];
  boost::system::error_code ec;
  while (s.got.find("worker_lost") == std::string::npos && !ec) s.got.append(buf, s.c.sock.read_some(test::net::buffer(buf), ec));
  const auto heard = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed);
  std::printf("foreground client: worker_lost %lld ms after kill -9 (worker-loss-timeout 2s)\n",
              static_cast<long long>(heard.count()));
  ASSERT_NE(s.got.find("\"code\":\"worker_lost\""), std::string::npos) << s.got.substr(s.got.size() - std::min<std::size_t>(s.got.size(), 600));
  // The lease lapses within 2 s of the kill, the front looks within 2/3 s more: 5 s leaves slack
  // for a loaded machine, and is far under the 30 s redis-lease the detection used to ride on.
  EXPECT_LT(heard, 5s);
  EXPECT_EQ(s.got.find("[DONE]"), std::string::npos);
  EXPECT_LT(test::wait_until([&] { return a->metric("sluice_jobs_lost_total") == 1; }, 5s), 5s);
  EXPECT_EQ(a->metric("sluice_foreground_jobs_total{result=\"lost\"}"), 1);
  EXPECT_EQ(sim->snapshot().completion_requests, 1u) << "a started job is not run again";
}

TEST_F(QueueForeground, PubSubTellsTheWorkerAndTheFrontSoNeitherWaitsForItsPoll) {
  // Polls of 1 s (the most there may be): without notifications the front, having read nothing
  // right after it queued the job, would wait a whole poll before reading again, so an answer in
  // under that is the notifications' (a queued job wakes the worker's pull loop; each append
  // wakes the front's relay).
  auto a = bare_front({"--queue-poll-interval", "1s"});
  auto w = worker({"--queue-poll-interval", "1s"});
  std::this_thread::sleep_for(200ms);  // both subscribed (the notifier checks every 50 ms)
  for (bool stream : {true, false}) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = test::post_chat(a->port, stream);
    const auto took = std::chrono::steady_clock::now() - t0;
    ASSERT_EQ(r.result_int(), 200u) << r.body();
    EXPECT_LT(took, 900ms) << (stream ? "stream" : "whole") << ": the answer waited for a poll";
  }
}

TEST_F(QueueForeground, AFrontKilledMidStreamLeavesItsJobOrphanedAndTheWorkerStopsIt) {
  auto a = bare_front();
  auto w = worker({"--orphan-timeout", "300ms"});
  std::thread client([port = a->port] {
    (void)test::call(port, verb::post, "/v1/chat/completions", test::chat_body(true),
                     {{"x-sim-tokens", "400"}, {"x-sim-token-delay", "20ms"}});
  });
  ASSERT_LT(test::wait_until([&] { return sim->snapshot().active_streams == 1; }, 10s), 10s);
  ::kill(a->p.pid(), SIGKILL);  // no one reads the job's log any more
  client.join();
  const auto took = test::wait_until([&] { return sim->snapshot().streams_aborted == 1; }, 10s);
  EXPECT_LT(took, 5s) << "stopped once no front read it for orphan-timeout (300 ms)";
  EXPECT_LT(test::wait_until([&] { return w->metric("sluice_jobs_orphaned_total") == 1; }, 5s), 5s);
  EXPECT_TRUE(w->logged("foreground job no longer read by its front"));
  EXPECT_LT(test::wait_until([&] { return w->metric("sluice_jobs_total{state=\"cancelled\"}") == 1; }, 5s), 5s);
}
