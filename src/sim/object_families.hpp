// The stored-object families the simulator serves (sim/objects_api.hpp) described as data: each
// one's collection path, `object` type, id prefix, which create-body fields it copies, the fields a
// new object starts with, its actions and the families nested under it. Constant tables and pure
// functions; any thread.
#pragma once

#include <boost/beast/http/verb.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::sim {

enum class family : std::size_t {
  batches,
  vector_stores,
  vector_store_files,       // /v1/vector_stores/{id}/files
  file_batches,             // /v1/vector_stores/{id}/file_batches
  file_batch_files,         // /v1/vector_stores/{id}/file_batches/{id}/files
  fine_tuning_jobs,
  fine_tuning_events,       // /v1/fine_tuning/jobs/{id}/events (always empty)
  fine_tuning_checkpoints,  // /v1/fine_tuning/jobs/{id}/checkpoints (always empty)
  conversations,
  conversation_items,       // /v1/conversations/{id}/items
};
inline constexpr std::size_t family_count = 10;
constexpr std::size_t index_of(family f) noexcept { return static_cast<std::size_t>(f); }

// What a family's routes do besides their action paths.
enum object_op : unsigned { op_create = 1, op_list = 2, op_retrieve = 4, op_update = 8, op_delete = 16 };

// An action on one object: `method` /.../{id}/`name`.
struct object_action {
  enum class answer { object, search_page, content_page };
  std::string_view name;
  boost::beast::http::verb method = boost::beast::http::verb::post;
  answer kind = answer::object;
  std::string_view answer_status = {};  // the status the answer shows ("": unchanged)
  std::string_view answer_stamp = {};   // a time field set to now in the answer
  std::string_view kept_status = {};    // the status kept after it (a cancel that settles)
  std::string_view kept_stamp = {};     // a time field set to now once kept
};

// A create-body field whose elements become objects of family `into` too: an id becomes
// {into's id_field: id}, an object is taken as it is. They go under the new object, or with
// `under_parent` beside it, under its parent (a file batch's files are its vector store's files);
// `mirror` keeps the same objects, same ids, in that family under the new object too.
struct object_seed {
  std::string_view field;
  family into;
  bool under_parent = false;
  std::optional<family> mirror = std::nullopt;
};

// A time field of a new object: created_at, expires_at 24 hours on.
struct object_stamp {
  std::string_view field;
  std::int64_t after_s = 0;
};

struct object_family {
  std::string_view segment = {};            // the collection's path segment(s) under its parent
  std::optional<family> parent = {};        // the family whose objects hold this one's
  std::string_view type = {};               // the `object` field
  std::string_view noun = {};               // in "No such <noun> object: <id>"
  std::string_view id_prefix = {};
  unsigned ops = 0;                         // object_op bits
  std::string_view defaults = "{}";         // the fields a new object starts with, JSON
  std::span<const std::string_view> copied = {};       // create-body fields copied, replacing the defaults
  std::span<const std::string_view> merged = {};       // of those, objects merged into the default one
  bool copies_all = false;                  // every create-body field is copied
  std::span<const std::string_view> required = {};     // create-body fields that must be there
  std::span<const std::string_view> updatable = {};    // POST /{id} fields replaced
  std::span<const std::string_view> file_fields = {};  // fields naming uploaded files (an id or ids)
  std::span<const object_stamp> stamps = {};
  std::string_view id_field = {};           // the create-body field that is the id (a vector store file's file_id)
  std::string_view parent_field = {};       // the field naming the parent's id (vector_store_id)
  std::span<const object_action> actions = {};
  std::span<const object_seed> seeds = {};
  std::string_view bulk_field = {};         // create: {field: [...]}, each element an object, answered as a list
  std::optional<family> counted = std::nullopt;  // file_counts: that family's objects under this one
  bool delete_answers_parent = false;       // DELETE answers the parent object (conversation items)
  void (*shape)(boost::json::object&) = nullptr;                   // normalises a new object
  std::string_view (*prefix_of)(const boost::json::object&) = nullptr;  // its id prefix, when not id_prefix
};

const object_family& family_of(family f) noexcept;
// Each family's parent family, for object_store.
std::vector<std::optional<std::size_t>> object_family_tree();

// What a path under a family names: a collection, one object, or an action on one object. `ids`:
// the ids in the path, outermost first (the object's own last when `object`).
struct object_target {
  family fam = family::batches;
  std::vector<std::string_view> ids = {};
  bool object = false;
  const object_action* action = nullptr;
};
std::optional<object_target> parse_object_target(std::string_view path);
// Whether `path` (no query) is one of the top-level families' collections or under one.
bool is_objects_path(std::string_view path) noexcept;

}  // namespace sluice::sim
