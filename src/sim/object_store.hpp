// The simulator's store of the OpenAI API's stored objects (sim/objects_api.hpp): JSON objects in
// collections, each collection one family's objects under one parent object (none for a top-level
// family). Bounded per family by count and by bytes: past either, the family's oldest object goes,
// and everything under it. Shared by every worker thread: each call takes the store's mutex. It
// knows the families only as indices and their tree; their rules are objects_api's.
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace sluice::sim {

class object_store {
 public:
  // The objects of one family kept at most, and their bytes (serialized) at most.
  static constexpr std::size_t default_max_objects = 10'000;
  static constexpr std::size_t default_max_bytes = 16 * 1024 * 1024;

  // parent_of[f]: the family whose objects hold family f's objects (nothing for a top-level one).
  explicit object_store(std::vector<std::optional<std::size_t>> parent_of,
                        std::size_t max_objects = default_max_objects, std::size_t max_bytes = default_max_bytes);

  struct page {
    std::vector<boost::json::object> data;
    bool has_more = false;
  };

  // Stores `body` in the collection (family, parent) under `id`, or when `id` is empty under a new
  // one: `prefix` and 24 hex digits of a counter mixed with `seed`. An object of that id already
  // there is replaced in its place. The stored object with its "id" set; not_found when the parent
  // object is gone, payload_too_large when the object alone is over the family's bytes.
  result<boost::json::object> add(std::size_t family, std::string_view parent, boost::json::object body,
                                  std::string_view prefix, std::uint64_t seed, std::string_view id = {});
  std::optional<boost::json::object> find(std::size_t family, std::string_view parent, std::string_view id) const;
  bool contains(std::size_t family, std::string_view parent, std::string_view id) const;
  // Applies `change` to the stored object; the changed object (its "id" kept).
  std::optional<boost::json::object> modify(std::size_t family, std::string_view parent, std::string_view id,
                                            const std::function<void(boost::json::object&)>& change);
  // Removes the object and everything under it; false when there is no such object.
  bool remove(std::size_t family, std::string_view parent, std::string_view id);
  // Up to `limit` objects of a collection in the order they were added (or newest first), from the
  // one after `after` when it is given (an unknown `after`: an empty page).
  page list(std::size_t family, std::string_view parent, std::size_t limit, bool newest_first,
            std::string_view after = {}) const;
  std::size_t count(std::size_t family, std::string_view parent) const;

  std::size_t objects() const;    // over every family
  std::size_t bytes() const;      // their serialized sizes
  std::uint64_t evicted() const;  // objects that went for the bounds, those under them included

 private:
  struct entry {
    std::string id;
    boost::json::object body;
    std::size_t bytes = 0;
  };
  using slot = std::pair<std::string, std::uint64_t>;  // (parent, sequence number)
  struct family_table {
    std::map<slot, entry> items;                            // each parent's objects in the order added
    std::unordered_map<std::string, std::uint64_t> seq_of;  // parent + '\x1f' + id -> sequence number
    std::unordered_map<std::string, std::size_t> id_uses;   // id -> collections holding it (a parent is there)
    std::map<std::uint64_t, std::string> by_age;            // sequence number -> parent, oldest first
    std::size_t bytes = 0;
  };

  const entry* find_locked(std::size_t family, std::string_view parent, std::string_view id) const;
  std::string new_id_locked(const family_table& t, std::string_view parent, std::string_view prefix, std::uint64_t seed);
  void erase_locked(std::size_t family, const slot& at, bool evicting);
  void trim_locked(std::size_t family, std::uint64_t keep);

  mutable std::mutex mutex_;
  std::vector<std::optional<std::size_t>> parent_of_;
  std::vector<family_table> families_;
  std::size_t max_objects_, max_bytes_;
  std::uint64_t counter_ = 0;
  std::size_t objects_ = 0, bytes_ = 0;
  std::uint64_t evicted_ = 0;
};

}  // namespace sluice::sim
