// post_otlp (span_exporter.hpp): one HTTP/1.1 POST on its own connection, run on the exporter's
// thread in an io_context of its own, the whole exchange under one deadline.
#include <boost/asio/co_spawn.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "config/url.hpp"
#include "observability/span_exporter.hpp"
#include "runtime/asio.hpp"

#include <optional>

namespace sluice::obs {
namespace {

namespace beast = boost::beast;
namespace bhttp = beast::http;

task<result<void>> exchange(config::url u, std::string target, std::string body, duration timeout) {
  auto ex = co_await net::this_coro::executor;
  tcp::resolver resolver(ex);
  beast::tcp_stream stream(ex);
  stream.expires_after(timeout);
  error_code ec;
  auto found = co_await resolver.async_resolve(u.host, std::to_string(u.port), ec_out(ec));
  if (ec) co_return error::make(errc::upstream_connect, "resolve " + u.host + ": " + ec.message());
  co_await stream.async_connect(found, ec_out(ec));
  if (ec) co_return error::make(errc::upstream_connect, "connect: " + ec.message());
  bhttp::request<bhttp::string_body> req{bhttp::verb::post, target, 11};
  req.set(bhttp::field::host, u.host_header());
  req.set(bhttp::field::content_type, "application/json");
  req.set(bhttp::field::connection, "close");
  req.body() = std::move(body);
  req.prepare_payload();
  co_await bhttp::async_write(stream, req, ec_out(ec));
  if (ec) co_return error::make(errc::upstream_connect, "send: " + ec.message());
  beast::flat_buffer buf;
  bhttp::response_parser<bhttp::string_body> res;
  res.body_limit(64 * 1024);  // a collector's answer is a small status object
  co_await bhttp::async_read(stream, buf, res, ec_out(ec));
  if (ec) co_return error::make(errc::upstream_connect, "answer: " + ec.message());
  const unsigned status = res.get().result_int();
  if (status / 100 != 2) co_return error::make(errc::upstream_status, "the collector answered HTTP " + std::to_string(status));
  co_return ok;
}

// The spawned task: its result goes to *out (co_spawn's handler needs a default-constructible value).
task<void> post_once(config::url u, std::string target, std::string body, duration timeout, std::optional<result<void>>* out) {
  *out = co_await exchange(std::move(u), std::move(target), std::move(body), timeout);
}

}  // namespace

result<void> post_otlp(const std::string& endpoint, const std::string& body, duration timeout) {
  auto u = config::parse_url(endpoint);
  if (!u) return std::move(u).err();
  std::string target = u->base_path.empty() ? "/v1/traces" : u->base_path;
  net::io_context io(1);
  std::optional<result<void>> out;
  net::co_spawn(io, post_once(*u, std::move(target), body, timeout, &out), [&out](std::exception_ptr e) {
    if (e) out = error::make(errc::internal, "trace export failed unexpectedly");
  });
  io.run();
  return out ? std::move(*out) : error::make(errc::internal, "trace export did not finish");
}

}  // namespace sluice::obs
