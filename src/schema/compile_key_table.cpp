// A node's member-name table: the names `properties`, `required` and `dependentRequired` mention,
// sorted, linked in schema order (for the evaluator's prediction of the next member) and placed in
// a hash table the evaluator probes once per member. Part of the compiler (compiler.hpp).
#include <iterator>
#include <map>

#include "schema/compile_support.hpp"
#include "schema/compiler.hpp"

namespace sluice::schema::detail {

// The names of one node's table, each with its `properties` subschema and its index among the
// tracked names (those required/dependentRequired mention), gathered by build_key_table.
struct compiler::key_names {
  std::map<std::string, key_entry> table;
  std::vector<std::string> tracked;
  // Names that only required/dependentRequired mention count as properties of their own (and
  // towards max_total_chars); a name `properties` declares was counted there once already, so a
  // strict schema, which lists every property in `required`, is not counted twice.
  std::size_t new_names = 0, new_chars = 0;  // since the last count_new_names

  std::uint32_t track(const std::string& name) {
    key_entry& e = table[name];
    if (e.tracked == no_node) {
      e.tracked = static_cast<std::uint32_t>(tracked.size());
      tracked.push_back(name);
      if (e.prop == no_node) ++new_names, new_chars += code_points(name);
    }
    return e.tracked;
  }
};

result<void> compiler::build_key_table(node& n, const member_names& names, const std::string& path) {
  key_names keys;
  for (const auto& [name, node_idx] : names.properties) keys.table[name].prop = node_idx;
  std::vector<std::uint32_t> req;
  for (const auto& r : names.required) req.push_back(keys.track(r));
  if (auto r = count_new_names(keys, path, "required"); !r) return r;
  std::vector<dependency> deps = track_dependencies(names, keys);
  if (auto r = count_new_names(keys, path, "dependentRequired"); !r) return r;
  n.required = append(p_.indices, req);
  for (const std::uint32_t t : req) {
    if (t < 64) n.required_mask |= std::uint64_t{1} << t;
    else n.required_fits = false;
  }
  n.dependencies = append(p_.dependencies, deps);
  std::vector<text_ref> tracked_refs;
  for (const auto& t : keys.tracked) tracked_refs.push_back(p_.add_text(t));
  n.tracked_names = append(p_.names, tracked_refs);
  std::vector<key_entry> entries = key_entries(keys.table);
  link_schema_order(n, names, keys.table, entries);
  std::vector<key_slot> slots = place_keys(n, entries);
  n.keys = append(p_.keys, entries);
  n.key_slots = append(p_.slots, slots);
  return ok;
}

// Adds the names tracked since the last call to the schema's counts of properties and characters;
// the refusal names `keyword` of the object at `path`.
result<void> compiler::count_new_names(key_names& keys, const std::string& path, const char* keyword) {
  properties_ += keys.new_names;
  if (properties_ > lim_.max_properties)
    return refuse("schema has more than " + std::to_string(lim_.max_properties) + " properties",
                  path + "/" + keyword);
  if (add_chars(keys.new_chars)) return too_many_chars(path + "/" + keyword);
  keys.new_names = keys.new_chars = 0;
  return ok;
}

// dependentRequired: each trigger and the names it needs, tracked (the needs in p_.indices).
std::vector<dependency> compiler::track_dependencies(const member_names& names, key_names& keys) {
  std::vector<dependency> deps;
  for (const auto& [trigger, needs] : names.dependent) {
    dependency d{keys.track(trigger), {}};
    std::vector<std::uint32_t> ns;
    for (const auto& x : needs) ns.push_back(keys.track(x));
    d.needs = append(p_.indices, ns);
    deps.push_back(d);
  }
  return deps;
}

// The table's entries in name order, their names stored and hashed.
std::vector<key_entry> compiler::key_entries(std::map<std::string, key_entry>& table) {
  std::vector<key_entry> entries;
  entries.reserve(table.size());
  for (auto& [name, e] : table) {
    e.name = p_.add_text(name);
    e.hash = key_hash(name);
    entries.push_back(std::move(e));
  }
  return entries;
}

// The schema order of `properties`, as links between the (name-sorted) entries.
void compiler::link_schema_order(node& n, const member_names& names, const std::map<std::string, key_entry>& table,
                                 std::vector<key_entry>& entries) {
  auto index_of = [&](const std::string& name) {
    return static_cast<std::uint32_t>(std::distance(table.begin(), table.find(name)));
  };
  std::uint32_t prev = no_node;
  for (const auto& [name, node_idx] : names.properties) {
    const std::uint32_t i = index_of(name);
    if (prev == no_node) n.first_key = i;
    else if (entries[prev].next == no_node && prev != i) entries[prev].next = i;
    prev = i;
  }
}

// The key table of a node: multiplicative hashing into a power-of-two table at most half full.
// Small tables (the usual object of a structured output) get a multiplier under which no two
// keys share a slot, searched for at compile time (a bounded number of tries, the table up to
// 8 slots per key), so a member name costs one probe at validation time. Otherwise linear
// probing from the hashed slot.
std::vector<key_slot> compiler::place_keys(node& n, const std::vector<key_entry>& entries) {
  if (entries.empty()) return {};
  constexpr std::size_t perfect_max_keys = 64;
  constexpr int tries_per_size = 24;
  std::uint32_t bits = 1;
  while ((std::size_t{1} << bits) < 2 * entries.size()) ++bits;
  auto fill = [&](std::uint32_t b, std::uint64_t mult, bool probe, std::vector<key_slot>& out) {
    const std::uint32_t size = 1u << b, mask = size - 1;
    out.assign(size, key_slot{});
    for (std::uint32_t i = 0; i < entries.size(); ++i) {
      std::uint32_t s = key_slot_of(entries[i].hash, mult, static_cast<std::uint8_t>(64 - b));
      if (out[s].entry) {
        if (!probe) return false;
        while (out[s].entry) s = (s + 1) & mask;
      }
      out[s] = {static_cast<std::uint32_t>(entries[i].hash >> 32), i + 1};
    }
    return true;
  };
  std::vector<key_slot> slots;
  if (entries.size() <= perfect_max_keys) {
    std::uint64_t state = 0x9e3779b97f4a7c15ULL;  // fixed: the same schema compiles the same way
    for (std::uint32_t b = bits; b <= bits + 2; ++b) {
      for (int t = 0; t < tries_per_size; ++t) {
        state += 0x9e3779b97f4a7c15ULL;
        std::uint64_t mult = (state ^ (state >> 31)) * 0xbf58476d1ce4e5b9ULL | 1;
        if (fill(b, mult, false, slots)) {
          n.key_mult = mult;
          n.key_shift = static_cast<std::uint8_t>(64 - b);
          n.key_perfect = true;
          return slots;
        }
      }
    }
  }
  n.key_mult = 0x9e3779b97f4a7c15ULL;
  n.key_shift = static_cast<std::uint8_t>(64 - bits);
  n.key_perfect = false;
  fill(bits, n.key_mult, true, slots);
  return slots;
}

}  // namespace sluice::schema::detail
