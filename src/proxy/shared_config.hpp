// What every worker thread's pipeline, and the routes beside it, read of the gateway: its settings,
// the router and the services. Read-only after start-up (the services guard themselves).
#pragma once

#include "jobs/options.hpp"
#include "proxy/options.hpp"
#include "proxy/services.hpp"
#include "proxy/structured/structured_output.hpp"
#include "routing/router.hpp"
#include "schema/cache.hpp"
#include "upstream/options.hpp"

namespace sluice::proxy {

// Read-only after start-up; shared by every worker thread's pipeline
// and stored_responses.
struct shared_config {
  const options& proxy;
  const upstream::options& upstream;
  routing::router& router;  // the upstreams (targets, keys, circuits, pacing) and the pick
  services& svc;
  // Structured outputs: the schema-* settings and the process-wide compiled-schema cache (null: off).
  const schema_options* schema = nullptr;
  schema::schema_cache* schemas = nullptr;
  // Background responses and stored streams (docs/queue.md); null: off.
  const jobs::options* jobs = nullptr;
};

}  // namespace sluice::proxy
