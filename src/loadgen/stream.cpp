// One request from connect to verdict, and the worker loop around it. Everything here runs on the
// worker thread that owns the thread_state.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <netinet/in.h>

#include <algorithm>

#include "loadgen/engine.hpp"

namespace sluice::loadgen::detail {
namespace {

namespace http = boost::beast::http;
using namespace net::experimental::awaitable_operators;

// A response head larger than this is malformed (bounds the bytes a stream keeps between reads).
constexpr std::size_t max_head_bytes = 16 * 1024;
// A non-stream JSON body larger than this is malformed (it is parsed into a DOM to find choices).
constexpr std::uint64_t max_json_body_bytes = 8 * 1024 * 1024;
// A Messages request names max_tokens; flood sends this one when --max-tokens is not given.
constexpr std::uint64_t default_messages_max_tokens = 4096;

std::uint64_t nanos(clock::duration d) {
  return static_cast<std::uint64_t>(std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()));
}

struct result_info {
  outcome kind = outcome::ok;
  std::string why;
};

result_info fail(outcome k, std::string why) { return {k, std::move(why)}; }

result_info from_verdict(verdict v, const std::string& why) {
  switch (v) {
    case verdict::ok: return {outcome::ok, {}};
    case verdict::truncated: return fail(outcome::truncated, why);
    case verdict::malformed: return fail(outcome::malformed, why);
    case verdict::error_event: return fail(outcome::error_event, why);
    case verdict::pending: break;
  }
  return fail(outcome::truncated, "stream ended without a verdict");
}

// Keeps the global open-stream gauge and its peak while a connection is up.
struct open_guard {
  explicit open_guard(run_state& rs) : rs(rs) {
    const auto now = rs.open.fetch_add(1, std::memory_order_relaxed) + 1;
    auto peak = rs.peak_open.load(std::memory_order_relaxed);
    while (now > peak && !rs.peak_open.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  ~open_guard() { rs.open.fetch_sub(1, std::memory_order_relaxed); }
  open_guard(const open_guard&) = delete;
  open_guard& operator=(const open_guard&) = delete;
  run_state& rs;
};

// Binds the socket to the next source address. The port is chosen at connect() for the whole
// address pair (IP_BIND_ADDRESS_NO_PORT), so each source address brings its own ephemeral range.
result_info bind_source(thread_state& ts, const options& opt, tcp::socket& sock) {
  error_code ec;
  const auto source = net::ip::address_v4(0x7F000001u + static_cast<std::uint32_t>(ts.next_source++ % opt.source_ips));
  sock.open(tcp::v4(), ec);
  const int one = 1;
  if (!ec && ::setsockopt(sock.native_handle(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one) != 0)
    ec = error_code(errno, boost::system::system_category());
  if (!ec) sock.bind(tcp::endpoint(source, 0), ec);
  if (ec) return fail(outcome::connect, "bind to " + source.to_string() + ": " + ec.message());
  return {};
}

// Connects within the connect timeout; outcome::ok once connected.
task<result_info> connect(thread_state& ts, run_state& rs, tcp::socket& sock, net::steady_timer& timer) {
  const options& opt = rs.opt;
  if (opt.source_ips > 0) {
    result_info bound = bind_source(ts, opt, sock);
    if (bound.kind != outcome::ok) co_return bound;
  }
  timer.expires_after(opt.connect_timeout);
  auto connected = co_await (sock.async_connect(rs.endpoint, net::as_tuple(use_task)) ||
                             timer.async_wait(net::as_tuple(use_task)));
  if (ts.stopping) co_return fail(outcome::timeout, "run stopped (deadline or cancel) while connecting");
  if (connected.index() == 1) co_return fail(outcome::connect, "connect timed out");
  if (auto cec = std::get<0>(std::get<0>(connected)); cec) co_return fail(outcome::connect, "connect: " + cec.message());
  co_return result_info{};
}

// A response being read: the HTTP parser, the stream check over its body, and the bytes the parser
// could not use yet. Timing and counters go to ts.stats.
struct response_reader {
  // What the bytes of one read led to.
  enum class step { read_on, hold, end };

  response_reader(thread_state& t, const options& o, clock::time_point sent_at)
      : ts(t),
        opt(o),
        sent(sent_at),
        check(o.stream, t.json, &t.stats.gap, wire_of_path(o.path)),
        read_max(o.read_mode == mode::slow ? static_cast<std::size_t>(o.read_size) : t.read_buf.size()) {
    parser.eager(true);
    parser.header_limit(static_cast<std::uint32_t>(max_head_bytes));
    if (opt.stream) parser.body_limit(boost::none);  // a stream is bounded by time, not size
    else parser.body_limit(max_json_body_bytes);
  }

  thread_state& ts;
  const options& opt;
  const clock::time_point sent;
  http::response_parser<http::buffer_body> parser;
  stream_check check;
  std::string carry;  // bytes the HTTP parser could not use yet: a partial head or chunk header
  bool head_done = false;
  const std::size_t read_max;
  std::uint64_t counted_chunks = 0;
  result_info ended;  // step::end's verdict

  step take(std::string_view in, clock::time_point now);
  step on_head();
  result_info closed(error_code ec);
  result_info finish(result_info r);
  step end(result_info r) {
    ended = std::move(r);
    return step::end;
  }
};

// Records timing for whatever arrived, whatever the verdict.
result_info response_reader::finish(result_info r) {
  if (auto ft = check.first_token()) ts.stats.ttft.record(nanos(*ft - sent));
  if (r.kind == outcome::ok) ts.stats.e2e.record(nanos(clock::now() - sent));
  ts.stats.chunks += check.chunks();
  ts.live.chunks.fetch_add(check.chunks() - counted_chunks, std::memory_order_relaxed);
  return r;
}

// The peer closed (cleanly or not). Whether that is a complete message is the parser's call.
result_info response_reader::closed(error_code ec) {
  if (!parser.got_some()) return fail(outcome::truncated, "closed before any response: " + ec.message());
  error_code eof_ec;
  if (ec == net::error::eof) parser.put_eof(eof_ec);
  else eof_ec = ec;
  if (!head_done) return fail(outcome::truncated, "closed inside the response head");
  const verdict v = check.finish(!eof_ec && parser.is_done());
  return from_verdict(v, check.reason());
}

// Feeds one read's bytes (after what was carried) to the parser and the body to the check.
response_reader::step response_reader::take(std::string_view in, clock::time_point now) {
  if (!carry.empty()) {
    carry.append(in);
    in = carry;
  }
  error_code ec;
  std::size_t used = 0;
  while (used < in.size() && !parser.is_done()) {
    auto& body = parser.get().body();
    body.data = ts.body_buf.data();
    body.size = ts.body_buf.size();
    body.more = true;
    const std::size_t k = parser.put(net::buffer(in.data() + used, in.size() - used), ec);
    used += k;
    const std::size_t body_n = ts.body_buf.size() - body.size;
    if (ec == http::error::need_buffer) ec = {};
    if (ec && ec != http::error::need_more) return end(fail(outcome::malformed, "bad HTTP response: " + ec.message()));
    if (!head_done && parser.is_header_done()) {
      head_done = true;
      if (const step s = on_head(); s != step::read_on) return s;
    }
    if (body_n > 0 && !check.feed(std::string_view(ts.body_buf.data(), body_n), now))
      return end(from_verdict(check.state(), check.reason()));
    if (opt.read_mode == mode::abandon && check.chunks() >= opt.abandon_after && !parser.is_done())
      return end({outcome::abandoned_ok, {}});
    if (ec == http::error::need_more) break;
  }
  ts.live.chunks.fetch_add(check.chunks() - counted_chunks, std::memory_order_relaxed);
  counted_chunks = check.chunks();
  if (parser.is_done()) return end(from_verdict(check.finish(true), check.reason()));

  // Keep only what the parser has not used; it is at most a partial head or chunk header.
  if (in.data() == carry.data()) carry.erase(0, used);
  else carry.assign(in.substr(used));
  if (carry.size() > max_head_bytes) return end(fail(outcome::malformed, "response head or chunk header too large"));
  return step::read_on;
}

// The response head: its status counted and checked, the content type of a stream; never_read
// holds the connection from here.
response_reader::step response_reader::on_head() {
  const auto& head = parser.get();
  const int status = static_cast<int>(head.result_int());
  ++ts.stats.status_counts[status];
  if ((status == 429 || status == 503) && head.find(http::field::retry_after) != head.end()) ++ts.stats.retry_after;
  if (status < 200 || status > 299) return end(fail(outcome::status, "status " + std::to_string(status)));
  if (opt.stream) {
    auto ct = head[http::field::content_type];
    if (!boost::beast::iequals(ct.substr(0, 17), "text/event-stream"))
      return end(fail(outcome::malformed, "content-type is '" + std::string(ct) + "', not text/event-stream"));
  }
  if (opt.read_mode == mode::never_read) return step::hold;
  return step::read_on;
}

// never_read: the connection is held open, unread, for opt.hold.
task<result_info> hold(response_reader& rd, net::steady_timer& timer) {
  timer.expires_after(rd.opt.hold);
  error_code ec;
  co_await timer.async_wait(ec_out(ec));
  if (rd.ts.stopping) co_return rd.finish(fail(outcome::timeout, "run stopped (deadline or cancel) while holding"));
  co_return rd.finish({outcome::abandoned_ok, {}});
}

// Reads the response until a verdict: "wait until readable, then read_some into the thread's
// buffer", at the pace of the read mode.
task<result_info> read_response(response_reader& rd, tcp::socket& sock, net::steady_timer& timer) {
  thread_state& ts = rd.ts;
  const options& opt = rd.opt;
  error_code ec;
  for (;;) {
    co_await sock.async_wait(tcp::socket::wait_read, ec_out(ec));
    if (ts.stopping) co_return rd.finish(fail(outcome::timeout, "run stopped (deadline or cancel) while reading"));
    std::size_t n = 0;
    if (!ec) n = sock.read_some(net::buffer(ts.read_buf.data(), rd.read_max), ec);
    if (ec == net::error::would_block || ec == net::error::try_again) continue;
    const auto now = clock::now();
    if (ec) co_return rd.finish(rd.closed(ec));
    ts.stats.bytes += n;
    const response_reader::step s = rd.take(std::string_view(ts.read_buf.data(), n), now);
    if (s == response_reader::step::hold) {
      result_info held = co_await hold(rd, timer);
      co_return held;
    }
    if (s == response_reader::step::end) co_return rd.finish(std::move(rd.ended));
    if (opt.read_mode == mode::slow) {
      timer.expires_after(opt.read_delay);
      co_await timer.async_wait(ec_out(ec));
      if (ts.stopping) co_return rd.finish(fail(outcome::timeout, "run stopped (deadline or cancel) while reading slowly"));
    }
  }
}

// The request/response exchange. Timing and counters go to ts.stats; the verdict is returned.
task<result_info> exchange(thread_state& ts, run_state& rs, tcp::socket& sock, net::steady_timer& timer) {
  result_info r = co_await connect(ts, rs, sock, timer);
  if (r.kind != outcome::ok) co_return r;
  open_guard open(rs);
  error_code ec;
  sock.set_option(tcp::no_delay(true), ec);
  // Reads are "wait until readable, then read_some into the thread's buffer": without this a
  // spurious wake-up would block the whole thread inside read_some.
  sock.non_blocking(true, ec);
  if (ec) co_return fail(outcome::connect, "non-blocking mode: " + ec.message());

  co_await net::async_write(sock, net::buffer(rs.request), ec_out(ec));
  if (ts.stopping) co_return fail(outcome::timeout, "run stopped (deadline or cancel) while sending");
  if (ec) co_return fail(outcome::connect, "send: " + ec.message());
  response_reader rd(ts, rs.opt, clock::now());
  r = co_await read_response(rd, sock, timer);
  co_return r;
}

task<void> one_request(thread_state& ts, run_state& rs) {
  auto ex = co_await net::this_coro::executor;
  tcp::socket sock(ex);
  net::steady_timer timer(ex);
  slot registration(ts, &sock, &timer);
  ++ts.in_flight;
  result_info r = co_await exchange(ts, rs, sock, timer);
  error_code ignored;
  sock.close(ignored);
  --ts.in_flight;
  ts.stats.count(r.kind, r.why);
  const bool failed = r.kind != outcome::ok && r.kind != outcome::abandoned_ok;
  ts.live.failed.fetch_add(failed ? 1 : 0, std::memory_order_relaxed);
  ts.live.finished.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

slot::slot(thread_state& t, tcp::socket* s, net::steady_timer* tm) : ts(t), sock(s), timer(tm), next(t.slots) {
  if (next) next->prev = this;
  ts.slots = this;
}

slot::~slot() {
  if (prev) prev->next = next;
  else ts.slots = next;
  if (next) next->prev = prev;
}

void thread_state::expire() {
  stopping = true;
  for (slot* s = slots; s; s = s->next) {
    error_code ignored;
    if (s->sock && s->sock->is_open()) s->sock->close(ignored);
    if (s->timer) s->timer->cancel();
  }
}

void thread_state::worker_finished() {
  if (--workers_left == 0 && deadline_timer) deadline_timer->cancel();  // lets the io_context run out of work
}

void run_state::worker_finished() {
  if (running.fetch_sub(1) == 1) {
    std::lock_guard lock(mutex);
    done.notify_all();
  }
}

void thread_stats::count(outcome o, std::string_view why) {
  switch (o) {
    case outcome::ok: ++ok; return;
    case outcome::abandoned_ok: ++abandoned_ok; return;
    case outcome::connect: ++connect; break;
    case outcome::status: ++status; break;
    case outcome::truncated: ++truncated; break;
    case outcome::malformed: ++malformed; break;
    case outcome::error_event: ++error_event; break;
    case outcome::timeout: ++timeout; break;
  }
  // Distinct reasons only: 10,000 identical timeouts are one line of diagnosis.
  if (failure_samples.size() < max_failure_samples &&
      std::find(failure_samples.begin(), failure_samples.end(), why) == failure_samples.end())
    failure_samples.emplace_back(why);
}

task<void> worker(thread_state* ts, run_state* rs, std::uint64_t index) {
  if (rs->opt.ramp > duration::zero() && rs->workers > 1) {
    // Worker i starts at ramp * i / workers, so starts are evenly spread.
    net::steady_timer timer(co_await net::this_coro::executor);
    slot registration(*ts, nullptr, &timer);
    const auto offset = rs->opt.ramp * static_cast<std::int64_t>(index) / static_cast<std::int64_t>(rs->workers);
    timer.expires_at(rs->start + std::chrono::duration_cast<clock::duration>(offset));
    error_code ec;
    co_await timer.async_wait(ec_out(ec));
  }
  while (!ts->stopping) {
    if (rs->next.fetch_add(1, std::memory_order_relaxed) >= rs->total) break;
    co_await one_request(*ts, *rs);
  }
}

std::string build_request(const options& opt, const target_url& t) {
  boost::json::object body;
  body["model"] = opt.model;
  if (opt.path == "/v1/completions") {
    body["prompt"] = opt.prompt;
  } else if (opt.path == "/v1/responses") {
    body["input"] = opt.prompt;
  } else {
    boost::json::array messages;
    messages.push_back(boost::json::object{{"role", "user"}, {"content", opt.prompt}});
    body["messages"] = std::move(messages);
  }
  body["stream"] = opt.stream;
  if (opt.max_tokens > 0) body[opt.path == "/v1/responses" ? "max_output_tokens" : "max_tokens"] = opt.max_tokens;
  // The Messages API requires max_tokens.
  else if (opt.path == "/v1/messages") body["max_tokens"] = default_messages_max_tokens;
  const std::string payload = boost::json::serialize(body);

  std::string req;
  req.reserve(512 + payload.size());
  req.append("POST ").append(t.base_path).append(opt.path).append(" HTTP/1.1\r\n");
  req.append("Host: ").append(t.host_header).append("\r\n");
  req.append("User-Agent: sluice-flood/0.1\r\n");
  req.append("Content-Type: application/json\r\n");
  req.append(opt.stream ? "Accept: text/event-stream\r\n" : "Accept: application/json\r\n");
  req.append("Content-Length: ").append(std::to_string(payload.size())).append("\r\n");
  bool versioned = false;
  for (const auto& h : opt.headers) {
    auto line = parse_header_line(h);  // validated before the run
    if (!line) continue;
    req.append(line->name).append(": ").append(line->value).append("\r\n");
    versioned = versioned || boost::beast::iequals(line->name, "anthropic-version");
  }
  // The Messages API wants its version (an Anthropic upstream, the simulator's /v1/messages).
  if (opt.path == "/v1/messages" && !versioned) req.append("anthropic-version: 2023-06-01\r\n");
  req.append("\r\n").append(payload);
  return req;
}

}  // namespace sluice::loadgen::detail
