#include "upstream/options.hpp"

#include "config/option_table.hpp"

namespace sluice::upstream {

void options::register_options(config::option_table& t) {
  t.add_list("upstream", "upstream base URL, http:// or https:// (repeat for several; each serves every model)", urls)
      .add("upstream-key-env", "environment variable holding the upstream API key (sent as Bearer)", key_env)
      .add("upstream-pool-max-idle", "idle keep-alive upstream connections kept per worker thread", pool_max_idle)
      .add_duration("upstream-pool-idle-timeout", "idle upstream connection lifetime", pool_idle_timeout)
      .add_duration("upstream-connect-timeout", "upstream DNS + TCP connect deadline", connect_timeout)
      .add_duration("upstream-tls-timeout", "upstream TLS handshake deadline", tls_timeout)
      .add_duration("upstream-first-byte-timeout", "request sent -> upstream response head deadline",
                    first_byte_timeout)
      .add_duration("upstream-idle-timeout", "longest silence allowed inside an upstream response body",
                    idle_between_events)
      .add_size("upstream-max-response-head", "largest upstream response head accepted", max_response_head)
      .add_size("upstream-max-response-body", "largest non-streamed upstream response body accepted",
                max_response_body);
}

}  // namespace sluice::upstream
