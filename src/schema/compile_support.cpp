#include "schema/compile_support.hpp"

namespace sluice::schema::detail {

namespace json = boost::json;

std::string escape_token(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (char c : token) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

error refuse(std::string message, const std::string& pointer) {
  std::string where = pointer.empty() ? "the schema root" : pointer;
  return error::make(errc::bad_request, "invalid JSON schema: " + message + " (at " + where + ")", pointer);
}

std::optional<std::vector<std::string>> parse_fragment_pointer(std::string_view fragment) {
  std::string decoded;
  for (std::size_t i = 0; i < fragment.size(); ++i) {
    char c = fragment[i];
    if (c != '%') {
      decoded += c;
      continue;
    }
    if (i + 2 >= fragment.size()) return std::nullopt;
    auto hex = [](char h) -> int {
      if (h >= '0' && h <= '9') return h - '0';
      if (h >= 'a' && h <= 'f') return h - 'a' + 10;
      if (h >= 'A' && h <= 'F') return h - 'A' + 10;
      return -1;
    };
    int hi = hex(fragment[i + 1]), lo = hex(fragment[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    decoded += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  std::vector<std::string> tokens;
  if (decoded.empty()) return tokens;
  if (decoded.front() != '/') return std::nullopt;
  std::string cur;
  for (std::size_t i = 1; i <= decoded.size(); ++i) {
    if (i == decoded.size() || decoded[i] == '/') {
      tokens.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    char c = decoded[i];
    if (c == '~') {
      if (i + 1 >= decoded.size()) return std::nullopt;
      char e = decoded[++i];
      if (e == '0') cur += '~';
      else if (e == '1') cur += '/';
      else return std::nullopt;
    } else {
      cur += c;
    }
  }
  return tokens;
}

namespace {

struct shape_walker {
  const compile_limits& lim;
  std::size_t values = 0;
  // Tokens down to the failure, left in place when walk() fails: a member's name (a view into the
  // document) or an element's index, so the walk allocates nothing on the way (every request
  // with a schema takes it).
  struct token {
    std::string_view name;
    std::size_t index = 0;
    bool element = false;
  };
  std::vector<token> path;
  std::string why;
  std::size_t enum_values = 0;  // under `enum` members, in total (the compiler's count, or fewer)

  bool walk(const json::value& v, std::size_t depth) {
    if (++values > lim.max_json_values) {
      why = "schema has more than " + std::to_string(lim.max_json_values) + " JSON values";
      return false;
    }
    if (depth > lim.max_json_depth) {
      why = "schema nests deeper than " + std::to_string(lim.max_json_depth) + " JSON levels";
      return false;
    }
    if (v.is_object()) {
      for (const auto& kv : v.get_object()) {
        path.push_back({std::string_view(kv.key().data(), kv.key().size()), 0, false});
        if (kv.key() == "enum" && kv.value().is_array() && !count_enum(kv.value().get_array().size())) return false;
        if (!walk(kv.value(), depth + 1)) return false;
        path.pop_back();
      }
    } else if (v.is_array()) {
      std::size_t i = 0;
      for (const auto& e : v.get_array()) {
        path.push_back({{}, i++, true});
        if (!walk(e, depth + 1)) return false;
        path.pop_back();
      }
    }
    return true;
  }
  // An `enum` member's values. The compiler counts only those at a keyword's place; this counts
  // every `enum` array, so it can refuse only a schema the compiler refuses too (or one with more
  // than max_enum_values values under members named "enum" that are not the keyword, which no
  // real schema has), and does so before anything is copied or compiled.
  bool count_enum(std::size_t n) {
    enum_values += n;
    if (enum_values <= lim.max_enum_values) return true;
    why = "schema has more than " + std::to_string(lim.max_enum_values) + " enum values";
    return false;
  }
};

}  // namespace

result<void> check_shape(const json::value& schema, const compile_limits& lim) {
  shape_walker w{lim, 0, {}, {}, 0};
  if (w.walk(schema, 0)) return ok;
  std::string pointer;
  for (const auto& t : w.path) pointer += "/" + (t.element ? std::to_string(t.index) : escape_token(t.name));
  return refuse(w.why, pointer);
}

value_hash hash_json(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return hash_null();
    case json::kind::bool_: return hash_bool(v.get_bool());
    case json::kind::int64: return hash_int64(v.get_int64());
    case json::kind::uint64: return hash_uint64(v.get_uint64());
    case json::kind::double_: return hash_double(v.get_double());
    case json::kind::string: return hash_string(v.get_string());
    case json::kind::array: {
      array_hasher h;
      for (const auto& e : v.get_array()) h.add(hash_json(e));
      return h.finish();
    }
    case json::kind::object: {
      object_hasher h;
      for (const auto& kv : v.get_object()) h.add(hash_string(kv.key()), hash_json(kv.value()));
      return h.finish();
    }
  }
  return {};
}

format_kind parse_format(std::string_view name) {
  if (name == "date-time") return format_kind::date_time;
  if (name == "date") return format_kind::date;
  if (name == "time") return format_kind::time;
  if (name == "email") return format_kind::email;
  if (name == "uuid") return format_kind::uuid;
  if (name == "ipv4") return format_kind::ipv4;
  if (name == "ipv6") return format_kind::ipv6;
  if (name == "hostname") return format_kind::hostname;
  if (name == "uri") return format_kind::uri;
  return format_kind::none;
}

result<void> check_pattern_length(std::string_view pattern, const std::string& pointer, const compile_limits& lim) {
  if (pattern.size() > lim.max_pattern_bytes)
    return refuse("pattern is longer than " + std::to_string(lim.max_pattern_bytes) + " bytes", pointer);
  return ok;
}

result<std::uint32_t> compile_regex(std::string_view pattern, const std::string& pointer,
                                    const compile_limits& lim, program& p) {
  if (auto r = check_pattern_length(pattern, pointer, lim); !r) return std::move(r).err();
  re2::RE2::Options opt;
  opt.set_log_errors(false);
  opt.set_encoding(re2::RE2::Options::EncodingUTF8);
  opt.set_max_mem(static_cast<int64_t>(lim.max_pattern_memory));
  auto re = std::make_unique<re2::RE2>(re2::StringPiece(pattern.data(), pattern.size()), opt);
  if (!re->ok()) return refuse("pattern is not supported by the linear-time regex engine: " + re->error(), pointer);
  if (static_cast<std::size_t>(re->ProgramSize()) > lim.max_pattern_program)
    return refuse("pattern compiles to more than " + std::to_string(lim.max_pattern_program) +
                      " regex instructions",
                  pointer);
  p.regexes.push_back(std::move(re));
  return static_cast<std::uint32_t>(p.regexes.size() - 1);
}

namespace {

template <class F>
void for_each_in_place(const program& p, const node& n, F&& f) {
  auto each = [&](span32 s) {
    for (std::uint32_t i = 0; i < s.size; ++i) f(p.indices[s.begin + i]);
  };
  if (n.ref != no_node) f(n.ref);
  each(n.all_of);
  each(n.any_of);
  each(n.one_of);
  if (n.not_ != no_node) f(n.not_);
  if (n.if_ != no_node) {
    f(n.if_);
    if (n.then_ != no_node) f(n.then_);
    if (n.else_ != no_node) f(n.else_);
  }
}

}  // namespace

result<void> check_in_place_graph(const program& p, const compile_limits& lim) {
  const std::size_t n = p.nodes.size();
  std::vector<std::uint8_t> color(n, 0);  // 0 unvisited, 1 on the DFS stack, 2 done
  std::vector<std::size_t> expansion(n, 0);
  std::vector<std::uint32_t> kids;
  struct frame_t {
    std::uint32_t node;
    std::vector<std::uint32_t> kids;
    std::size_t next = 0;
  };
  std::vector<frame_t> stack;
  const std::size_t cap = lim.max_expansion + 1;
  for (std::uint32_t root = 0; root < n; ++root) {
    if (color[root]) continue;
    stack.push_back({root, {}, 0});
    color[root] = 1;
    for_each_in_place(p, p.nodes[root], [&](std::uint32_t k) { stack.back().kids.push_back(k); });
    while (!stack.empty()) {
      frame_t& f = stack.back();
      if (f.next < f.kids.size()) {
        std::uint32_t k = f.kids[f.next++];
        if (color[k] == 1)
          return refuse("$ref cycle that never reaches a value (infinite recursion)",
                        std::string(p.str(p.nodes[k].path)));
        if (color[k] == 0) {
          color[k] = 1;
          frame_t child{k, {}, 0};
          for_each_in_place(p, p.nodes[k], [&](std::uint32_t c) { child.kids.push_back(c); });
          stack.push_back(std::move(child));
        }
        continue;
      }
      std::size_t total = 1;
      for (std::uint32_t k : f.kids) total = std::min(cap, total + expansion[k]);
      if (total >= cap)
        return refuse("schema expands to more than " + std::to_string(lim.max_expansion) +
                          " subschemas for one value (allOf/anyOf/$ref fan-out)",
                      std::string(p.str(p.nodes[f.node].path)));
      expansion[f.node] = total;
      color[f.node] = 2;
      stack.pop_back();
    }
  }
  return ok;
}

std::size_t estimate_bytes(const program& p) {
  std::size_t b = sizeof(program) + sizeof(compiled_schema);
  b += p.nodes.capacity() * sizeof(node);
  b += p.indices.capacity() * sizeof(std::uint32_t);
  b += p.keys.capacity() * sizeof(key_entry);
  b += p.slots.capacity() * sizeof(key_slot);
  b += p.patterns.capacity() * sizeof(pattern_entry);
  b += p.dependencies.capacity() * sizeof(dependency);
  b += p.hashes.capacity() * sizeof(value_hash);
  b += p.names.capacity() * sizeof(text_ref);
  b += p.text.capacity();
  // RE2: instructions for the forward and reverse programs plus a typical lazily built DFA cache
  // (bounded above by compile_limits::max_pattern_memory).
  for (const auto& re : p.regexes) b += sizeof(re2::RE2) + 2 * 16 * static_cast<std::size_t>(re->ProgramSize()) + 8192;
  return b;
}

}  // namespace sluice::schema::detail
