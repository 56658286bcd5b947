// One conformance suite for the two response backends (jobs/response_backend.hpp): the same tests
// run against this process's memory_store and against the fleet's redis_queue in a real
// redis-server. Each backend gets a "job side" that writes the way its worker does (create, take
// and start, append, finish); the tests then read only through the backend interface, as the
// routes of stored responses do.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jobs/response_backend.hpp"
#include "redis/connection.hpp"
#include "redis_server.hpp"
#include "redis_settings.hpp"
#include "runtime/task_group.hpp"

namespace sluice::jobs {
namespace backend_suite {

using namespace std::chrono_literals;

constexpr std::string_view queued_object = R"({"id":"resp_1","object":"response","status":"queued"})";

new_response a_response(std::string id, std::string owner = "tenant-a", std::string wire = {}) {
  return new_response{std::move(id), wire.empty(), std::string(queued_object), {}, R"({"input":"hi"})",
                      std::move(owner), std::move(wire), {}};
}

std::string event_text(std::int64_t seq) {
  return "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":" +
         std::to_string(seq) + "}\n\n";
}

std::string as_cancelled(std::string_view object) {
  std::string o(object);
  o.replace(o.find("queued"), 6, "cancelled");
  return o;
}

// The job's side of a backend, and the backend itself.
class job_side {
 public:
  virtual ~job_side() = default;
  virtual response_backend& backend() = 0;
  virtual task<bool> create(new_response r) = 0;
  // Takes the next job and starts it (queued -> in_progress); false when there was none to start.
  virtual task<bool> take_and_start() = 0;
  virtual task<void> append(std::string id, std::int64_t seq) = 0;
  // The upstream's own id for it, as the running job learns it from the stream's first event.
  virtual task<void> note_upstream_id(std::string id, std::string upstream_id) = 0;
  virtual task<void> finish(std::string id, std::int64_t seq) = 0;
  // Makes the store stop answering; false when it cannot (memory always answers).
  virtual bool stop_answering() { return false; }
  virtual void run(std::function<task<void>()> body) = 0;
};

constexpr std::string_view in_progress = R"({"id":"resp_1","object":"response","status":"in_progress"})";
constexpr std::string_view completed = R"({"id":"resp_1","object":"response","status":"completed"})";

options store_options() {
  options o;
  o.poll_interval = 10ms;
  o.response_retention = 60s;
  return o;
}

// Runs `body` on `io` until it ends (a test's coroutine).
void run_on(net::io_context& io, const std::function<task<void>()>& body, std::function<void()> after = {}) {
  bool done = false;
  net::co_spawn(io, body(), [&](std::exception_ptr e) {
    done = true;
    if (after) after();
    if (e) std::rethrow_exception(e);
  });
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!done && std::chrono::steady_clock::now() < deadline) io.run_for(10ms);
  ASSERT_TRUE(done) << "the test's coroutine did not end within 30 s";
}

class memory_side final : public job_side {
 public:
  memory_side() : store_(store_options()), backend_(store_, 64 * 1024, 20ms) {}
  response_backend& backend() override { return backend_; }
  task<bool> create(new_response r) override {
    co_return std::holds_alternative<std::shared_ptr<response_record>>(store_.create(std::move(r), true));
  }
  task<bool> take_and_start() override {
    auto rec = store_.take_job();
    co_return rec && rec->start(std::string(in_progress));
  }
  task<void> append(std::string id, std::int64_t seq) override {
    (void)store_.find(id)->append(seq, event_text(seq));
    co_return;
  }
  task<void> note_upstream_id(std::string id, std::string upstream_id) override {
    store_.find(id)->set_upstream_id(upstream_id);
    co_return;
  }
  task<void> finish(std::string id, std::int64_t seq) override {
    auto rec = store_.find(id);
    (void)rec->append(seq, event_text(seq));
    rec->finish(status::completed, std::string(completed));
    co_return;
  }
  void run(std::function<task<void>()> body) override { run_on(io_, body); }

 private:
  net::io_context io_;
  memory_store store_;
  memory_backend backend_;
};

class redis_side final : public job_side {
 public:
  redis_side()
      : queue_("suite:", "worker-1", store_options(), 1000ms, 100),
        conn_(std::make_shared<redis::connection>(io_.get_executor(), test::local_redis_settings(server_.port()),
                                                  redis_queue::scripts(), nullptr)),
        backend_(queue_, [c = conn_.get()]() -> redis::connection* { return c->connected() ? c : nullptr; }, nullptr,
                 10ms) {
    queue_.attach(0);
    conn_->start(tasks_);
    run_on(io_, [this]() -> task<void> { co_await connected(); });  // every test starts connected
  }
  ~redis_side() override {
    net::post(io_, [this] {
      tasks_.cancel();
      conn_->stop();
    });
    io_.restart();
    io_.run_for(3s);
  }
  response_backend& backend() override { return backend_; }
  task<bool> create(new_response r) override {
    co_await connected();
    auto made = co_await queue_.create(*conn_, r);
    co_return made && *made == store_refusal::none;
  }
  task<bool> take_and_start() override {
    (void)co_await queue_.ensure_group(*conn_);
    auto jobs = co_await queue_.take(*conn_, 1);
    if (!jobs || jobs->empty()) co_return false;
    co_return co_await queue_.start(*conn_, jobs->front(), std::string(in_progress));
  }
  task<void> append(std::string id, std::int64_t seq) override {
    // (A named vector: GCC 12 mishandles a braced temporary across a co_await.)
    const std::vector<stored_event> events{stored_event{seq, event_text(seq)}};
    const std::string unchanged;
    auto r = co_await queue_.append(*conn_, id, events, std::nullopt, unchanged, false);
    EXPECT_TRUE(r && *r);
  }
  task<void> note_upstream_id(std::string id, std::string upstream_id) override {
    co_await queue_.note_upstream_id(*conn_, id, upstream_id);
  }
  task<void> finish(std::string id, std::int64_t seq) override {
    const std::vector<stored_event> events{stored_event{seq, event_text(seq)}};
    const std::string object(completed);
    auto r = co_await queue_.append(*conn_, id, events, status::completed, object, true);
    EXPECT_TRUE(r && *r);
  }
  bool stop_answering() override {
    server_.kill();
    return true;
  }
  void run(std::function<task<void>()> body) override { run_on(io_, body); }

 private:
  task<void> connected() {
    net::steady_timer t(co_await net::this_coro::executor);
    for (int i = 0; i < 500 && !conn_->connected(); ++i) {
      t.expires_after(10ms);
      error_code ec;
      co_await t.async_wait(ec_out(ec));
    }
    EXPECT_TRUE(conn_->connected());
  }

  test::redis_server server_;
  net::io_context io_;
  runtime::task_group tasks_{"backend-suite"};
  redis_queue queue_;
  std::shared_ptr<redis::connection> conn_;
  redis_backend backend_;
};

class ResponseBackend : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "memory") side = std::make_unique<memory_side>();
    else side = std::make_unique<redis_side>();
  }
  std::unique_ptr<job_side> side;
};

// ASSERT_* for a coroutine (their `return` is not a co_return).
#define CO_ASSERT(cond)            \
  do {                              \
    const bool co_ok_ = (cond);     \
    EXPECT_TRUE(co_ok_) << #cond;   \
    if (!co_ok_) co_return;         \
  } while (false)

// Reads `id`'s events after `after` until `want` have come or the log finished, waiting on the
// feed between reads (the backend's own wakeup or poll); at most ~5 s.
task<event_batch> read_until(event_feed& feed, std::int64_t after, std::size_t want) {
  event_batch all;
  all.last_seq = after;
  for (int round = 0; round < 500; ++round) {
    auto b = co_await feed.read_after(all.last_seq);
    EXPECT_TRUE(b.has_value());
    if (!b) co_return all;
    for (std::size_t i = 0; i < b->events.size(); ++i) {
      all.events.push_back(b->events[i]);
      all.seqs.push_back(b->seqs[i]);
    }
    all.last_seq = b->last_seq;
    all.finished = b->finished;
    all.missing = b->missing;
    if (all.finished || all.missing || all.events.size() >= want) co_return all;
    co_await feed.wait();
  }
  co_return all;
}

TEST_P(ResponseBackend, AnUnknownIdIsNotFoundAsAValueNotAnError) {
  side->run([&]() -> task<void> {
    auto found = co_await side->backend().find("resp_00000000000000000000000000000000");
    CO_ASSERT(found.has_value());
    EXPECT_FALSE(found->has_value());
  });
}

TEST_P(ResponseBackend, ACreatedResponseIsFoundWithItsOwnerStateAndLaterItsUpstreamId) {
  side->run([&]() -> task<void> {
    const bool made = co_await side->create(a_response("resp_a"));
    EXPECT_TRUE(made);
    auto found = co_await side->backend().find("resp_a");
    CO_ASSERT(found && *found);
    const response_view& v = **found;
    EXPECT_EQ(v.owner, "tenant-a");
    EXPECT_TRUE(v.background);
    EXPECT_FALSE(v.foreground_job);
    EXPECT_EQ(v.state, status::queued);
    EXPECT_EQ(v.object, queued_object);
    EXPECT_EQ(v.upstream_id, "") << "not known before its job ran";
    const bool started = co_await side->take_and_start();
    EXPECT_TRUE(started);
    co_await side->note_upstream_id("resp_a", "upstream-resp-9");
    auto running = co_await side->backend().find("resp_a");
    CO_ASSERT(running && *running);
    EXPECT_EQ((*running)->state, status::in_progress);
    EXPECT_EQ((*running)->object, in_progress);
    EXPECT_EQ((*running)->upstream_id, "upstream-resp-9");
    // A front's foreground job (the Redis queue's; the memory store keeps what it is given).
    const bool made_fg = co_await side->create(a_response("resp_fg", "tenant-a", "/v1/chat/completions"));
    EXPECT_TRUE(made_fg);
    auto fg = co_await side->backend().find("resp_fg");
    CO_ASSERT(fg && *fg);
    EXPECT_TRUE((*fg)->foreground_job) << "a foreground job is told apart from a response";
  });
}

TEST_P(ResponseBackend, AFollowerReadsTheEventsAfterNThenTheLiveOnesThenTheEnd) {
  side->run([&]() -> task<void> {
    const bool r3_ = co_await side->create(a_response("resp_f"));
    EXPECT_TRUE(r3_);
    const bool r4_ = co_await side->take_and_start();
    EXPECT_TRUE(r4_);
    for (std::int64_t seq = 0; seq < 3; ++seq) co_await side->append("resp_f", seq);
    auto found = co_await side->backend().find("resp_f");
    CO_ASSERT(found && *found);
    EXPECT_EQ((*found)->state, status::in_progress);

    auto feed = co_await side->backend().follow("resp_f");
    auto after_0 = co_await read_until(*feed, 0, 2);
    EXPECT_EQ(after_0.seqs, (std::vector<std::int64_t>{1, 2})) << "exactly the events after 0";
    EXPECT_EQ(after_0.events.front(), event_text(1));
    EXPECT_FALSE(after_0.finished);
    // Live: appended while the follower waits.
    co_await side->append("resp_f", 3);
    co_await side->finish("resp_f", 4);
    auto rest = co_await read_until(*feed, after_0.last_seq, 2);
    EXPECT_EQ(rest.seqs, (std::vector<std::int64_t>{3, 4}));
    EXPECT_TRUE(rest.finished);
    EXPECT_EQ(rest.last_seq, 4);
    auto done = co_await side->backend().find("resp_f");
    CO_ASSERT(done && *done);
    EXPECT_EQ((*done)->state, status::completed);
    EXPECT_EQ((*done)->object, completed);
  });
}

TEST_P(ResponseBackend, ACancelledQueuedResponseIsFinishedCancelledAndItsJobNeverStarts) {
  side->run([&]() -> task<void> {
    const bool r5_ = co_await side->create(a_response("resp_c"));
    EXPECT_TRUE(r5_);
    auto found = co_await side->backend().find("resp_c");
    CO_ASSERT(found && *found);
    auto cancelled = co_await side->backend().cancel("resp_c", **found, as_cancelled);
    EXPECT_TRUE(cancelled.has_value());
    auto after = co_await side->backend().find("resp_c");
    CO_ASSERT(after && *after);
    EXPECT_EQ((*after)->state, status::cancelled);
    EXPECT_EQ((*after)->object, as_cancelled(queued_object));
    const bool r6_ = co_await side->take_and_start();
    EXPECT_FALSE(r6_) << "a cancelled job is never run";
    auto feed = co_await side->backend().follow("resp_c");
    auto events = co_await read_until(*feed, -1, 1);
    EXPECT_TRUE(events.finished) << "its log is complete";
  });
}

TEST_P(ResponseBackend, AFollowOfAResponseThatIsNotThereReadsMissing) {
  side->run([&]() -> task<void> {
    auto feed = co_await side->backend().follow("resp_gone");
    auto b = co_await feed->read_after(-1);
    CO_ASSERT(b.has_value());
    EXPECT_TRUE(b->missing);
    EXPECT_TRUE(b->events.empty());
  });
}

TEST_P(ResponseBackend, AStoreThatDoesNotAnswerGivesErrorsNeverValues) {
  side->run([&]() -> task<void> {
    const bool made = co_await side->create(a_response("resp_d"));
    EXPECT_TRUE(made);
  });
  if (!side->stop_answering()) GTEST_SKIP() << "the memory store always answers";
  side->run([&]() -> task<void> {
    auto found = co_await side->backend().find("resp_d");
    EXPECT_FALSE(found.has_value());
    auto feed = co_await side->backend().follow("resp_d");
    auto b = co_await feed->read_after(-1);
    EXPECT_FALSE(b.has_value());
    response_view v;
    v.object = std::string(queued_object);
    auto cancelled = co_await side->backend().cancel("resp_d", v, as_cancelled);
    EXPECT_FALSE(cancelled.has_value());
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, ResponseBackend, ::testing::Values("memory", "redis"),
                         [](const auto& info) { return info.param; });

}  // namespace backend_suite
}  // namespace sluice::jobs

#undef CO_ASSERT
