// `sluice serve --processes N` (docs/processes.md): the real binary as a supervisor and its worker
// processes in front of the in-process simulator. A worker killed with -9 cuts only its own
// streams and is replaced at once; max-streams and the memory budget hold for the pod, not for each
// process; SIGHUP reloads a changed keys file without cutting a stream, and refuses a broken one.
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <future>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "process.hpp"
#include "serve_node.hpp"
#include "sim/server.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;

namespace {

// The pids of the worker processes that said they serve, in the order they did.
std::vector<int> serving_pids(const std::string& output) {
  static const std::regex re(R"re("msg":"worker process serving","pid":([0-9]+))re");
  std::vector<int> out;
  for (std::sregex_iterator it(output.begin(), output.end(), re), end; it != end; ++it) out.push_back(std::stoi((*it)[1]));
  return out;
}

// The serving pids once at least `n` workers have said they serve (or what there is at `limit`).
std::vector<int> wait_serving(test::serve_node& pod, std::size_t n, std::chrono::milliseconds limit = 5000ms) {
  std::vector<int> pids;
  test::wait_until([&] {
    pids = serving_pids(pod.p.output());
    return pids.size() >= n;
  }, limit);
  return pids;
}

// Sockets a process has open now (its client connections and its upstream connections).
int open_sockets(int pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return -1;
  int n = 0;
  while (dirent* e = ::readdir(d)) {
    char target[64] = {};
    const std::string link = dir + "/" + e->d_name;
    if (::readlink(link.c_str(), target, sizeof target - 1) > 0 && std::string_view(target).rfind("socket:", 0) == 0) ++n;
  }
  ::closedir(d);
  return n;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A process's resident memory from /proc/PID/statm (0 when unreadable).
std::uint64_t resident_bytes(int pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/statm").c_str(), "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

// The state letter of /proc/PID/stat (R, S, T for stopped, ...), or 0.
char process_state(int pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return 0;
  char buf[512] = {};
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const std::string_view s(buf, n);
  const auto close = s.rfind(')');  // the command name may hold spaces
  return close != std::string_view::npos && close + 2 < s.size() ? s[close + 2] : 0;
}

// A streamed chat request whose response head has been read; read_rest() takes the body to its end.
struct open_stream {
  test::client_socket c;
  int status = 0;
  std::string got;
  open_stream(std::uint16_t port, int tokens, int delay_ms, const std::string& key = "") : c(port, 30000) {
    const std::string body = test::chat_body(true);
    // Connection: close, so the end of the answer is the end of the connection (read_rest()).
    c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n" +
           (key.empty() ? std::string() : "Authorization: Bearer " + key + "\r\n") + "x-sim-tokens: " +
           std::to_string(tokens) + "\r\nx-sim-token-delay: " + std::to_string(delay_ms) +
           "ms\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    char buf[4096];
    boost::system::error_code ec;
    while (got.find("\r\n") == std::string::npos && !ec) got.append(buf, c.sock.read_some(test::net::buffer(buf), ec));
    if (got.rfind("HTTP/1.1 ", 0) == 0) status = std::stoi(got.substr(9, 3));
  }
  void read_rest() { got += c.read_all(); }
  bool done() const { return got.find("data: [DONE]") != std::string::npos; }
  // Events carrying a token (the first event's empty content, the role's, is not one).
  std::size_t content_events() const {
    std::size_t n = 0;
    for (auto at = got.find("\"content\":\""); at != std::string::npos; at = got.find("\"content\":\"", at + 1))
      n += got.compare(at + 11, 1, "\"") != 0 ? 1 : 0;
    return n;
  }
};

struct Processes : ::testing::Test {
  std::unique_ptr<sim::server> sim;
  void SetUp() override {
    sim::options so;
    so.listen = "127.0.0.1:0";
    so.tokens = 4;
    so.token_delay = 1ms;
    sim = std::make_unique<sim::server>(so);
    ASSERT_TRUE(sim->start().has_value());
  }
  std::vector<std::string> args(std::string processes, std::vector<std::string> more = {}) const {
    std::vector<std::string> a{"serve",         "--listen",    "127.0.0.1:0",
                               "--threads",     "1",           "--processes",
                               processes,       "--upstream",  "http://127.0.0.1:" + std::to_string(sim->port()),
                               "--log-format",  "json",        "--drain-delay",
                               "0s"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
};

TEST_F(Processes, AWorkerKilledWithNineCutsOnlyItsOwnStreamsAndIsReplacedAtOnce) {
  test::serve_node pod(args("3"));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();  // the workers' log lines never fill the pipe while the test waits
  const std::vector<int> pids = wait_serving(pod, 3);
  ASSERT_EQ(pids.size(), 3u) << pod.p.output();
  std::map<int, int> baseline;
  for (int pid : pids) baseline[pid] = open_sockets(pid);

  // 30 streams of 60 tokens, 50 ms apart (3 s each), spread by the kernel over the three workers.
  constexpr int streams = 30, tokens = 60;
  std::vector<std::unique_ptr<open_stream>> open;
  for (int i = 0; i < streams; ++i) {
    open.push_back(std::make_unique<open_stream>(pod.port, tokens, 50));
    ASSERT_EQ(open.back()->status, 200) << open.back()->got;
  }
  // Which worker holds how many: each stream is a client socket and an upstream socket.
  ASSERT_LT(test::wait_until([&] {
              int held = 0;
              for (int pid : pids) held += (open_sockets(pid) - baseline[pid]) / 2;
              return held == streams;
            }),
            5001ms);
  int victim = pids[0], victim_streams = -1;
  for (int pid : pids) {
    const int held = (open_sockets(pid) - baseline[pid]) / 2;
    if (held > victim_streams) victim = pid, victim_streams = held;
  }
  ASSERT_GE(victim_streams, 1);
  const auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);

  // A replacement serves within 2 s.
  const auto now_serving = wait_serving(pod, 4);
  const int replacement = now_serving.size() == 4 ? now_serving.back() : 0;
  const auto replaced_in = std::chrono::steady_clock::now() - killed_at;
  ASSERT_NE(replacement, 0) << pod.p.output();
  EXPECT_LT(replaced_in, 2s);
  // Only the replacement accepts while the two survivors are stopped: it really serves.
  std::vector<int> survivors;
  for (int pid : pids)
    if (pid != victim) survivors.push_back(pid);
  for (int pid : survivors) ::kill(pid, SIGSTOP);
  // SIGSTOP takes effect asynchronously: a survivor still running could accept the request and
  // then stop holding it. Connect only once both are stopped.
  ASSERT_LT(test::wait_until([&] { return process_state(survivors[0]) == 'T' && process_state(survivors[1]) == 'T'; }),
            5001ms);
  auto via_replacement = test::post_chat(pod.port, false);
  for (int pid : survivors) ::kill(pid, SIGCONT);
  EXPECT_EQ(via_replacement.result_int(), 200) << via_replacement.body();

  // The victim's streams ended with a closed connection (no [DONE]); every other one is whole.
  int cut = 0, whole = 0;
  for (auto& s : open) {
    s->read_rest();
    if (s->done()) {
      EXPECT_EQ(s->content_events(), static_cast<std::size_t>(tokens)) << s->got;
      ++whole;
    } else {
      EXPECT_EQ(s->got.find("data: [DONE]"), std::string::npos);
      ++cut;
    }
  }
  EXPECT_EQ(cut, victim_streams);
  EXPECT_EQ(whole, streams - victim_streams);

  EXPECT_EQ(pod.metric("sluice_worker_exits_total{reason=\"killed\"}"), 1);
  EXPECT_EQ(pod.metric("sluice_worker_restarts_total"), 1);
  EXPECT_EQ(pod.metric("sluice_worker_processes"), 3);
  EXPECT_TRUE(pod.logged("worker process ended unexpectedly"));
  EXPECT_EQ(pod.p.signal_and_wait(SIGTERM), 0) << pod.p.output();
}

namespace {

// The largest worker's share of `n` connections opened one after another (a ramp), each answered
// and then kept open, on a pod of 3 workers started with `more`. Counted per worker from each
// worker's own descriptors (the pod's /metrics is one merged view).
double largest_share_of_a_ramp(test::serve_node& pod, int n) {
  const std::vector<int> pids = wait_serving(pod, 3);
  if (pids.size() != 3) return -1;
  std::map<int, int> baseline;
  for (int pid : pids) baseline[pid] = open_sockets(pid);
  std::vector<std::unique_ptr<test::client_socket>> conns;
  for (int i = 0; i < n; ++i) {
    auto c = std::make_unique<test::client_socket>(pod.port);
    c->send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string got;
    char buf[1024];
    boost::system::error_code ec;
    while (got.find("\r\n\r\n") == std::string::npos && !ec) got.append(buf, c->sock.read_some(test::net::buffer(buf), ec));
    if (got.rfind("HTTP/1.1 200", 0) != 0) return -1;
    conns.push_back(std::move(c));
  }
  std::map<int, int> held;
  test::wait_until([&] {
    int sum = 0;
    for (int pid : pids) sum += held[pid] = open_sockets(pid) - baseline[pid];
    return sum == n;
  });
  int most = 0;
  std::string spread;
  for (int pid : pids) {
    most = std::max(most, held[pid]);
    spread += (spread.empty() ? "" : "/") + std::to_string(held[pid]);
  }
  std::printf("%d ramped connections over 3 workers: %s\n", n, spread.c_str());
  return static_cast<double>(most) / n;
}

}  // namespace

TEST_F(Processes, RampedConnectionsSpreadOverTheWorkersNoneHoldingMoreThanItsShare) {
  constexpr int n = 300;
  double spread_off = 0;
  {
    // The share check off (a slack no worker reaches): how the one accept queue spreads a ramp by
    // itself, whichever worker's event loop wakes first. Printed for comparison, not asserted.
    test::serve_node pod(args("3", {"--accept-share-slack", "1000000"}));
    ASSERT_NE(pod.port, 0);
    pod.p.keep_reading();
    spread_off = largest_share_of_a_ramp(pod, n);
    ASSERT_GT(spread_off, 0) << pod.p.output();
    EXPECT_EQ(pod.p.signal_and_wait(SIGTERM), 0);
  }
  test::serve_node pod(args("3"));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();
  const double share = largest_share_of_a_ramp(pod, n);
  std::printf("largest worker's share: %.1f %% (share check off: %.1f %%)\n", share * 100, spread_off * 100);
  ASSERT_GT(share, 0) << pod.p.output();
  // Even is 33 %; a worker stops accepting past the average plus accept-share-slack (2).
  EXPECT_LT(share, 0.45);
  EXPECT_GT(pod.metric("sluice_accept_share_pauses_total"), 0);
  EXPECT_EQ(pod.p.signal_and_wait(SIGTERM), 0);
}

TEST_F(Processes, MetricsAreOneViewOfThePodAndAnEndedWorkersCountersStayInIt) {
  test::serve_node pod(args("3"));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();
  const std::string ok_chats = "sluice_requests_total{outcome=\"ok\",route=\"chat_completions\"}";
  for (int i = 0; i < 30; ++i) ASSERT_EQ(test::post_chat(pod.port, false).result_int(), 200);
  // Whichever worker answers the scrape, it counts the pod's 30, not its own share.
  for (int i = 0; i < 6; ++i) EXPECT_EQ(pod.metric(ok_chats), 30) << "scrape " << i;
  EXPECT_EQ(pod.metric("sluice_worker_processes"), 3) << "a shared series, not summed";
  // The merged exposition is one Prometheus exposition: promtool accepts it.
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    const std::string path = test::temp_file_with(test::call(pod.port, test::bhttp::verb::get, "/metrics").body());
    const int rc = std::system(("promtool check metrics < " + path + " > " + path + ".out 2>&1").c_str());
    std::ifstream report(path + ".out");
    EXPECT_EQ(rc, 0) << std::string(std::istreambuf_iterator<char>(report), {});
    std::remove(path.c_str());
    std::remove((path + ".out").c_str());
  } else {
    ADD_FAILURE() << "promtool is not installed (scripts/install-deps.sh installs it)";
  }
  // A worker that ends keeps its counts in the pod's sums: each scrape above had every worker
  // publish its figures, so the killed one's last published are whole.
  const auto pids = serving_pids(pod.p.output());
  ASSERT_EQ(pids.size(), 3u);
  ASSERT_EQ(::kill(pids[0], SIGKILL), 0);
  ASSERT_EQ(wait_serving(pod, 4).size(), 4u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(pod.metric(ok_chats), 30) << "after the kill, scrape " << i;
}

TEST_F(Processes, MaxStreamsHoldsForThePodAcrossThreeProcesses) {
  test::serve_node pod(args("3", {"--max-streams", "100", "--queue-depth", "200", "--queue-timeout", "30s"}));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();  // the workers' log lines never fill the pipe while the test waits
  constexpr int streams = 150;
  std::vector<std::future<std::string>> done;
  for (int i = 0; i < streams; ++i)
    done.push_back(std::async(std::launch::async, [port = pod.port] {
      open_stream s(port, 20, 50);
      if (s.status != 200) return "status " + std::to_string(s.status) + ": " + s.got;
      s.read_rest();
      return s.got;
    }));
  int whole = 0;
  for (auto& f : done) {
    const std::string got = f.get();
    if (got.find("data: [DONE]") != std::string::npos) ++whole;
    else ADD_FAILURE() << got.substr(0, 400);
  }
  EXPECT_EQ(whole, streams);
  // One process's cap would have let 150 through at once; the pod's held it to 100, and it was reached.
  EXPECT_LE(sim->snapshot().peak_active_streams, 100u);
  EXPECT_GE(sim->snapshot().peak_active_streams, 75u);
  EXPECT_LT(test::wait_until([&] { return pod.metric("sluice_pod_streams_in_use") == 0; }), 5001ms);
  EXPECT_EQ(pod.metric("sluice_pod_queued_requests"), 0);
}

TEST_F(Processes, SlotsAWorkerHeldWhenKilledGoBackToThePod) {
  test::serve_node pod(args("2", {"--max-streams", "4", "--queue-depth", "0"}));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();  // the workers' log lines never fill the pipe while the test waits
  const std::vector<int> pids = wait_serving(pod, 2);
  ASSERT_EQ(pids.size(), 2u);
  std::vector<std::unique_ptr<open_stream>> open;
  for (int i = 0; i < 4; ++i) {
    open.push_back(std::make_unique<open_stream>(pod.port, 200, 50));
    ASSERT_EQ(open.back()->status, 200);
  }
  EXPECT_EQ(open_stream(pod.port, 1, 1).status, 503) << "the pod's four slots are taken";
  // Both workers killed with their streams: the supervisor gives their rows' slots back.
  for (int pid : pids) ::kill(pid, SIGKILL);
  for (auto& s : open) s->read_rest();
  ASSERT_GE(wait_serving(pod, 4, 10000ms).size(), 4u);
  EXPECT_EQ(pod.metric("sluice_pod_streams_in_use"), 0);
  std::vector<std::unique_ptr<open_stream>> again;
  for (int i = 0; i < 4; ++i) {
    again.push_back(std::make_unique<open_stream>(pod.port, 3, 1));
    EXPECT_EQ(again.back()->status, 200) << again.back()->got;
  }
  for (auto& s : again) {
    s->read_rest();
    EXPECT_TRUE(s->done());
  }
}

TEST_F(Processes, SighupReloadsAChangedKeysFileWithoutCuttingAStreamAndRefusesABrokenOne) {
  const std::string keys = test::temp_file_with("sk-old 0 0 old\n");
  test::serve_node pod(args("2", {"--keys-file", keys}));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();  // the workers' log lines never fill the pipe while the test waits
  // Streams of the old config, 40 tokens 50 ms apart: running across the reload.
  std::vector<std::unique_ptr<open_stream>> open;
  for (int i = 0; i < 4; ++i) {
    open.push_back(std::make_unique<open_stream>(pod.port, 40, 50, "sk-old"));
    ASSERT_EQ(open.back()->status, 200) << open.back()->got;
  }
  {
    FILE* f = std::fopen(keys.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("sk-new 0 0 new\n", f);
    std::fclose(f);
  }
  ASSERT_EQ(::kill(pod.p.pid(), SIGHUP), 0);
  ASSERT_LT(test::wait_until([&] { return pod.logged("config reloaded"); }, 10000ms), 10001ms) << pod.p.output();
  // Both old workers have closed their acceptors (they log it once closed): new connections meet
  // the new generation only. The new key passes, the old one is unknown.
  ASSERT_LT(test::wait_until([&] { return occurrences(pod.p.output(), "accepts no more") == 2; }, 10000ms), 10001ms)
      << pod.p.output();
  EXPECT_EQ(test::post_chat(pod.port, false, {{"authorization", "Bearer sk-new"}}).result_int(), 200);
  EXPECT_EQ(test::post_chat(pod.port, false, {{"authorization", "Bearer sk-old"}}).result_int(), 401);
  for (auto& s : open) {
    s->read_rest();
    EXPECT_TRUE(s->done()) << s->got.substr(0, 300);
    EXPECT_EQ(s->content_events(), 40u);
  }
  EXPECT_EQ(pod.metric("sluice_config_reloads_total{result=\"done\"}"), 1);
  EXPECT_EQ(pod.metric("sluice_config_generation"), 1);

  // A broken keys file: refused with a log line, the running config serves on.
  {
    FILE* f = std::fopen(keys.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("sk-broken not-a-number 0 broken\n", f);
    std::fclose(f);
  }
  ASSERT_EQ(::kill(pod.p.pid(), SIGHUP), 0);
  ASSERT_LT(test::wait_until([&] { return pod.logged("config reload refused"); }, 10000ms), 10001ms) << pod.p.output();
  EXPECT_EQ(test::post_chat(pod.port, false, {{"authorization", "Bearer sk-new"}}).result_int(), 200);
  EXPECT_EQ(pod.metric("sluice_config_reloads_total{result=\"refused\"}"), 1);
  EXPECT_EQ(pod.metric("sluice_config_generation"), 1);
  EXPECT_EQ(pod.p.signal_and_wait(SIGTERM), 0) << pod.p.output();
  ::unlink(keys.c_str());
}

TEST_F(Processes, TheMemoryBudgetHoldsThePodsSummedResidentMemory) {
  // Measure what three idle workers hold, then give the pod a budget that one worker's RSS stays
  // well under and the sum of three is over the shed threshold of.
  double rss_sum = 0;
  {
    test::serve_node probe(args("3", {"--memory-sample-interval", "50ms"}));
    ASSERT_NE(probe.port, 0);
    probe.p.keep_reading();
    ASSERT_EQ(test::post_chat(probe.port, false).result_int(), 200);
    test::wait_until([&] { return probe.metric("sluice_worker_processes") == 3; });
    std::this_thread::sleep_for(200ms);  // every worker has sampled its RSS at least once
    rss_sum = probe.metric("sluice_pod_resident_memory_bytes");
  }
  ASSERT_GT(rss_sum, 0);
  // Sheds above 0.9 x budget: the sum (1.4 x budget) is past that line, one worker (a third) is not.
  const auto budget = static_cast<std::uint64_t>(rss_sum / 1.4);
  test::serve_node pod(args("3", {"--memory-sample-interval", "50ms", "--memory-limit", std::to_string(budget) + "B"}));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();  // the workers' log lines never fill the pipe while the test waits
  ASSERT_LT(test::wait_until([&] { return pod.metric("sluice_pod_resident_memory_bytes") > 0.9 * static_cast<double>(budget); },
                             5000ms),
            5001ms);
  std::this_thread::sleep_for(200ms);  // every worker has sampled the pod's sum since (every 50 ms)
  auto r = test::post_chat(pod.port, false);
  EXPECT_EQ(r.result_int(), 503) << r.body();
  EXPECT_NE(r.body().find("memory"), std::string::npos) << r.body();
  EXPECT_EQ(test::call(pod.port, test::bhttp::verb::get, "/readyz").result_int(), 503);
  const auto pids = serving_pids(pod.p.output());
  ASSERT_EQ(pids.size(), 3u);
  for (int pid : pids)
    EXPECT_LT(static_cast<double>(resident_bytes(pid)), 0.9 * static_cast<double>(budget))
        << "each worker alone is under the shed line: the pod's sum is what sheds";
}

TEST_F(Processes, SigtermDrainsTheStreamsOfEveryWorker) {
  test::serve_node pod(args("3"));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();
  std::vector<std::unique_ptr<open_stream>> open;
  for (int i = 0; i < 9; ++i) {
    open.push_back(std::make_unique<open_stream>(pod.port, 20, 50));
    ASSERT_EQ(open.back()->status, 200);
  }
  ASSERT_EQ(::kill(pod.p.pid(), SIGTERM), 0);
  for (auto& s : open) {
    s->read_rest();
    EXPECT_TRUE(s->done()) << s->got.substr(0, 300);
    EXPECT_EQ(s->content_events(), 20u);
  }
  EXPECT_EQ(pod.p.signal_and_wait(SIGTERM), 0) << "a second SIGTERM after the streams ended changes nothing";
  EXPECT_NE(pod.p.output().find("supervisor stopped"), std::string::npos);
}

TEST_F(Processes, WorkersOfAKilledSupervisorDrainAndExit) {
  test::serve_node pod(args("2"));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();
  const auto pids = wait_serving(pod, 2);
  ASSERT_EQ(pids.size(), 2u);
  ::kill(pod.p.pid(), SIGKILL);
  // PR_SET_PDEATHSIG: each worker gets SIGTERM, drains (no streams, --drain-delay 0s) and exits.
  EXPECT_LT(test::wait_until([&] {
              return process_state(pids[0]) == 0 || process_state(pids[0]) == 'Z';
            }, 10000ms),
            10001ms);
  EXPECT_LT(test::wait_until([&] {
              return process_state(pids[1]) == 0 || process_state(pids[1]) == 'Z';
            }, 10000ms),
            10001ms);
}

TEST_F(Processes, AReplacementWorkerServesItsGenerationsKeysWhateverTheFileSaysNow) {
  const std::string keys = test::temp_file_with("sk-gen 0 0 gen\n");
  test::serve_node pod(args("2", {"--keys-file", keys}));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();
  const auto pids = wait_serving(pod, 2);
  ASSERT_EQ(pids.size(), 2u);
  std::ofstream(keys) << "sk-broken not-a-number 0\n";  // broken, and not reloaded
  ::kill(pids[0], SIGKILL);
  ASSERT_EQ(wait_serving(pod, 3).size(), 3u) << "the replacement starts with the generation's keys";
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(test::post_chat(pod.port, false, {{"authorization", "Bearer sk-gen"}}).result_int(), 200);
  EXPECT_EQ(pod.metric("sluice_worker_restarts_total"), 1);
  ::unlink(keys.c_str());
}

// The admin address's port, from the "listening on" line ("; admin HOST:PORT").
std::uint16_t admin_port(const std::string& output) {
  static const std::regex re(R"(; admin [0-9.]+:([0-9]+)\))");
  std::smatch m;
  return std::regex_search(output, m, re) ? static_cast<std::uint16_t>(std::stoi(m[1].str())) : 0;
}

TEST_F(Processes, AdminListenAnswersProbesAndThePodsMetricsWhenTheMainListenerIsFull) {
  // One process, one connection allowed on the main address.
  test::serve_node one(args("1", {"--max-connections", "1", "--admin-listen", "127.0.0.1:0"}));
  ASSERT_NE(one.port, 0);
  one.p.keep_reading();
  const std::uint16_t admin = admin_port(one.p.output());
  ASSERT_NE(admin, 0) << one.p.output();
  test::client_socket held(one.port);  // the main listener's one connection
  held.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  char buf[512];
  ASSERT_GT(held.sock.read_some(test::net::buffer(buf)), 0u);
  EXPECT_EQ(test::call(one.port, test::bhttp::verb::get, "/healthz").result_int(), 0) << "the main listener is full";
  EXPECT_EQ(test::call(admin, test::bhttp::verb::get, "/healthz").result_int(), 200);
  EXPECT_EQ(test::call(admin, test::bhttp::verb::get, "/readyz").result_int(), 200);
  const auto metrics = test::call(admin, test::bhttp::verb::get, "/metrics");
  EXPECT_EQ(metrics.result_int(), 200);
  // At least the scrape's own connection (the probes' may not be noticed closed yet).
  const auto at = metrics.body().find("\nsluice_admin_connections_active ");
  ASSERT_NE(at, std::string::npos) << metrics.body().substr(0, 300);
  EXPECT_GE(std::stod(metrics.body().substr(at + 33)), 1.0);
  auto other = test::call(admin, test::bhttp::verb::post, "/v1/chat/completions", test::chat_body(false));
  EXPECT_EQ(other.result_int(), 404) << other.body();
  EXPECT_NE(other.body().find("admin-listen"), std::string::npos) << other.body();
  held.close();

  // A pod: every worker accepts on the admin address too, and answers for the pod.
  test::serve_node pod(args("2", {"--admin-listen", "127.0.0.1:0"}));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();
  const std::uint16_t pod_admin = admin_port(pod.p.output());
  ASSERT_NE(pod_admin, 0) << pod.p.output();
  for (int i = 0; i < 4; ++i) {
    const auto m = test::call(pod_admin, test::bhttp::verb::get, "/metrics");
    EXPECT_NE(m.body().find("\nsluice_worker_processes 2\n"), std::string::npos);
  }
  EXPECT_EQ(pod.p.signal_and_wait(SIGTERM), 0) << pod.p.output();
}

}  // namespace

namespace {

// A key's max_streams and rpm across three processes: each process alone would allow them three
// times over.
TEST_F(Processes, AClientKeysMaxStreamsAndRpmHoldForThePod) {
  const std::string keys = test::temp_file_with("sk-pod 4 0 pod\nsk-rate 0 6 rate\n");
  test::serve_node pod(args("3", {"--keys-file", keys, "--max-streams", "100"}));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();
  ASSERT_EQ(wait_serving(pod, 3).size(), 3u);
  std::vector<std::future<int>> streams;
  for (int i = 0; i < 12; ++i)
    streams.push_back(std::async(std::launch::async, [port = pod.port] {
      open_stream s(port, 30, 40, "sk-pod");
      if (s.status == 200) {
        s.read_rest();
        if (!s.done()) return -1;
      }
      return s.status;
    }));
  int whole = 0, refused = 0;
  for (auto& f : streams) {
    const int st = f.get();
    whole += st == 200;
    refused += st == 429;
  }
  EXPECT_EQ(whole, 4) << "the key's four streams for the pod, not four in each process";
  EXPECT_EQ(refused, 8);
  EXPECT_LE(sim->snapshot().peak_active_streams, 4u);

  int ok = 0, limited = 0;
  for (int i = 0; i < 18; ++i) {
    const unsigned st = test::post_chat(pod.port, false, {{"Authorization", "Bearer sk-rate"}}).result_int();
    ok += st == 200;
    limited += st == 429;
  }
  EXPECT_GE(ok, 6);
  EXPECT_LE(ok, 7) << "six a minute for the pod (one more if the test took over 10 s)";
  EXPECT_EQ(ok + limited, 18);
  ::unlink(keys.c_str());
}

// An upstream's requests-per-minute and max-concurrent, configured in a file, across three processes.
struct ProcessesUpstream : Processes {
  std::string config;
  void TearDown() override {
    if (!config.empty()) ::unlink(config.c_str());
  }
  std::vector<std::string> pod_args(const std::string& upstream_fields, const std::string& more) {
    config = test::temp_file_with("upstreams:\n  - name: limited\n    url: http://127.0.0.1:" +
                                  std::to_string(sim->port()) + "\n" + upstream_fields + more);
    return {"serve", "--listen", "127.0.0.1:0", "--threads", "1", "--processes", "3", "--config", config,
            "--log-format", "json", "--drain-delay", "0s"};
  }
};

TEST_F(ProcessesUpstream, AnUpstreamsRequestsPerMinuteArePacedForThePodSoItNeverRefuses) {
  constexpr int rpm = 12;
  sim.reset();
  sim::options so;
  so.listen = "127.0.0.1:0";
  so.tokens = 2;
  so.token_delay = 1ms;
  so.limit_rpm = rpm;
  sim = std::make_unique<sim::server>(so);
  ASSERT_TRUE(sim->start().has_value());
  test::serve_node pod(pod_args("    requests-per-minute: " + std::to_string(rpm) + "\n", "max-hold: 1500ms\n"));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();
  ASSERT_EQ(wait_serving(pod, 3).size(), 3u);
  std::vector<std::future<unsigned>> results;
  for (int i = 0; i < 36; ++i)
    results.push_back(std::async(std::launch::async, [port = pod.port] { return test::post_chat(port, false).result_int(); }));
  int ok = 0, shed = 0;
  for (auto& r : results) {
    const unsigned st = r.get();
    ok += st == 200;
    shed += st == 429;
  }
  // Each process pacing alone would have sent 36, and the upstream refused 24 of them.
  EXPECT_EQ(sim->snapshot().rate_limited, 0u) << "the pod made the upstream refuse";
  EXPECT_GE(ok, rpm);
  EXPECT_LE(ok, rpm + 1) << "one more per 5 s of refill while requests hold (1.5 s)";
  EXPECT_EQ(ok + shed, 36);
}

TEST_F(ProcessesUpstream, AnUpstreamsMaxConcurrentHoldsForThePod) {
  test::serve_node pod(pod_args("    max-concurrent: 2\n", "max-hold: 10s\n"));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();
  ASSERT_EQ(wait_serving(pod, 3).size(), 3u);
  std::vector<std::future<int>> results;
  for (int i = 0; i < 6; ++i)
    results.push_back(std::async(std::launch::async, [port = pod.port] {
      open_stream s(port, 10, 40);
      if (s.status == 200) {
        s.read_rest();
        if (!s.done()) return -1;
      }
      return s.status;
    }));
  for (auto& r : results) EXPECT_EQ(r.get(), 200);
  EXPECT_EQ(sim->snapshot().peak_active_streams, 2u) << "the upstream saw more than max-concurrent streams at once";
}

}  // namespace

namespace {

// Only worker `serving` of `pids` runs (the others stopped) while `f` sends its requests.
template <class F>
void with_only(const std::vector<int>& pids, int serving, F&& f) {
  for (int pid : pids)
    if (pid != serving) ::kill(pid, SIGSTOP);
  ASSERT_LT(test::wait_until([&] {
              return std::all_of(pids.begin(), pids.end(), [&](int pid) { return pid == serving || process_state(pid) == 'T'; });
            }),
            5001ms);
  f();
  for (int pid : pids)
    if (pid != serving) ::kill(pid, SIGCONT);
}

// Failures seen by two workers open the circuit for the third, which never sent the upstream a request.
TEST_F(Processes, AnUpstreamsCircuitIsOneForThePod) {
  test::serve_node pod(args("3", {"--circuit-failures", "3", "--max-attempts", "1", "--circuit-open-time", "60s"}));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();
  const std::vector<int> pids = wait_serving(pod, 3);
  ASSERT_EQ(pids.size(), 3u);
  const std::vector<std::pair<std::string, std::string>> failing{{"x-sim-status", "500"}};
  with_only(pids, pids[0], [&] {
    for (int i = 0; i < 2; ++i) EXPECT_EQ(test::post_chat(pod.port, false, failing).result_int(), 500u);
  });
  with_only(pids, pids[1], [&] { EXPECT_EQ(test::post_chat(pod.port, false, failing).result_int(), 500u); });
  EXPECT_EQ(sim->snapshot().completion_requests, 3u);
  with_only(pids, pids[2], [&] {
    auto r = test::post_chat(pod.port, false);
    EXPECT_EQ(r.result_int(), 503u) << r.body();
  });
  EXPECT_EQ(sim->snapshot().completion_requests, 3u) << "the third worker's circuit was open before it sent anything";
  EXPECT_EQ(pod.metric(R"(sluice_upstream_circuit_opens_total{upstream="default"})"), 1);
  EXPECT_EQ(pod.metric(R"(sluice_upstream_circuit_state{upstream="default"})"), 2);
}

}  // namespace

namespace {

std::string get_body_status(std::future<test::bhttp::response<test::bhttp::string_body>>& f, unsigned& status) {
  auto r = f.get();
  status = r.result_int();
  return r.body();
}

// A background response lives in the store of the worker that made it (--queue memory): a GET or
// a resume that another worker accepts is handed to that worker with the client's connection.
TEST_F(Processes, AStoredResponseIsServedByTheWorkerHoldingItWhicheverWorkerAcceptsTheRequest) {
  test::serve_node pod(args("3"));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();
  const std::vector<int> pids = wait_serving(pod, 3);
  ASSERT_EQ(pids.size(), 3u);
  std::string id;
  with_only(pids, pids[0], [&] {
    auto r = test::call(pod.port, test::bhttp::verb::post, "/v1/responses",
                        R"({"model":"sim-1","input":"tell me","background":true})", {{"x-sim-tokens", "20"}});
    ASSERT_EQ(r.result_int(), 200u) << r.body();
    id = std::string(boost::json::parse(r.body()).at("id").as_string());
  });
  ASSERT_FALSE(id.empty());
  const std::string sent = R"(sluice_pod_handovers_total{result="sent"})";
  // Accepted by the second worker while the holder is stopped: the connection waits in the
  // holder's inbox, and is answered once it runs again.
  std::future<test::bhttp::response<test::bhttp::string_body>> got, resumed;
  with_only(pids, pids[1], [&] {
    got = std::async(std::launch::async, [&] { return test::call(pod.port, test::bhttp::verb::get, "/v1/responses/" + id); });
    EXPECT_LT(test::wait_until([&] { return pod.metric(sent) >= 1; }), 5001ms);
  });
  unsigned status = 0;
  std::string body = get_body_status(got, status);
  EXPECT_EQ(status, 200u) << body;
  EXPECT_EQ(boost::json::parse(body).at("id").as_string(), id);
  // A resume of its events, accepted by the third worker.
  with_only(pids, pids[2], [&] {
    resumed = std::async(std::launch::async, [&] {
      return test::call(pod.port, test::bhttp::verb::get, "/v1/responses/" + id + "?stream=true&starting_after=0");
    });
    EXPECT_LT(test::wait_until([&] { return pod.metric(sent) >= 2; }), 5001ms);
  });
  body = get_body_status(resumed, status);
  EXPECT_EQ(status, 200u) << body;
  EXPECT_NE(body.find("event: response.completed"), std::string::npos) << body.substr(0, 400);
  EXPECT_EQ(pod.metric(R"(sluice_pod_handovers_total{result="failed"})"), 0);
  EXPECT_GE(pod.metric(R"(sluice_pod_shared_rows{table="responses"})"), 1);

  // The holder killed: its store is gone, and so is the response, for every worker.
  ::kill(pids[0], SIGKILL);
  ASSERT_GE(wait_serving(pod, 4, 10000ms).size(), 4u);
  for (int i = 0; i < 6; ++i) {
    auto r = test::call(pod.port, test::bhttp::verb::get, "/v1/responses/" + id);
    EXPECT_EQ(r.result_int(), 404u) << r.body();
  }
  EXPECT_EQ(pod.metric(R"(sluice_pod_shared_rows{table="responses"})"), 0);
}

}  // namespace

namespace {

// A key the new generation knows too shares its counters with the old one: a reload resets no
// rate, and the old generation's streams still count against the key's max_streams.
TEST_F(Processes, AReloadKeepsAKeysRateAndCountsTheOldGenerationsStreams) {
  const std::string keys = test::temp_file_with("sk-kept 2 3 kept\n");
  test::serve_node pod(args("2", {"--keys-file", keys}));
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();
  // Two of the key's three requests a minute, as long streams: its two at once.
  std::vector<std::unique_ptr<open_stream>> open;
  for (int i = 0; i < 2; ++i) {
    open.push_back(std::make_unique<open_stream>(pod.port, 40, 50, "sk-kept"));
    ASSERT_EQ(open.back()->status, 200) << open.back()->got;
  }
  std::ofstream(keys) << "sk-kept 2 3 kept\nsk-other 0 0 other\n";
  ASSERT_EQ(::kill(pod.p.pid(), SIGHUP), 0);
  ASSERT_LT(test::wait_until([&] { return occurrences(pod.p.output(), "accepts no more") == 2; }, 10000ms), 10001ms)
      << pod.p.output();
  EXPECT_EQ(test::post_chat(pod.port, false, {{"authorization", "Bearer sk-other"}}).result_int(), 200)
      << "the new generation serves";
  EXPECT_EQ(test::post_chat(pod.port, false, {{"authorization", "Bearer sk-kept"}}).result_int(), 429)
      << "the old generation's two streams count against the key's two";
  for (auto& s : open) {
    s->read_rest();
    EXPECT_TRUE(s->done());
  }
  EXPECT_EQ(test::post_chat(pod.port, false, {{"authorization", "Bearer sk-kept"}}).result_int(), 200);
  EXPECT_EQ(test::post_chat(pod.port, false, {{"authorization", "Bearer sk-kept"}}).result_int(), 429)
      << "three a minute across the reload: a reset would have allowed three more";
  ::unlink(keys.c_str());
}

}  // namespace
