// The upstream module's name for the shared base-URL parser (config/url.hpp).
#pragma once

#include "config/url.hpp"

namespace sluice::upstream {
using config::parse_url;
using config::url;
}  // namespace sluice::upstream
