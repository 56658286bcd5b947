// jobs::options: the queue and the role are named values with a default, checked together.
#include "jobs/options.hpp"

#include <gtest/gtest.h>

using namespace sluice;

namespace {
result<void> load(jobs::options& o, std::string_view yaml) {
  config::option_table t;
  o.register_options(t);
  if (auto r = t.apply_yaml_text(yaml); !r) return r;
  return o.validate();
}
}  // namespace

TEST(JobOptions, DefaultsAreOneProcessWithTheQueueInMemory) {
  jobs::options o;
  ASSERT_TRUE(load(o, "{}").has_value());
  EXPECT_EQ(o.queue, jobs::queue_backend::memory);
  EXPECT_EQ(o.role, jobs::process_role::both);
  EXPECT_TRUE(o.runs_jobs());
  EXPECT_TRUE(o.serves_clients());
  EXPECT_EQ(o.poll_interval, std::chrono::milliseconds(20));
  EXPECT_EQ(o.command_timeout, std::chrono::seconds(1));
}

TEST(JobOptions, FrontsAndWorkersNeedTheRedisQueue) {
  jobs::options front;
  ASSERT_TRUE(load(front, "queue: redis\nrole: front\n").has_value());
  EXPECT_FALSE(front.runs_jobs());
  EXPECT_TRUE(front.serves_clients());
  jobs::options worker;
  ASSERT_TRUE(load(worker, "queue: redis\nrole: worker\nqueue-poll-interval: 5ms\n").has_value());
  EXPECT_TRUE(worker.runs_jobs());
  EXPECT_FALSE(worker.serves_clients());
  jobs::options alone;
  auto r = load(alone, "role: worker\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.err().message.find("needs --queue redis"), std::string::npos) << r.err().message;
}

TEST(JobOptions, UnknownQueuesRolesAndIntervalsAreRefusedByName) {
  jobs::options a;
  auto r = load(a, "queue: kafka\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.err().message.find("queue"), std::string::npos);
  jobs::options b;
  r = load(b, "role: leader\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.err().message.find("role"), std::string::npos);
  jobs::options c;
  r = load(c, "queue: redis\nqueue-poll-interval: 5s\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.err().message.find("queue-poll-interval"), std::string::npos);
  jobs::options d;
  r = load(d, "queue: redis\nqueue-command-timeout: 0s\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.err().message.find("queue-command-timeout"), std::string::npos);
  jobs::options e;
  ASSERT_TRUE(load(e, "queue: redis\nqueue-command-timeout: 250ms\n").has_value());
  EXPECT_EQ(e.command_timeout, std::chrono::milliseconds(250));
}

TEST(JobOptions, RedisBytesSecretAndEvictionCheckHaveNamedDefaults) {
  jobs::options o;
  ASSERT_TRUE(load(o, "{}").has_value());
  EXPECT_EQ(o.redis_response_bytes, 1024ull * 1024 * 1024);
  EXPECT_EQ(o.queue_secret_env, "SLUICE_QUEUE_SECRET");
  EXPECT_EQ(o.redis_eviction_check, jobs::eviction_check::warn);
  jobs::options set;
  ASSERT_TRUE(load(set, "redis-response-bytes: 64MiB\nqueue-secret-env: FLEET_SECRET\nredis-eviction-check: refuse\n").has_value());
  EXPECT_EQ(set.redis_response_bytes, 64ull * 1024 * 1024);
  EXPECT_EQ(set.queue_secret_env, "FLEET_SECRET");
  EXPECT_EQ(set.redis_eviction_check, jobs::eviction_check::refuse);
  jobs::options bad;
  EXPECT_FALSE(load(bad, "redis-eviction-check: maybe\n").has_value());
  jobs::options small;
  EXPECT_FALSE(load(small, "redis-response-bytes: 1MiB\n").has_value()) << "below response-max-bytes (4 MiB)";
}

TEST(JobOptions, WorkerLossTimeoutIsItsOwnSettingOfAFewSeconds) {
  jobs::options o;
  ASSERT_TRUE(load(o, "{}").has_value());
  EXPECT_EQ(o.worker_loss_timeout, std::chrono::seconds(3));
  jobs::options set;
  ASSERT_TRUE(load(set, "queue: redis\nworker-loss-timeout: 2s\n").has_value());
  EXPECT_EQ(set.worker_loss_timeout, std::chrono::seconds(2));
  jobs::options tiny;
  auto r = load(tiny, "queue: redis\nworker-loss-timeout: 100ms\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.err().message.find("worker-loss-timeout"), std::string::npos) << r.err().message;
}
