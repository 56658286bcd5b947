// The whole relay, split anywhere: recorded upstream streams (tests/data/streams: chat with usage
// and multi-byte UTF-8, chat tool calls, Responses text and function-call events, an upstream's own
// in-band error) replayed through the gateway cut at byte offsets, as HTTP chunks (one piece per
// chunk) and on the wire (the response's bytes, head and chunk-size lines included, cut
// anywhere), at one offset and at random multi-cuts, with a pause between pieces so that each
// lands in its own read. Every client body must be byte-identical to the recording (a Responses
// stream's, which the gateway records, but for the response id the gateway gives it: 128 random
// bits in place of the upstream's), and the tokens accounted must be those of the unsplit replay,
// for every cut. An Anthropic upstream's streams (tests/data/dialects/anthropic_upstream, through an
// upstream of dialect: anthropic) likewise: every cut must give the corpus's expected translation
// (the chunk id and `created` the gateway gives set to the corpus's), through the body filter.
#include <gtest/gtest.h>

#include <regex>

#include <condition_variable>
#include <deque>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>

#include "boxes.hpp"
#include "responses_events.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;
using test::bhttp::verb;

namespace {

#if defined(__SANITIZE_ADDRESS__)
// Sanitizers make every request several times dearer: every 5th (chunks) and 11th (wire) offset,
// strides prime to the events' structure, so each build covers every kind of boundary.
constexpr std::size_t kChunkStride = 5, kWireStride = 11, kRandomCases = 20;
#else
constexpr std::size_t kChunkStride = 1, kWireStride = 3, kRandomCases = 40;
#endif
constexpr int kClients = 6;

// `name` under tests/data/streams (or a path under tests/data from there).
std::string read_file(const std::string& name) {
  std::ifstream f(std::string(SLUICE_TEST_DATA_DIR) + "/streams/" + name, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string hex(std::size_t n) {
  char b[32];
  std::snprintf(b, sizeof b, "%zx", n);
  return b;
}

// One replay: the bytes to send and where to cut them (offsets into `bytes`, ascending).
struct split_case {
  std::string bytes;
  std::vector<std::size_t> cuts;
};

// The head every replay starts with.
const std::string kHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";

// As HTTP chunks: each piece between cuts of the body is one chunk (the head goes first).
split_case as_chunks(const std::string& body, std::vector<std::size_t> cuts) {
  split_case c;
  c.bytes = kHead;
  std::size_t from = 0;
  cuts.push_back(body.size());
  for (std::size_t to : cuts) {
    if (to <= from) continue;
    c.cuts.push_back(c.bytes.size());
    c.bytes += hex(to - from) + "\r\n" + body.substr(from, to - from) + "\r\n";
    from = to;
  }
  c.cuts.push_back(c.bytes.size());
  c.bytes += "0\r\n\r\n";
  return c;
}

// On the wire: the whole response (head, one chunk, the last chunk) cut at byte offsets.
split_case on_the_wire(const std::string& body, std::vector<std::size_t> cuts) {
  split_case c;
  c.bytes = kHead + hex(body.size()) + "\r\n" + body + "\r\n0\r\n\r\n";
  c.cuts = std::move(cuts);
  return c;
}

// An upstream that answers request `x-split-case: i` with case i's bytes, cut as it says, a pause
// after each piece. Accepts on one thread, answers on a few (the gateway opens one connection per
// concurrent stream).
class split_upstream {
 public:
  explicit split_upstream(const std::vector<split_case>& cases)
      : cases_(cases), acceptor_(io_, test::tcp::endpoint(test::net::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { accept_loop(); });
    for (int i = 0; i < kClients; ++i) workers_.emplace_back([this] { work(); });
  }
  ~split_upstream() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    boost::system::error_code ec;
    test::tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ec);
    accept_thread_.join();
    for (auto& w : workers_) w.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  void accept_loop() {
    while (true) {
      test::tcp::socket s(io_);
      boost::system::error_code ec;
      acceptor_.accept(s, ec);
      std::lock_guard lock(mu_);
      if (ec || stop_) return;
      pending_.push_back(std::move(s));
      cv_.notify_one();
    }
  }
  void work() {
    while (true) {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
      if (stop_) return;
      test::tcp::socket s = std::move(pending_.front());
      pending_.pop_front();
      lock.unlock();
      serve(s);
    }
  }
  void serve(test::tcp::socket& s) {
    boost::system::error_code ec;
    s.set_option(test::tcp::no_delay(true), ec);
    std::string req;
    char buf[4096];
    std::size_t head_end;
    while ((head_end = req.find("\r\n\r\n")) == std::string::npos) {
      const std::size_t n = s.read_some(test::net::buffer(buf), ec);
      if (ec) return;
      req.append(buf, n);
    }
    const auto at = req.find("x-split-case: ");
    if (at == std::string::npos || at > head_end) return;
    const split_case& c = cases_.at(std::stoul(req.substr(at + 14)));
    std::size_t from = 0;
    for (std::size_t to : c.cuts) {
      if (to <= from || to >= c.bytes.size()) continue;
      test::net::write(s, test::net::buffer(c.bytes.data() + from, to - from), ec);
      if (ec) return;
      from = to;
      std::this_thread::sleep_for(300us);
    }
    test::net::write(s, test::net::buffer(c.bytes.data() + from, c.bytes.size() - from), ec);
    s.shutdown(test::tcp::socket::shutdown_send, ec);
    while (!ec) s.read_some(test::net::buffer(buf), ec);  // until the gateway closes its side
  }

  const std::vector<split_case>& cases_;
  test::net::io_context io_;
  test::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::thread accept_thread_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<test::tcp::socket> pending_;
  bool stop_ = false;
};

double tokens(std::uint16_t port, const char* direction) {
  const std::string text = test::call(port, verb::get, "/metrics").body();
  const std::string series = std::string("sluice_tokens_total{direction=\"") + direction + "\"} ";
  const auto pos = text.find("\n" + series);
  return pos == std::string::npos ? 0 : std::stod(text.substr(pos + 1 + series.size()));
}
// Every request that has ended (finish() counts it after its last byte), probes and scrapes aside.
double requests_ended(std::uint16_t port) {
  const std::string text = test::call(port, verb::get, "/metrics").body();
  double sum = 0;
  std::size_t at = 0;
  static const std::string name = "\nsluice_requests_total{";
  while ((at = text.find(name, at)) != std::string::npos) {
    const auto close = text.find('}', at);
    if (text.substr(at, close - at).find("route=\"metrics\"") == std::string::npos) sum += std::stod(text.substr(close + 2));
    at = close;
  }
  return sum;
}

struct recording {
  const char* file;
  const char* path;
  // The usage the recording reports (completion, prompt); -1: none (content events are counted).
  int completion, prompt;
  // An Anthropic upstream's stream: what the client gets is this file (its translation), not the
  // recording.
  const char* translated = nullptr;
};

// What a client got from an Anthropic upstream, with the chunk id and `created` the gateway made
// (128 random bits; the clock) set to the corpus's.
std::string with_corpus_ids(const std::string& body) {
  static const std::regex id("chatcmpl-[0-9a-f]{32}"), created("\"created\":[0-9]+");
  return std::regex_replace(std::regex_replace(body, id, "chatcmpl-0123456789abcdef0123456789abcdef"), created,
                            "\"created\":1700000000");
}

const recording kRecordings[] = {
    {"chat_usage_utf8.sse", "/v1/chat/completions", 11, 19},
    {"chat_tool_calls.sse", "/v1/chat/completions", 17, 82},
    {"responses_text.sse", "/v1/responses", 9, 23},
    {"responses_function_call.sse", "/v1/responses", 14, 57},
    {"chat_error_event.sse", "/v1/chat/completions", -1, -1},
    {"../dialects/anthropic_upstream/text_with_usage.upstream.sse", "/v1/chat/completions", 12, 25,
     "../dialects/anthropic_upstream/text_with_usage.expected.sse"},
    {"../dialects/anthropic_upstream/parallel_tools.upstream.sse", "/v1/chat/completions", 61, 25,
     "../dialects/anthropic_upstream/parallel_tools.expected.sse"},
};

void PrintTo(const recording& r, std::ostream* os) { *os << r.file; }

class RelaySplit : public ::testing::TestWithParam<recording> {};

TEST_P(RelaySplit, EveryCutGivesTheSameBytesAndTheSameTokens) {
  const recording& r = GetParam();
  const std::string body = read_file(r.file);
  ASSERT_GT(body.size(), 100u) << r.file;

  std::vector<split_case> cases;
  cases.push_back(as_chunks(body, {}));  // the reference: unsplit
  for (std::size_t i = 1; i < body.size(); i += kChunkStride) cases.push_back(as_chunks(body, {i}));
  const std::size_t wire_size = on_the_wire(body, {}).bytes.size();
  for (std::size_t i = 1; i < wire_size; i += kWireStride) cases.push_back(on_the_wire(body, {i}));
  std::mt19937 rng(20261201);
  for (std::size_t k = 0; k < kRandomCases; ++k) {
    const bool wire = k % 2 == 1;
    const std::size_t size = wire ? wire_size : body.size();
    std::vector<std::size_t> cuts(2 + rng() % 12);
    for (auto& c : cuts) c = 1 + rng() % (size - 1);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    cases.push_back(wire ? on_the_wire(body, cuts) : as_chunks(body, cuts));
  }

  split_upstream up(cases);
  app::serve_options go;
  go.http.listen = "127.0.0.1:0";
  go.http.threads = 2;
  if (r.translated) {
    routing::upstream_spec claude;
    claude.url = up.url();
    claude.dialect = routing::upstream_dialect::anthropic;
    go.routing.upstreams = {claude};
  } else {
    go.upstream.urls = {up.url()};
  }
  go.routing.max_attempts = 1;
  test::gateway_box gw(go);
  const std::string request =
      std::string(R"({"model":"gpt-4o-mini","stream":true,)") +
      (std::string(r.path) == "/v1/responses" ? R"("input":"hi"})"
                                              : R"("stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]})");

  // A recorded Responses stream carries the gateway's id for it: put back, the rest is compared.
  const bool recorded = std::string(r.path) == "/v1/responses";
  const std::string upstream_id =
      recorded ? std::string(test::parse_events(body).front().data.at("response").at("id").as_string()) : std::string();
  auto replay = [&](std::size_t i) {
    auto res = test::call(gw.port, verb::post, r.path, request, {{"x-split-case", std::to_string(i)}});
    return std::make_pair(res.result_int(), recorded       ? test::with_upstream_id(res.body(), upstream_id)
                                            : r.translated ? with_corpus_ids(res.body())
                                                           : res.body());
  };
  const std::string want = r.translated ? read_file(r.translated) : body;
  auto settle = [&](double ended) {
    test::wait_until([&] { return requests_ended(gw.port) >= ended; }, 10s);
  };

  // The unsplit replay: the recording's own bytes and usage.
  const auto [status, ref] = replay(0);
  ASSERT_EQ(status, 200u);
  ASSERT_EQ(ref, want) << "relayed byte-identical (an Anthropic upstream's: its expected translation)";
  settle(1);
  const double ref_out = tokens(gw.port, "completion"), ref_in = tokens(gw.port, "prompt");
  if (r.completion >= 0) {
    EXPECT_EQ(ref_out, r.completion);
    EXPECT_EQ(ref_in, r.prompt);
  } else {
    EXPECT_GT(ref_out, 0) << "content events stand in for tokens without a usage report";
  }

  // Every other case, from a few clients at once.
  std::atomic<std::size_t> next{1}, bad{0};
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t)
    clients.emplace_back([&] {
      for (std::size_t i; (i = next++) < cases.size();) {
        const auto [st, got] = replay(i);
        if (st == 200 && got == want) continue;
        ++bad;
        std::lock_guard lock(mu);
        if (failures.size() < 5) {
          std::string cuts;
          for (auto c : cases[i].cuts) cuts += std::to_string(c) + " ";
          failures.push_back("case " + std::to_string(i) + " cuts [" + cuts + "] status " + std::to_string(st) +
                             "\n" + got);
        }
      }
    });
  for (auto& c : clients) c.join();
  EXPECT_EQ(bad.load(), 0u) << cases.size() << " cases; first failures:\n"
                            << [&] {
                                 std::string s;
                                 for (auto& f : failures) s += f + "\n---\n";
                                 return s;
                               }();
  const double n = static_cast<double>(cases.size());
  settle(n);
  EXPECT_EQ(tokens(gw.port, "completion"), ref_out * n) << "every cut accounts the same tokens";
  EXPECT_EQ(tokens(gw.port, "prompt"), ref_in * n);
}

INSTANTIATE_TEST_SUITE_P(Recordings, RelaySplit, ::testing::ValuesIn(kRecordings),
                         [](const auto& info) {
                           std::string n = info.param.file;
                           n = n.substr(n.rfind('/') + 1);  // a corpus file: its case's name
                           n = n.substr(0, n.find('.'));
                           return info.param.translated ? "anthropic_" + n : n;
                         });

}  // namespace
