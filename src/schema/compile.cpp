// compile(): schema JSON -> detail::program. Every loop and recursion here is bounded by
// compile_limits, checked before the work they guard, so a hostile schema is refused quickly.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <map>
#include <unordered_map>

#include "schema/compile_support.hpp"
#include "schema/program.hpp"
#include "schema/schema.hpp"

namespace sluice::schema {
namespace {

using namespace detail;
namespace json = boost::json;

constexpr std::string_view draft_2020_12 = "https://json-schema.org/draft/2020-12/schema";

bool is_annotation(std::string_view k) {
  return k == "title" || k == "description" || k == "default" || k == "examples" || k == "$comment" ||
         k == "deprecated" || k == "readOnly" || k == "writeOnly";
}

// Keywords whose subschemas apply to values nested inside the instance: they count towards
// compile_limits::max_depth. In-place applicators (allOf, $ref, ...) and $defs do not.
bool descends(std::string_view k) {
  return k == "properties" || k == "patternProperties" || k == "additionalProperties" || k == "items" ||
         k == "prefixItems" || k == "contains" || k == "propertyNames";
}

class compiler {
 public:
  compiler(const json::value& root, const compile_limits& lim, program& p) : root_(root), lim_(lim), p_(p) {}

  result<void> run() {
    if (auto r = root_id(); !r) return r;
    auto root = compile_schema(root_, "", 0, true);
    if (!root) return std::move(root).err();
    if (auto r = resolve_refs(); !r) return r;
    if (auto r = check_in_place_graph(p_, lim_); !r) return r;
    fold_type_unions();
    return ok;
  }

  // `anyOf` whose branches say nothing but `type` (the nullable idiom of structured outputs:
  // {"anyOf":[{"type":"string"},{"type":"null"}]}) is a union of types: kept as a mask checked at
  // the value's first token, where the branches would all have been decided anyway, instead of one
  // evaluation per branch. Same verdict, same failure (keyword anyOf, same paths and message). Only
  // where anyOf is the node's one in-place applicator, so the order of failures cannot change.
  void fold_type_unions() {
    for (node& n : p_.nodes) {
      if (!n.any_of.size || n.ref != no_node || n.all_of.size || n.one_of.size || n.not_ != no_node ||
          n.if_ != no_node)
        continue;
      std::uint8_t types = 0;
      bool pure = true;
      for (std::uint32_t i = 0; i < n.any_of.size && pure; ++i) {
        const node& b = p_.nodes[p_.indices[n.any_of.begin + i]];
        pure = b.flags == 0;  // no keyword group, not `false`, not integer-only
        types |= b.types;
      }
      if (!pure) continue;
      n.any_types = types;
      n.any_of = {};
      n.flags &= ~static_cast<std::uint32_t>(f_inplace);
    }
  }

 private:
  result<void> root_id() {
    if (!root_.is_object()) return ok;
    auto* id = root_.as_object().if_contains("$id");
    if (!id) return ok;
    if (!id->is_string()) return refuse("$id must be a string", "/$id");
    std::string_view s = id->as_string();
    root_id_ = std::string(s.substr(0, s.find('#')));
    return ok;
  }

  // Reserves the node index first so recursive references to this location find it.
  result<std::uint32_t> compile_schema(const json::value& v, const std::string& path, std::size_t depth,
                                       bool is_root = false) {
    if (auto it = memo_.find(&v); it != memo_.end()) return it->second;
    if (depth > lim_.max_depth)
      return refuse("schema nests deeper than " + std::to_string(lim_.max_depth) + " levels", path);
    if (p_.nodes.size() >= lim_.max_nodes)
      return refuse("schema has more than " + std::to_string(lim_.max_nodes) + " subschemas", path);
    auto idx = static_cast<std::uint32_t>(p_.nodes.size());
    memo_.emplace(&v, idx);
    p_.nodes.emplace_back();
    node n;
    n.path = p_.add_text(path);
    if (v.is_bool()) {
      if (!v.get_bool()) n.flags |= f_false;
      p_.nodes[idx] = std::move(n);
      return idx;
    }
    if (!v.is_object()) return refuse("a schema must be an object or a boolean", path);
    const json::object& o = v.get_object();
    std::vector<std::pair<std::string, std::uint32_t>> names;  // properties
    std::vector<std::string> required;
    std::vector<std::pair<std::string, std::vector<std::string>>> dependent;
    bool has_contains = o.contains("contains");

    for (const auto& kv : o) {
      std::string_view k = kv.key();
      const json::value& val = kv.value();
      std::string kp = path + "/" + escape_token(k);
      std::size_t child_depth = descends(k) ? depth + 1 : depth;
      if (is_annotation(k)) continue;
      if (k == "$schema") {
        if (!is_root) return refuse("$schema is only supported at the root", kp);
        if (!val.is_string()) return refuse("$schema must be a string", kp);
        std::string_view s = val.get_string();
        if (s != draft_2020_12 && s != std::string(draft_2020_12) + "#")
          return refuse("only JSON Schema draft 2020-12 is supported", kp);
      } else if (k == "$id") {
        if (!is_root) return refuse("$id is only supported at the root", kp);
      } else if (k == "$defs") {
        if (!val.is_object()) return refuse("$defs must be an object", kp);
        for (const auto& d : val.get_object()) {
          auto r = compile_schema(d.value(), kp + "/" + escape_token(d.key()), depth);
          if (!r) return std::move(r).err();
        }
      } else if (k == "$ref") {
        if (!val.is_string()) return refuse("$ref must be a string", kp);
        n.flags |= f_inplace;
        refs_.push_back({idx, std::string(val.get_string()), kp});
      } else if (k == "type") {
        auto r = parse_type(val, kp);
        if (!r) return std::move(r).err();
        n.types = *r;
      } else if (k == "enum") {
        if (!val.is_array()) return refuse("enum must be an array", kp);
        enum_values_ += val.get_array().size();
        if (enum_values_ > lim_.max_enum_values)
          return refuse("schema has more than " + std::to_string(lim_.max_enum_values) + " enum values", kp);
        std::vector<value_hash> hs;
        for (const auto& e : val.get_array()) hs.push_back(hash_json(e));
        std::sort(hs.begin(), hs.end());
        n.enum_values = append(p_.hashes, hs);
        n.has_enum = true;
        n.flags |= f_enum;
      } else if (k == "const") {
        n.has_const = true;
        n.const_hash = hash_json(val);
        n.flags |= f_enum;
      } else if (k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum" ||
                 k == "multipleOf") {
        if (!val.is_number()) return refuse(std::string(k) + " must be a number", kp);
        double d = val.to_number<double>();
        n.flags |= f_numeric;
        if (k == "minimum") n.has_minimum = true, n.minimum = d;
        else if (k == "maximum") n.has_maximum = true, n.maximum = d;
        else if (k == "exclusiveMinimum") n.has_xminimum = true, n.xminimum = d;
        else if (k == "exclusiveMaximum") n.has_xmaximum = true, n.xmaximum = d;
        else {
          if (!(d > 0)) return refuse("multipleOf must be greater than 0", kp);
          n.has_multiple_of = true, n.multiple_of = d;
        }
      } else if (k == "minLength" || k == "maxLength" || k == "minItems" || k == "maxItems" ||
                 k == "minContains" || k == "maxContains" || k == "minProperties" || k == "maxProperties") {
        auto r = parse_count(val, kp);
        if (!r) return std::move(r).err();
        std::uint32_t c = *r;
        if (k == "minLength") n.min_length = c, n.flags |= f_string;
        else if (k == "maxLength") n.max_length = c, n.flags |= f_string | f_max_length;
        else if (k == "minItems") n.min_items = c, n.flags |= f_array;
        else if (k == "maxItems") n.max_items = c, n.flags |= f_array;
        else if (k == "minContains") { if (has_contains) n.min_contains = c; }
        else if (k == "maxContains") { if (has_contains) n.max_contains = c; }
        else if (k == "minProperties") n.min_properties = c, n.flags |= f_object;
        else n.max_properties = c, n.flags |= f_object;
      } else if (k == "pattern") {
        if (!val.is_string()) return refuse("pattern must be a string", kp);
        auto r = compile_regex(val.get_string(), kp, lim_, p_);
        if (!r) return std::move(r).err();
        n.pattern = *r;
        n.flags |= f_string | f_needs_content;
      } else if (k == "format") {
        if (!val.is_string()) return refuse("format must be a string", kp);
        auto f = parse_format(val.get_string());
        if (f == format_kind::none)
          return refuse("unsupported format \"" + std::string(val.get_string()) + "\"", kp);
        n.format = f;
        n.flags |= f_string | f_needs_content;
      } else if (k == "items" || k == "contains" || k == "additionalProperties" || k == "propertyNames" ||
                 k == "not" || k == "if" || k == "then" || k == "else") {
        if (k == "items" && val.is_array())
          return refuse("array-form items is draft 7; use prefixItems (draft 2020-12)", kp);
        auto r = compile_schema(val, kp, child_depth);
        if (!r) return std::move(r).err();
        std::uint32_t c = *r;
        if (k == "items") n.items = c, n.flags |= f_array;
        else if (k == "contains") n.contains = c, n.flags |= f_array;
        else if (k == "additionalProperties") n.additional = c, n.flags |= f_object;
        else if (k == "propertyNames") n.property_names = c, n.flags |= f_object;
        else if (k == "not") n.not_ = c, n.flags |= f_inplace;
        else if (k == "if") n.if_ = c;
        else if (k == "then") n.then_ = c;
        else n.else_ = c;
      } else if (k == "prefixItems" || k == "allOf" || k == "anyOf" || k == "oneOf") {
        if (!val.is_array() || val.get_array().empty())
          return refuse(std::string(k) + " must be a non-empty array of schemas", kp);
        std::vector<std::uint32_t> kids;
        std::size_t i = 0;
        for (const auto& s : val.get_array()) {
          auto r = compile_schema(s, kp + "/" + std::to_string(i++), child_depth);
          if (!r) return std::move(r).err();
          kids.push_back(*r);
        }
        span32 sp = append(p_.indices, kids);
        if (k == "prefixItems") n.prefix_items = sp, n.flags |= f_array;
        else if (k == "allOf") n.all_of = sp, n.flags |= f_inplace;
        else if (k == "anyOf") n.any_of = sp, n.flags |= f_inplace;
        else n.one_of = sp, n.flags |= f_inplace;
      } else if (k == "uniqueItems") {
        if (!val.is_bool()) return refuse("uniqueItems must be a boolean", kp);
        if (val.get_bool()) n.flags |= f_array | f_unique;
      } else if (k == "properties" || k == "patternProperties") {
        if (!val.is_object()) return refuse(std::string(k) + " must be an object", kp);
        for (const auto& pr : val.get_object()) {
          std::string pp = kp + "/" + escape_token(pr.key());
          if (k == "properties" && ++properties_ > lim_.max_properties)
            return refuse("schema has more than " + std::to_string(lim_.max_properties) + " properties", pp);
          auto r = compile_schema(pr.value(), pp, child_depth);
          if (!r) return std::move(r).err();
          if (k == "properties") {
            names.emplace_back(std::string(pr.key()), *r);
          } else {
            auto re = compile_regex(pr.key(), pp, lim_, p_);
            if (!re) return std::move(re).err();
            p_.patterns.push_back({*re, *r});
          }
        }
        if (k == "patternProperties") {
          auto count = static_cast<std::uint32_t>(val.get_object().size());
          n.pattern_props = {static_cast<std::uint32_t>(p_.patterns.size()) - count, count};
        }
        n.flags |= f_object;
      } else if (k == "required") {
        auto r = parse_names(val, kp);
        if (!r) return std::move(r).err();
        required = std::move(*r);
        n.flags |= f_object;
      } else if (k == "dependentRequired") {
        if (!val.is_object()) return refuse("dependentRequired must be an object", kp);
        for (const auto& d : val.get_object()) {
          auto r = parse_names(d.value(), kp + "/" + escape_token(d.key()));
          if (!r) return std::move(r).err();
          dependent.emplace_back(std::string(d.key()), std::move(*r));
        }
        n.flags |= f_object;
      } else {
        return refuse("unsupported keyword \"" + std::string(k) + "\"", kp);
      }
    }
    if (n.if_ != no_node) {
      if (n.then_ == no_node && n.else_ == no_node) n.if_ = no_node;  // `if` alone has no effect
      else n.flags |= f_inplace;
    } else {
      n.then_ = n.else_ = no_node;  // then/else without if have no effect
    }
    if (n.types & t_integer && !(n.types & t_number)) n.flags |= f_integer_only;
    if (auto r = build_key_table(n, names, required, dependent, path); !r) return r.err();
    p_.nodes[idx] = std::move(n);
    return idx;
  }

  result<void> build_key_table(node& n, std::vector<std::pair<std::string, std::uint32_t>>& names,
                               const std::vector<std::string>& required,
                               const std::vector<std::pair<std::string, std::vector<std::string>>>& dependent,
                               const std::string& path) {
    std::map<std::string, key_entry> table;
    for (auto& [name, node_idx] : names) table[name].prop = node_idx;
    std::vector<std::string> tracked;
    auto track = [&](const std::string& name) -> std::uint32_t {
      key_entry& e = table[name];
      if (e.tracked == no_node) {
        e.tracked = static_cast<std::uint32_t>(tracked.size());
        tracked.push_back(name);
      }
      return e.tracked;
    };
    std::vector<std::uint32_t> req;
    for (const auto& r : required) req.push_back(track(r));
    std::vector<dependency> deps;
    for (const auto& [trigger, needs] : dependent) {
      dependency d{track(trigger), {}};
      std::vector<std::uint32_t> ns;
      for (const auto& x : needs) ns.push_back(track(x));
      d.needs = append(p_.indices, ns);
      deps.push_back(d);
    }
    properties_ += tracked.size();
    if (properties_ > lim_.max_properties)
      return refuse("schema has more than " + std::to_string(lim_.max_properties) + " properties", path);
    n.required = append(p_.indices, req);
    for (const std::uint32_t t : req) {
      if (t < 64) n.required_mask |= std::uint64_t{1} << t;
      else n.required_fits = false;
    }
    n.dependencies = append(p_.dependencies, deps);
    std::vector<text_ref> tracked_refs;
    for (const auto& t : tracked) tracked_refs.push_back(p_.add_text(t));
    n.tracked_names = append(p_.names, tracked_refs);
    std::vector<key_entry> entries;
    entries.reserve(table.size());
    for (auto& [name, e] : table) {
      e.name = p_.add_text(name);
      e.hash = key_hash(name);
      entries.push_back(std::move(e));
    }
    // The schema order of `properties`, as links between the (name-sorted) entries.
    auto index_of = [&](const std::string& name) {
      return static_cast<std::uint32_t>(std::distance(table.begin(), table.find(name)));
    };
    std::uint32_t prev = no_node;
    for (const auto& [name, node_idx] : names) {
      const std::uint32_t i = index_of(name);
      if (prev == no_node) n.first_key = i;
      else if (entries[prev].next == no_node && prev != i) entries[prev].next = i;
      prev = i;
    }
    std::vector<key_slot> slots = place_keys(n, entries);
    n.keys = append(p_.keys, entries);
    n.key_slots = append(p_.slots, slots);
    return ok;
  }

  // The key table of a node: multiplicative hashing into a power-of-two table at most half full.
  // Small tables (the usual object of a structured output) get a multiplier under which no two
  // keys share a slot, searched for at compile time (a bounded number of tries, the table up to
  // 8 slots per key), so a member name costs one probe at validation time. Otherwise linear
  // probing from the hashed slot.
  static std::vector<key_slot> place_keys(node& n, const std::vector<key_entry>& entries) {
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

  // Local references only: "#", "#/json/pointer", or the root $id followed by one of those.
  result<void> resolve_refs() {
    while (!refs_.empty()) {
      pending_ref pr = std::move(refs_.back());
      refs_.pop_back();
      std::string_view ref = pr.ref;
      if (!root_id_.empty() && ref.starts_with(root_id_)) ref.remove_prefix(root_id_.size());
      if (ref.empty()) ref = "#";
      if (ref.front() != '#')
        return refuse("only local $ref (\"#...\" JSON pointers) is supported: \"" + pr.ref + "\"", pr.path);
      auto tokens = parse_fragment_pointer(ref.substr(1));
      if (!tokens) return refuse("$ref is not a JSON pointer: \"" + pr.ref + "\"", pr.path);
      const json::value* target = &root_;
      std::string target_path;
      std::size_t depth = 0;
      for (std::size_t i = 0; i < tokens->size(); ++i) {
        const std::string& t = (*tokens)[i];
        // A token naming a descending keyword (not a property named like one) adds a level.
        if (target->is_object() && descends(t) && (i == 0 || !is_container_keyword((*tokens)[i - 1]))) ++depth;
        target = step(*target, t);
        if (!target) return refuse("$ref target does not exist: \"" + pr.ref + "\"", pr.path);
        target_path += "/" + escape_token(t);
      }
      auto r = compile_schema(*target, target_path, depth);
      if (!r) return std::move(r).err();
      p_.nodes[pr.node].ref = *r;
    }
    return ok;
  }

  static bool is_container_keyword(std::string_view t) {
    return t == "properties" || t == "patternProperties" || t == "$defs" || t == "dependentRequired";
  }

  static const json::value* step(const json::value& v, const std::string& token) {
    if (v.is_object()) return v.get_object().if_contains(token);
    if (v.is_array()) {
      std::size_t i = 0;
      auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), i);
      if (ec != std::errc() || p != token.data() + token.size() || token.empty()) return nullptr;
      if (token.size() > 1 && token[0] == '0') return nullptr;
      return i < v.get_array().size() ? &v.get_array()[i] : nullptr;
    }
    return nullptr;
  }

  result<std::uint8_t> parse_type(const json::value& v, const std::string& path) {
    auto one = [](std::string_view s) -> std::uint8_t {
      if (s == "null") return t_null;
      if (s == "boolean") return t_boolean;
      if (s == "integer") return t_integer;
      if (s == "number") return t_number | t_integer;
      if (s == "string") return t_string;
      if (s == "array") return t_array;
      if (s == "object") return t_object;
      return 0;
    };
    if (v.is_string()) {
      std::uint8_t t = one(v.get_string());
      if (!t) return refuse("unknown type \"" + std::string(v.get_string()) + "\"", path);
      return t;
    }
    if (!v.is_array()) return refuse("type must be a string or an array of strings", path);
    std::uint8_t mask = 0;
    for (const auto& e : v.get_array()) {
      std::uint8_t t = e.is_string() ? one(e.get_string()) : 0;
      if (!t) return refuse("type must name JSON types", path);
      mask |= t;
    }
    return mask;
  }

  result<std::uint32_t> parse_count(const json::value& v, const std::string& path) {
    if (v.is_int64() && v.get_int64() >= 0) return clamp32(static_cast<std::uint64_t>(v.get_int64()));
    if (v.is_uint64()) return clamp32(v.get_uint64());
    if (v.is_double() && v.get_double() >= 0 && std::trunc(v.get_double()) == v.get_double())
      return v.get_double() >= 4294967295.0 ? unbounded : static_cast<std::uint32_t>(v.get_double());
    return refuse("must be a non-negative integer", path);
  }
  static std::uint32_t clamp32(std::uint64_t x) {
    return x >= unbounded ? unbounded : static_cast<std::uint32_t>(x);
  }

  result<std::vector<std::string>> parse_names(const json::value& v, const std::string& path) {
    if (!v.is_array()) return refuse("must be an array of strings", path);
    std::vector<std::string> out;
    for (const auto& e : v.get_array()) {
      if (!e.is_string()) return refuse("must be an array of strings", path);
      out.emplace_back(e.get_string());
    }
    if (out.size() > lim_.max_properties)
      return refuse("schema has more than " + std::to_string(lim_.max_properties) + " properties", path);
    return out;
  }

  struct pending_ref {
    std::uint32_t node;
    std::string ref;
    std::string path;
  };

  const json::value& root_;
  const compile_limits& lim_;
  program& p_;
  std::string root_id_;
  std::unordered_map<const json::value*, std::uint32_t> memo_;
  std::vector<pending_ref> refs_;
  std::size_t properties_ = 0;
  std::size_t enum_values_ = 0;
};

}  // namespace

result<std::shared_ptr<const compiled_schema>> compile(const json::value& schema, const compile_limits& limits) {
  if (auto r = detail::check_shape(schema, limits); !r) return std::move(r).err();
  auto p = std::make_unique<program>();
  compiler c(schema, limits, *p);
  if (auto r = c.run(); !r) return std::move(r).err();
  p->nodes.shrink_to_fit();
  p->indices.shrink_to_fit();
  p->keys.shrink_to_fit();
  p->slots.shrink_to_fit();
  p->patterns.shrink_to_fit();
  p->dependencies.shrink_to_fit();
  p->hashes.shrink_to_fit();
  p->names.shrink_to_fit();
  p->text.shrink_to_fit();
  p->estimated_bytes = detail::estimate_bytes(*p);
  return std::shared_ptr<const compiled_schema>(std::make_shared<compiled_schema>(std::move(p)));
}

}  // namespace sluice::schema
