// The JSON routes of the OpenAI API's stored objects in the simulator: batches, vector stores (their
// files, file batches and search), fine-tuning jobs (their events and checkpoints) and conversations
// (their items), as the official SDKs call them. One set of rules over the families' table
// (sim/object_families.hpp) and one object_store; the uploaded files a body names are looked up in
// the file store. Pure but for the two stores (both thread-safe); `now` is the caller's clock.
#pragma once

#include <boost/beast/http/verb.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "sim/file_store.hpp"
#include "sim/object_families.hpp"
#include "sim/object_store.hpp"

namespace sluice::sim {

struct object_request {
  boost::beast::http::verb method = boost::beast::http::verb::get;
  std::string_view target;  // path and query
  std::string_view body;    // JSON; empty stands for {}
  std::int64_t now = 0;     // seconds since the epoch, for created_at and the actions' times
};

// The answer to a request on a stored-object path (is_objects_path): its JSON, or the error:
// not_found (an unknown path, or "No such <Kind> object: <id>"), method_not_allowed, bad_request
// (not a JSON object, a missing or mistyped field, an unknown file, a bad list query), or
// payload_too_large (an object over its kind's bytes in the store).
result<std::string> serve_object_request(object_store& store, const file_store& files, const object_request& req);

// The HTTP status of an error of serve_object_request.
unsigned object_error_status(const error& e) noexcept;

// A list query's `limit` (1..100, default 20), `order` (asc or desc, default desc) and `after`.
struct object_list_query {
  std::size_t limit = 20;
  bool newest_first = true;
  std::string after;
};
result<object_list_query> parse_object_list_query(std::string_view target);

}  // namespace sluice::sim
