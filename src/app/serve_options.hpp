// Everything `sluice serve` can be told, grouped by the module that uses it. Built once from the
// config file and flags, then frozen and shared read-only.
#pragma once

#include "http/server_options.hpp"
#include "proxy/options.hpp"
#include "upstream/options.hpp"

namespace sluice::config {
class option_table;
}

namespace sluice::app {

struct serve_options {
  http::server_options http;
  upstream::options upstream;
  proxy::options proxy;

  void register_options(config::option_table& t);
  // Cross-field checks after loading (e.g. buffers, URLs). Errors name the option.
  result<void> validate() const;
};

}  // namespace sluice::app
