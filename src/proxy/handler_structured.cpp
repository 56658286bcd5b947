// handler::check_whole_answer: structured outputs on a whole (non-stream) answer. Kept apart from
// handler.cpp so the request story there stays a story; the checks themselves are pure functions
// in structured_output.cpp.
#include <boost/asio/experimental/awaitable_operators.hpp>

#include "proxy/handler.hpp"

namespace sluice::proxy {

using namespace boost::asio::experimental::awaitable_operators;

task<whole_check> handler::check_whole_answer(const output_contract& c, upstream::request& up_req,
                                              http::connection& conn, unsigned& status, std::string& body) {
  whole_check out;
  schema::verdict verdict = check_whole(c, body);
  std::uint64_t attempts = 1;
  while (verdict && c.policy == schema_policy::retry && attempts <= c.retries) {
    ++attempts;
    // One more exchange, raced against the client watcher like the first; the abort handle is
    // declared before the response, which refers to it.
    upstream::abort_handle abort;
    std::unique_ptr<upstream::response> up;
    conn.rearm();
    auto sent = co_await (send_upstream(up_req, abort, conn) || watch_client(conn, abort));
    conn.rearm();
    if (sent.index() == 1) {
      out.client_gone = true;
      co_return out;
    }
    auto& r = std::get<0>(sent);
    if (!r) {
      if (r.err().code == errc::cancelled) out.client_gone = true;
      else out.failure = r.err();
      co_return out;
    }
    up = std::move(*r);
    conn.rearm();
    auto read = co_await (read_body(*up, conn) || watch_client(conn, abort));
    conn.rearm();
    if (read.index() == 1) {
      out.client_gone = true;
      co_return out;
    }
    auto& b = std::get<0>(read);
    if (!b) {
      if (b.err().code == errc::cancelled) out.client_gone = true;
      else out.failure = b.err();
      co_return out;
    }
    status = up->status();
    body = std::move(*b);
    if (status / 100 != 2) break;  // the upstream's own error is the answer
    verdict = check_whole(c, body);
  }
  if (c.policy == schema_policy::retry) out.headers.emplace_back(schema_attempts_header, std::to_string(attempts));
  if (status / 100 != 2) co_return out;
  if (c.policy == schema_policy::annotate) out.headers.emplace_back(schema_verdict_header, verdict_header_value(verdict));
  else if (verdict) out.failure = violation_error(*verdict);
  co_return out;
}

}  // namespace sluice::proxy
