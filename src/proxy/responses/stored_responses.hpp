// proxy::stored_responses: the routes of stored responses beside the request pipeline (docs/queue.md).
// POST /v1/responses with `background: true` stores the response and queues its job (in this
// process's memory store, or --queue redis in the fleet's queue); GET /v1/responses/{id} answers the
// stored object, or with ?stream=true replays the events after `starting_after` and follows the
// live ones; POST /v1/responses/{id}/cancel drops a queued job or stops a running one. A response
// belongs to the key's identity that created it (ctx.tenant): another tenant's is not found.
//
// One per worker thread, beside that thread's pipeline, which hands it these routes and runs the
// jobs (background.cpp). It answers through answers.hpp and never calls the pipeline.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "http/server.hpp"
#include "jobs/response_backend.hpp"
#include "jobs/response_store.hpp"
#include "proxy/request_context.hpp"
#include "proxy/shared_config.hpp"

namespace sluice::proxy {

class stored_responses {
 public:
  explicit stored_responses(const shared_config& cfg);

  // GET /v1/responses/{id} (its object, or ?stream=true its events) and POST .../cancel.
  task<void> serve(request_context& ctx, const http::request& req);
  // POST /v1/responses with background: the job queued, its object answered (or its stream followed).
  task<void> create_background(request_context& ctx, http::request& req);
  // previous_response_id naming a response this gateway stored (under its own id, for this
  // tenant) becomes the upstream's id for it in the body; any other id goes on as it is.
  task<void> map_previous_response(request_context& ctx, http::request& req);
  // --queue redis: the client's upstream credential (upstream_credential) sealed for job `id`
  // (credential_seal), "" when none is needed; an error when one is needed and the fleet has no
  // queue secret (never stored in clear).
  result<std::string> sealed_credential(const http::request& req, std::string_view id) const;

 private:
  task<void> refuse_background(request_context& ctx, jobs::store_refusal why, std::uint64_t waiting);
  // --queue redis: the response and its job in Redis; `sealed`: sealed_credential's.
  task<void> create_queued(request_context& ctx, jobs::new_response r, std::string sealed);
  // The client's Authorization where a job's upstream needs it (pass-through: no client keys, and
  // an upstream without a key of its own); "" otherwise. Kept in-process only.
  std::string upstream_credential(const http::request& req) const;
  // POST .../cancel of `found`, which `holder` holds.
  task<void> cancel(request_context& ctx, jobs::response_backend& holder, const jobs::response_view& found);
  // Hands the client's connection to worker process `row`, which holds the response.
  task<void> hand_over(request_context& ctx, const http::request& req, std::size_t row);

  // --- following a response's events ---
  // The events of `id` after `after`, then the live ones until the response ends; its store's
  // outage past the patience, or the response vanishing, ends it in-band.
  task<void> follow(request_context& ctx, jobs::response_backend& holder, std::string_view id, std::int64_t after);
  task<void> lost_under_follower(request_context& ctx, std::string_view id, std::int64_t last);
  task<void> end_follow(request_context& ctx, const error& e, std::int64_t last, std::string_view reason);
  // A follow's event-stream head (false: the client left).
  task<bool> open_event_stream(request_context& ctx);
  // One batch of a follow written; what the follow does next.
  enum class follow_next : std::uint8_t { more, wait, done };
  struct follow_cursor {
    std::int64_t last;  // the last sequence number written
    std::string out;    // the write buffer, reused
  };
  task<follow_next> deliver(request_context& ctx, jobs::event_batch& batch, follow_cursor& cur);
  follow_next left_follow(request_context& ctx) noexcept;
  // The drain's in-band end.
  task<void> cut_follow(request_context& ctx, std::int64_t last);

  // The stores, in the order a response is looked for: this process's, then the fleet's queue.
  jobs::response_backend* in_memory() noexcept { return memory_ ? &*memory_ : nullptr; }
  jobs::response_backend* in_queue() noexcept { return queue_ ? &*queue_ : nullptr; }

  const shared_config& cfg_;
  std::optional<jobs::memory_backend> memory_;  // with a memory store (svc.responses)
  std::optional<jobs::redis_backend> queue_;    // with --queue redis (svc.queue)
};

}  // namespace sluice::proxy
