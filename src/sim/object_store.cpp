#include "sim/object_store.hpp"

#include <boost/json/serialize.hpp>

#include <limits>

#include "sim/bytes.hpp"

namespace sluice::sim {
namespace {

constexpr std::uint64_t last_seq = std::numeric_limits<std::uint64_t>::max();

std::string object_slot_key(std::string_view parent, std::string_view id) {
  std::string key(parent);
  key += '\x1f';  // never in an id of a path segment the store is asked for
  key += id;
  return key;
}

}  // namespace

object_store::object_store(std::vector<std::optional<std::size_t>> parent_of, std::size_t max_objects,
                           std::size_t max_bytes)
    : parent_of_(std::move(parent_of)), families_(parent_of_.size()), max_objects_(max_objects), max_bytes_(max_bytes) {}

result<boost::json::object> object_store::add(std::size_t family, std::string_view parent, boost::json::object body,
                                              std::string_view prefix, std::uint64_t seed, std::string_view id) {
  std::lock_guard lock(mutex_);
  family_table& t = families_.at(family);
  if (const auto p = parent_of_[family]; p && !families_[*p].id_uses.contains(std::string(parent)))
    return error::make(errc::not_found, "The object " + std::string(parent) + " that would hold it is gone.");
  const std::string own = id.empty() ? new_id_locked(t, parent, prefix, seed) : std::string(id);
  body["id"] = own;
  const std::size_t size = boost::json::serialize(body).size();
  if (size > max_bytes_)
    return error::make(errc::payload_too_large, "The object's " + std::to_string(size) + " bytes are more than the " +
                                                    std::to_string(max_bytes_) + " its kind may keep.");
  const std::string key = object_slot_key(parent, own);
  std::uint64_t seq = 0;
  if (const auto it = t.seq_of.find(key); it != t.seq_of.end()) {
    seq = it->second;
    entry& e = t.items.at({std::string(parent), seq});
    t.bytes -= e.bytes;
    bytes_ -= e.bytes;
    e.body = body;
    e.bytes = size;
  } else {
    seq = ++counter_;
    t.items.emplace(slot{std::string(parent), seq}, entry{own, body, size});
    t.seq_of.emplace(key, seq);
    ++t.id_uses[own];
    t.by_age.emplace(seq, std::string(parent));
    ++objects_;
  }
  t.bytes += size;
  bytes_ += size;
  trim_locked(family, seq);
  return body;
}

std::string object_store::new_id_locked(const family_table& t, std::string_view parent, std::string_view prefix,
                                        std::uint64_t seed) {
  std::string id;
  do {  // a repeat is as good as impossible, but an id must name one object
    ++counter_;
    id = std::string(prefix) + hex_digits(mix64(seed ^ mix64(counter_)), 16) + hex_digits(mix64(counter_), 8);
  } while (t.id_uses.contains(id) || t.seq_of.contains(object_slot_key(parent, id)));
  return id;
}

const object_store::entry* object_store::find_locked(std::size_t family, std::string_view parent,
                                                     std::string_view id) const {
  const family_table& t = families_.at(family);
  const auto it = t.seq_of.find(object_slot_key(parent, id));
  if (it == t.seq_of.end()) return nullptr;
  return &t.items.at({std::string(parent), it->second});
}

std::optional<boost::json::object> object_store::find(std::size_t family, std::string_view parent,
                                                      std::string_view id) const {
  std::lock_guard lock(mutex_);
  const entry* e = find_locked(family, parent, id);
  if (!e) return std::nullopt;
  return e->body;
}

bool object_store::contains(std::size_t family, std::string_view parent, std::string_view id) const {
  std::lock_guard lock(mutex_);
  return find_locked(family, parent, id) != nullptr;
}

std::optional<boost::json::object> object_store::modify(std::size_t family, std::string_view parent, std::string_view id,
                                                        const std::function<void(boost::json::object&)>& change) {
  std::lock_guard lock(mutex_);
  family_table& t = families_.at(family);
  const auto at = t.seq_of.find(object_slot_key(parent, id));
  if (at == t.seq_of.end()) return std::nullopt;
  const std::uint64_t seq = at->second;
  entry& e = t.items.at({std::string(parent), seq});
  change(e.body);
  e.body["id"] = e.id;
  const std::size_t size = boost::json::serialize(e.body).size();
  t.bytes = t.bytes - e.bytes + size;
  bytes_ = bytes_ - e.bytes + size;
  e.bytes = size;
  boost::json::object out = e.body;
  trim_locked(family, seq);  // others go, never this one: its fields are replaced, not grown without end
  return out;
}

bool object_store::remove(std::size_t family, std::string_view parent, std::string_view id) {
  std::lock_guard lock(mutex_);
  const family_table& t = families_.at(family);
  const auto at = t.seq_of.find(object_slot_key(parent, id));
  if (at == t.seq_of.end()) return false;
  erase_locked(family, {std::string(parent), at->second}, false);
  return true;
}

// The object at `at`, then, when no other collection of its family holds its id, every object under
// it, family by family.
void object_store::erase_locked(std::size_t family, const slot& at, bool evicting) {
  family_table& t = families_[family];
  const auto it = t.items.find(at);
  if (it == t.items.end()) return;
  const std::string id = it->second.id;
  t.bytes -= it->second.bytes;
  bytes_ -= it->second.bytes;
  t.seq_of.erase(object_slot_key(at.first, id));
  t.by_age.erase(at.second);
  t.items.erase(it);
  --objects_;
  if (evicting) ++evicted_;
  if (const auto uses = t.id_uses.find(id); uses != t.id_uses.end() && --uses->second > 0) return;
  t.id_uses.erase(id);
  for (std::size_t child = 0; child < families_.size(); ++child) {
    if (parent_of_[child] != family) continue;
    auto& items = families_[child].items;
    std::vector<slot> under;
    for (auto c = items.lower_bound({id, 0}); c != items.end() && c->first.first == id; ++c) under.push_back(c->first);
    for (const auto& s : under) erase_locked(child, s, evicting);
  }
}

void object_store::trim_locked(std::size_t family, std::uint64_t keep) {
  family_table& t = families_[family];
  while (t.items.size() > max_objects_ || t.bytes > max_bytes_) {
    auto oldest = t.by_age.begin();
    if (oldest != t.by_age.end() && oldest->first == keep) ++oldest;
    if (oldest == t.by_age.end()) return;
    erase_locked(family, {oldest->second, oldest->first}, true);
  }
}

object_store::page object_store::list(std::size_t family, std::string_view parent, std::size_t limit, bool newest_first,
                                      std::string_view after) const {
  std::lock_guard lock(mutex_);
  const family_table& t = families_.at(family);
  const std::string owner(parent);
  auto lo = t.items.lower_bound({owner, 0});
  auto hi = t.items.upper_bound({owner, last_seq});
  if (!after.empty()) {
    const auto at = t.seq_of.find(object_slot_key(parent, after));
    if (at == t.seq_of.end()) return {};
    if (newest_first)
      hi = t.items.lower_bound({owner, at->second});
    else
      lo = t.items.upper_bound({owner, at->second});
  }
  page out;
  if (newest_first) {
    for (auto it = hi; it != lo && !out.has_more;) {
      --it;
      out.has_more = out.data.size() == limit;
      if (!out.has_more) out.data.push_back(it->second.body);
    }
  } else {
    for (auto it = lo; it != hi && !out.has_more; ++it) {
      out.has_more = out.data.size() == limit;
      if (!out.has_more) out.data.push_back(it->second.body);
    }
  }
  return out;
}

std::size_t object_store::count(std::size_t family, std::string_view parent) const {
  std::lock_guard lock(mutex_);
  const family_table& t = families_.at(family);
  const std::string owner(parent);
  return static_cast<std::size_t>(
      std::distance(t.items.lower_bound({owner, 0}), t.items.upper_bound({owner, last_seq})));
}

std::size_t object_store::objects() const {
  std::lock_guard lock(mutex_);
  return objects_;
}

std::size_t object_store::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

std::uint64_t object_store::evicted() const {
  std::lock_guard lock(mutex_);
  return evicted_;
}

}  // namespace sluice::sim
