// proxy::handler: the request story for one worker thread — route, validate, send upstream, relay.
// Owns that thread's upstream client (and so its keep-alive pool). Shared settings are read-only.
#pragma once

#include <memory>
#include <string>

#include "http/server.hpp"
#include "proxy/options.hpp"
#include "proxy/request_validation.hpp"
#include "upstream/client.hpp"

namespace sluice::proxy {

// Read-only after start-up; shared by every worker thread's handler.
struct shared_config {
  const options& proxy;
  const upstream::options& upstream;
  upstream::url target;
  std::string authorization;  // "Bearer <key>" or empty; never logged or echoed
};

class handler final : public http::request_handler {
 public:
  handler(net::any_io_executor ex, const shared_config& cfg, upstream::ssl::context* tls);

  task<bool> handle(http::request req, http::connection& conn) override;
  task<void> reject(const error& e, http::connection& conn) override;

  upstream::client& upstream_client() noexcept { return client_; }

 private:
  task<bool> forward(http::request& req, http::connection& conn, std::string path, bool stream,
                     const std::string& request_id);
  task<bool> send_error(const error& e, http::connection& conn, unsigned version, bool keep_alive,
                        const std::string& request_id);
  task<void> watch_client(http::connection& conn, upstream::abort_handle& abort);
  // The racing sides of "wait for the upstream while watching the client": each one, when done,
  // cancels the client socket's operations so the watcher ends.
  task<result<std::unique_ptr<upstream::response>>> send_upstream(upstream::request& req, upstream::abort_handle& abort,
                                                                  http::connection& conn);
  task<result<std::string>> read_body(upstream::response& up, http::connection& conn);

  const shared_config& cfg_;
  upstream::client client_;
};

}  // namespace sluice::proxy
