// The in-process response store: its bounds (jobs waiting, responses and bytes kept, bytes per
// response), the queue's order and cancel, the event log's reads after a sequence number, and the
// retention sweep.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "jobs/response_store.hpp"

using namespace sluice;
using namespace sluice::jobs;

namespace {

options small() {
  options o;
  o.jobs_max_waiting = 2;
  o.memory_responses = 3;
  o.response_max_bytes = 1024;
  o.memory_response_bytes = 64 * 1024;
  o.response_retention = std::chrono::seconds(60);
  return o;
}

new_response req(std::string id, std::string body = "{}") {
  return new_response{std::move(id), true, R"({"status":"queued"})", {{"x-a", "b"}}, std::move(body), "alice", {}, {}};
}

std::shared_ptr<response_record> made(std::variant<std::shared_ptr<response_record>, store_refusal> v) {
  auto* r = std::get_if<std::shared_ptr<response_record>>(&v);
  return r ? *r : nullptr;
}

}  // namespace

TEST(response_store, QueueIsFifoAndBoundedByJobsMaxWaiting) {
  memory_store s(small());
  ASSERT_TRUE(made(s.create(req("a"), true)));
  ASSERT_TRUE(made(s.create(req("b"), true)));
  auto full = s.create(req("c"), true);
  ASSERT_TRUE(std::holds_alternative<store_refusal>(full));
  EXPECT_EQ(std::get<store_refusal>(full), store_refusal::queue_full);
  EXPECT_EQ(s.waiting(), 2u);
  EXPECT_EQ(s.take_job()->id(), "a");
  EXPECT_EQ(s.take_job()->id(), "b");
  EXPECT_EQ(s.take_job(), nullptr);
  EXPECT_EQ(std::get<store_refusal>(s.create(req("a"), false)), store_refusal::duplicate);
}

TEST(response_store, FinishedResponsesMakeRoomOldestFirstLiveOnesNever) {
  memory_store s(small());  // 3 responses at most
  auto a = made(s.create(req("a"), false));
  auto b = made(s.create(req("b"), false));
  auto c = made(s.create(req("c"), false));
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(std::get<store_refusal>(s.create(req("d"), false)), store_refusal::store_full) << "all three are live";
  ASSERT_TRUE(b->start("{}"));
  b->finish(status::completed, "{}");
  ASSERT_TRUE(a->start("{}"));
  a->finish(status::failed, "{}");
  ASSERT_TRUE(made(s.create(req("d"), false)));
  EXPECT_EQ(s.find("b"), nullptr) << "the oldest finished one went first";
  EXPECT_NE(s.find("a"), nullptr);
  EXPECT_EQ(s.evicted(), 1u);
  EXPECT_EQ(s.stored(), 3u);
}

TEST(response_store, BytesAreCountedAndGivenBack) {
  memory_store s(small());
  EXPECT_EQ(s.stored_bytes(), 0u);
  auto a = made(s.create(req("a", std::string(100, 'x')), false));
  const auto at_create = s.stored_bytes();
  EXPECT_GE(at_create, 100u);
  ASSERT_TRUE(a->start("{}"));
  ASSERT_TRUE(a->append(0, std::string(300, 'e')));
  EXPECT_EQ(s.stored_bytes(), a->bytes());
  a->finish(status::completed, "{}");
  EXPECT_EQ(s.sweep(runtime::steady::now() + std::chrono::seconds(61)), 1u);
  EXPECT_EQ(s.stored_bytes(), 0u);
  EXPECT_EQ(s.find("a"), nullptr);
  EXPECT_EQ(a->state(), status::completed) << "a holder still reads it";
}

TEST(response_store, AResponsePastItsMaxBytesTakesNoMore) {
  memory_store s(small());  // 1 KiB of events
  auto a = made(s.create(req("a"), false));
  ASSERT_TRUE(a->start("{}"));
  ASSERT_TRUE(a->append(0, std::string(1000, 'e')));
  EXPECT_FALSE(a->append(1, std::string(100, 'e')));
  EXPECT_EQ(a->last_seq(), 0);
}

TEST(response_store, ReadsAfterASequenceNumberInOrderAndKnowTheEnd) {
  memory_store s(small());
  auto a = made(s.create(req("a"), false));
  ASSERT_TRUE(a->start("{}"));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(a->append(i, "e" + std::to_string(i)));
  auto all = a->read_after(-1, 1 << 20);
  EXPECT_EQ(all.events, (std::vector<std::string>{"e0", "e1", "e2", "e3", "e4"}));
  EXPECT_EQ(all.last_seq, 4);
  EXPECT_FALSE(all.finished) << "still running";
  auto rest = a->read_after(2, 1 << 20);
  EXPECT_EQ(rest.events, (std::vector<std::string>{"e3", "e4"}));
  auto one = a->read_after(-1, 1);
  EXPECT_EQ(one.events.size(), 1u) << "at least one event however small the batch";
  a->finish(status::completed, "{}");
  EXPECT_TRUE(a->read_after(4, 1 << 20).finished);
  auto part = a->read_after(2, 1);
  EXPECT_EQ(part.events, (std::vector<std::string>{"e3"}));
  EXPECT_FALSE(part.finished) << "not finished while events remain after the batch";
  auto last = a->read_after(3, 1);
  EXPECT_EQ(last.events, (std::vector<std::string>{"e4"}));
  EXPECT_TRUE(last.finished) << "the batch holds the last event of a finished response";
}

TEST(response_store, CancelQueuedTakesItOutRunningStopsItsJobFinishedRefuses) {
  memory_store s(small());
  auto a = made(s.create(req("a"), true));
  auto b = made(s.create(req("b"), true));
  auto cancelled = [](const response_record&) { return std::string(R"({"status":"cancelled"})"); };
  ASSERT_EQ(s.cancel("a", cancelled), a);
  EXPECT_EQ(a->state(), status::cancelled);
  EXPECT_EQ(a->object(), R"({"status":"cancelled"})");
  EXPECT_EQ(s.waiting(), 1u);
  auto job = s.take_job();
  ASSERT_EQ(job, b);
  ASSERT_TRUE(b->start("{}"));
  int stops = 0;
  b->on_cancel([&] { ++stops; });
  s.cancel("b", cancelled);
  EXPECT_EQ(stops, 1);
  EXPECT_EQ(b->state(), status::in_progress) << "the job ends it";
  b->finish(status::completed, "{}");
  EXPECT_EQ(b->state(), status::cancelled) << "a cancel requested wins over the stream's own end";
  EXPECT_FALSE(b->cancel("{}")) << "finished already";
  EXPECT_EQ(s.cancel("zzz", cancelled), nullptr);
}

TEST(response_store, ACancelBeforeTheJobSetsItsStopStillStopsIt) {
  memory_store s(small());
  auto a = made(s.create(req("a"), true));
  ASSERT_EQ(s.take_job(), a);
  ASSERT_TRUE(a->start("{}"));
  a->cancel("{}");
  int stops = 0;
  a->on_cancel([&] { ++stops; });
  EXPECT_EQ(stops, 1);
}

// A job slot registers as idle again after each wait that found no job (a stray wake, another
// slot took the job first): the list keeps one entry per live runner, however often it re-registers,
// and none for a runner that is gone.
TEST(response_store, IdleRunnersAreKeptOncePerLiveRunner) {
  boost::asio::io_context io;
  memory_store s(small());
  {
    wakeup a(io.get_executor()), b(io.get_executor());
    for (int i = 0; i < 100; ++i) {
      s.wait_for_job(a.get_handle());
      s.wait_for_job(b.get_handle());
    }
    EXPECT_EQ(s.idle_runners(), 2u);
  }
  wakeup c(io.get_executor());
  s.wait_for_job(c.get_handle());
  EXPECT_EQ(s.idle_runners(), 1u) << "the gone runners' entries are dropped";
}
