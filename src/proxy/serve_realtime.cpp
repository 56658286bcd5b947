// GET /v1/realtime (issue 30): a WebSocket session is a request like any other until its upgrade:
// the client key and its limits, an admission slot, an upstream picked for its model (held while
// every one is busy); then realtime_relay bridges it, and it is logged and counted like a stream.
#include <boost/beast/websocket/rfc6455.hpp>

#include "proxy/pipeline.hpp"
#include "proxy/relay/realtime_relay.hpp"
#include "proxy/upstream_request.hpp"

namespace sluice::proxy {

namespace {

// How a relayed session ended, in the request's end.
void account_session(request_context& ctx, routing::lease& lease, const realtime_end& r) {
  auto& end = ctx.end;
  end.kind = end_kind::stream;
  end.status = 101;
  end.attempts = 1;
  end.upstream = lease.upstream().spec.name;
  end.bytes_out = r.bytes_to_client;
  end.written = true;
  if (r.idle) {  // realtime-idle-timeout: a side that went silent
    lease.succeeded();
    end.outcome = obs::outcome::timeout;
    end.reason = "idle_timeout";
  } else if (r.too_big) {  // realtime-max-message-bytes: the client's fault, not the upstream's
    lease.succeeded();
    end.outcome = obs::outcome::client_error;
    end.reason = "message_too_big";
  } else if (r.upstream_failed) {
    lease.failed(runtime::steady::now());
    end.outcome = obs::outcome::upstream_error;
    end.reason = to_string(errc::upstream_protocol);
  } else {
    lease.succeeded();
    end.outcome = obs::outcome::ok;
    end.reason = r.client_closed ? "client_closed" : "upstream_closed";
  }
}

}  // namespace

task<void> pipeline::serve_realtime(request_context& ctx, http::request& req) {
  ctx.keep_alive = false;  // after a session the connection is the WebSocket's, then gone
  if (!ctx.socket || !boost::beast::websocket::is_upgrade(req))
    co_return co_await send_error(ctx, error::make(errc::bad_request, "GET /v1/realtime opens a WebSocket session: send it as an "
                                                                      "upgrade (Connection: Upgrade, Upgrade: websocket)."));
  admission_ticket ticket;
  if (!co_await authenticate(ctx, req, ticket)) co_return;
  if (!co_await admit(ctx, ticket)) co_return;
  exchange x;
  attempt_state st{ctx.start + cfg_.router.settings().request_timeout, runtime::steady::now() + cfg_.router.settings().max_hold,
                   std::vector<bool>(cfg_.router.size(), false)};
  if (!co_await pick_or_hold(ctx, x, st)) {
    if (!x.failure) x.failure = error::make(errc::overloaded, "No upstream could take the Realtime session; retry shortly.");
    co_return co_await send_failure(ctx, x);
  }
  const auto& u = x.lease.upstream();
  if (u.spec.dialect == routing::upstream_dialect::anthropic)
    co_return co_await send_error(ctx, error::make(errc::not_found, "The upstream '" + u.spec.name +
                                                                        "' speaks the Messages API, which has no Realtime sessions.", "model"));
  upstream_call call = make_upstream_call(req, ctx.request_id, false, cfg_.svc.keys == nullptr, false);
  if (auto bad = prepare_attempt(call, u, ctx.path, ctx.model, cfg_.router.settings().usage))
    co_return co_await send_error(ctx, *bad);
  const realtime_target target{&u.target, std::move(call.req)};
  bhttp::fields extra;
  extra.set("x-request-id", ctx.request_id);
  extra.set("x-sluice-upstream", u.spec.name);
  const realtime_limits lim{cfg_.upstream.connect_timeout, cfg_.proxy.realtime_idle_timeout,
                            cfg_.proxy.realtime_max_message_bytes};
  auto in_flight = cfg_.svc.streams.streams_active().enter();
  const realtime_end r = co_await relay_realtime(ctx.socket->socket(), req, target, extra, tls_, lim);
  if (r.refused) {
    if (r.refused->code == errc::upstream_connect) x.lease.failed(runtime::steady::now());
    const int status = r.refused->upstream_status;
    x.attempts = 1;
    if ((status == 401 || status == 403) && !u.authorization.empty()) refuse_gateway_key(x);  // the operator's key
    else x.failure = *r.refused;
    co_return co_await send_failure(ctx, x);
  }
  account_session(ctx, x.lease, r);
}

}  // namespace sluice::proxy
