#include "sim/objects_route.hpp"

#include "sim/content.hpp"
#include "sim/media.hpp"
#include "sim/objects_api.hpp"

namespace sluice::sim {

task<response_end> route_objects(connection& c, const http::request<http::string_body>& req) {
  const bool keep = req.keep_alive();
  const object_request request{req.method(), req.target(), req.body(), unix_now()};
  auto body = serve_object_request(c.owner.shared.objects, c.owner.shared.files, request);
  if (!body) {
    auto res = make_error(object_error_status(body.err()), keep, body.err().message, "invalid_request_error",
                          body.err().param);
    co_return co_await write_simple(c, res);
  }
  auto res = media_json(c.owner.opts.spaced_json ? spaced_json(*body, false) : std::move(*body), keep);
  co_return co_await write_simple(c, res);
}

}  // namespace sluice::sim
