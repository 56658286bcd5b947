// compile(): schema JSON -> detail::program (the compiler's driver: compiler.hpp). One node per
// subschema, reserved before its keywords are read so that recursive references find it; keywords
// are handed to their family (compile_keywords.cpp), local $refs are resolved once every node
// exists, the depth through $ref targets is checked (compile_depth.cpp), and type-only anyOf
// branches are folded into a mask.
#include <charconv>
#include <memory>
#include <optional>
#include <string>

#include "schema/compile_support.hpp"
#include "schema/compiler.hpp"
#include "schema/program.hpp"
#include "schema/schema.hpp"

namespace sluice::schema {

namespace json = boost::json;

namespace detail {
namespace {

// The dialect a `$schema` URI names: the metaschema URIs of drafts 2020-12, 2019-09 and 07, with
// http or https and with or without the empty fragment, as generators and the test suites write
// them.
std::optional<dialect> dialect_of(std::string_view uri) {
  if (uri.ends_with('#')) uri.remove_suffix(1);
  if (uri.starts_with("https://")) uri.remove_prefix(8);
  else if (uri.starts_with("http://")) uri.remove_prefix(7);
  else return std::nullopt;
  if (uri == "json-schema.org/draft/2020-12/schema") return dialect::draft2020_12;
  if (uri == "json-schema.org/draft/2019-09/schema") return dialect::draft2019_09;
  if (uri == "json-schema.org/draft-07/schema") return dialect::draft7;
  return std::nullopt;
}

std::string_view dialect_name(dialect d) {
  switch (d) {
    case dialect::draft7: return "draft-07";
    case dialect::draft2019_09: return "draft 2019-09";
    case dialect::draft2020_12: return "draft 2020-12";
  }
  return "";
}

bool is_annotation(std::string_view k) {
  return k == "title" || k == "description" || k == "default" || k == "examples" || k == "$comment" ||
         k == "deprecated" || k == "readOnly" || k == "writeOnly";
}

}  // namespace

bool descends(std::string_view k) {
  return k == "properties" || k == "patternProperties" || k == "additionalProperties" || k == "items" ||
         k == "prefixItems" || k == "additionalItems" || k == "contains" || k == "propertyNames";
}

result<void> compiler::run() {
  if (auto r = choose_dialect(); !r) return r;
  if (auto r = root_id(); !r) return r;
  auto root = compile_schema(root_, "", 0, true);
  if (!root) return std::move(root).err();
  if (auto r = resolve_refs(); !r) return r;
  if (auto r = check_in_place_graph(p_, lim_); !r) return r;
  if (auto r = check_resolved_depth(); !r) return r;
  fold_type_unions();
  return ok;
}

// `anyOf` whose branches say nothing but `type` (the nullable idiom of structured outputs:
// {"anyOf":[{"type":"string"},{"type":"null"}]}) is a union of types: kept as a mask checked at
// the value's first token, where the branches would all have been decided anyway, instead of one
// evaluation per branch. Same verdict, same failure (keyword anyOf, same paths and message). Only
// where anyOf is the node's one in-place applicator, so the order of failures cannot change.
void compiler::fold_type_unions() {
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

// The root `$schema` picks the dialect for the whole document (a `$schema` below the root is
// refused, or an annotation where only checked). None: 2020-12. A dialect sluice does not know is
// refused where something is validated; a check_only schema may name any and is read as 2020-12.
result<void> compiler::choose_dialect() {
  if (!root_.is_object()) return ok;
  auto* s = root_.as_object().if_contains("$schema");
  if (!s) return ok;
  if (!s->is_string()) return refuse("$schema must be a string", "/$schema");
  if (auto d = dialect_of(s->get_string())) {
    dialect_ = p_.dialect = *d;
    return ok;
  }
  if (check_only_) return ok;
  return refuse("unsupported $schema \"" + std::string(s->get_string()) +
                    "\": JSON Schema draft 2020-12, 2019-09 and draft-07 are supported",
                "/$schema");
}

bool compiler::foreign_keyword(std::string_view k) const {
  switch (dialect_) {
    case dialect::draft7:
      return k == "prefixItems" || k == "dependentRequired" || k == "minContains" || k == "maxContains";
    case dialect::draft2019_09: return k == "prefixItems";
    case dialect::draft2020_12: return false;
  }
  return false;
}

result<void> compiler::root_id() {
  if (!root_.is_object()) return ok;
  auto* id = root_.as_object().if_contains("$id");
  if (!id) return ok;
  // Draft 7 ignores every sibling of a $ref, the root's $id included.
  if (dialect_ == dialect::draft7 && root_.as_object().contains("$ref")) return ok;
  if (!id->is_string()) return refuse("$id must be a string", "/$id");
  std::string_view s = id->as_string();
  root_id_ = std::string(s.substr(0, s.find('#')));
  return ok;
}

// Reserves the node index first so recursive references to this location find it.
result<std::uint32_t> compiler::compile_schema(const json::value& v, const std::string& path, std::size_t depth,
                                               bool is_root) {
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
  object_scope scope{idx, depth, is_root, o.contains("contains"), false, {}};
  // Drafts 7 and 2019-09: an array-form `items` is 2020-12's prefixItems, and `additionalItems`
  // beside it is 2020-12's items.
  const json::value* items = o.if_contains("items");
  scope.tuple_items = dialect_ != dialect::draft2020_12 && items && items->is_array();
  if (auto r = compile_members(n, o, path, scope); !r) return r.err();
  settle_conditionals(n);
  if (n.types & t_integer && !(n.types & t_number)) n.flags |= f_integer_only;
  if (auto r = build_key_table(n, scope.names, path); !r) return r.err();
  for (std::uint32_t c : scope.names.unmatched) side_children_.push_back({idx, c, true});
  for (std::uint32_t c : scope.names.unmatched_in_place) side_children_.push_back({idx, c, false});
  p_.nodes[idx] = std::move(n);
  return idx;
}

// Every member of one schema object, in document order.
result<void> compiler::compile_members(node& n, const json::object& o, const std::string& path, object_scope& scope) {
  // Draft 7: "All other properties in a $ref object MUST be ignored" -- the $ref alone is the schema.
  const bool ref_alone = dialect_ == dialect::draft7 && o.contains("$ref");
  for (const auto& kv : o) {
    std::string_view k = kv.key();
    if (ref_alone && k != "$ref") continue;
    if (auto r = compile_member(n, k, kv.value(), path + "/" + escape_token(k), scope); !r) return r;
  }
  return ok;
}

// One member k of a schema object (its pointer kp): an annotation, a core keyword ($schema, $id,
// $defs, $ref), or a keyword of one of the families in compile_keywords.cpp.
result<void> compiler::compile_member(node& n, std::string_view k, const json::value& val, const std::string& kp,
                                      object_scope& scope) {
  const std::size_t depth = scope.depth;
  std::size_t child_depth = descends(k) ? depth + 1 : depth;
  if (is_annotation(k)) return ok;
  if (k == "$schema") {
    // A schema only checked (check_only) may say $schema anywhere: generators repeat it.
    if (check_only_ && !scope.is_root) return ok;
    if (!scope.is_root) return refuse("$schema is only supported at the root", kp);
    // The root's was read by choose_dialect.
  } else if (k == "$id") {
    if (check_only_ && !scope.is_root) return ok;
    if (!scope.is_root) return refuse("$id is only supported at the root", kp);
  } else if (k == "$defs" || k == "definitions") {
    return compile_definitions(k, val, kp, depth);
  } else if (k == "$ref") {
    if (!val.is_string()) return refuse("$ref must be a string", kp);
    n.flags |= f_inplace;
    has_refs_ = true;
    refs_.push_back({scope.idx, std::string(val.get_string()), kp});
  } else if (foreign_keyword(k)) {
    if (check_only_) return ok;
    return refuse("unsupported keyword \"" + std::string(k) + "\": not part of JSON Schema " +
                      std::string(dialect_name(dialect_)),
                  kp);
  } else {
    auto known = dialect_keyword(n, k, val, kp, depth, scope.tuple_items, scope.names);
    if (known && !*known) known = assertion_keyword(n, k, val, kp, scope.has_contains);
    if (known && !*known) known = subschema_keyword(n, k, val, kp, child_depth);
    if (known && !*known) known = object_keyword(n, k, val, kp, child_depth, scope.names);
    if (!known) return std::move(known).err();
    // Unknown keywords are annotations in JSON Schema; only a schema that is checked, never
    // validated against, may treat them so (a validator that ignored one would pass what it forbids).
    if (!*known && !check_only_) return refuse("unsupported keyword \"" + std::string(k) + "\"", kp);
  }
  return ok;
}

// `definitions` is draft 7's name for $defs; a $ref into either resolves by JSON pointer in every
// draft, so both are read as definitions whatever the dialect.
result<void> compiler::compile_definitions(std::string_view k, const json::value& val, const std::string& kp,
                                           std::size_t depth) {
  if (!val.is_object()) return refuse(std::string(k) + " must be an object", kp);
  for (const auto& d : val.get_object()) {
    std::string dp = kp + "/" + escape_token(d.key());
    if (add_chars(code_points(d.key()))) return too_many_chars(dp);
    auto r = compile_schema(d.value(), dp, depth);
    if (!r) return std::move(r).err();
  }
  return ok;
}

// if/then/else keep only what has an effect: `if` alone has none, nor then/else without `if`.
void compiler::settle_conditionals(node& n) {
  if (n.if_ != no_node) {
    if (n.then_ == no_node && n.else_ == no_node) n.if_ = no_node;  // `if` alone has no effect
    else n.flags |= f_inplace;
  } else {
    n.then_ = n.else_ = no_node;  // then/else without if have no effect
  }
}

// Local references only: "#", "#/json/pointer", or the root $id followed by one of those.
result<void> compiler::resolve_refs() {
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

error compiler::too_many_chars(const std::string& pointer) const {
  return refuse("schema has more than " + std::to_string(lim_.max_total_chars) +
                    " characters in property names, definition names and enum/const values",
                pointer);
}

std::size_t code_points(std::string_view s) noexcept {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::size_t string_chars(const json::value& v) noexcept {
  std::size_t n = 0;
  if (v.is_string()) {
    n = code_points(v.get_string());
  } else if (v.is_array()) {
    for (const auto& e : v.get_array()) n += string_chars(e);
  } else if (v.is_object()) {
    for (const auto& kv : v.get_object()) n += code_points(kv.key()) + string_chars(kv.value());
  }
  return n;
}

bool compiler::is_container_keyword(std::string_view t) {
  return t == "properties" || t == "patternProperties" || t == "$defs" || t == "definitions" ||
         t == "dependentRequired" || t == "dependencies";
}

const json::value* compiler::step(const json::value& v, const std::string& token) {
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

}  // namespace detail

using detail::compiler;
using detail::program;

result<std::shared_ptr<const compiled_schema>> compile(const json::value& schema, const compile_limits& limits,
                                                       compile_purpose purpose) {
  if (auto r = detail::check_shape(schema, limits); !r) return std::move(r).err();
  auto p = std::make_unique<program>();
  p->check_only = purpose == compile_purpose::check_only;
  compiler c(schema, limits, purpose, *p);
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
