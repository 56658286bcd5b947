// canonical_json(): one spelling per JSON value, so equal schemas share a cache entry whatever
// their key order, whitespace or number spelling. Iterative (an explicit stack of one frame per
// open container), so no input depth can exhaust the call stack and no width costs more than the
// text itself (an array of 100,000 values once took a task each: 6 MiB for a 900 KB schema).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

#include "schema/schema.hpp"

namespace sluice::schema {

namespace json = boost::json;

namespace {

void put_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  out += '"';
}

template <class T>
void put_integer(std::string& out, T v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// Integral numbers are spelled as integers whatever their source spelling (1.0, 1e0 -> 1);
// others in the shortest form that round-trips.
void put_number(std::string& out, const json::value& v) {
  if (v.is_int64()) return put_integer(out, v.get_int64());
  if (v.is_uint64()) return put_integer(out, v.get_uint64());
  double d = v.get_double();
  if (std::isfinite(d) && std::trunc(d) == d) {
    if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) return put_integer(out, static_cast<std::int64_t>(d));
    if (d > 0 && d < 18446744073709551616.0) return put_integer(out, static_cast<std::uint64_t>(d));
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  out.append(buf, r.ptr);
}

// One open container: where its next element or member is. Objects keep their members sorted by
// key. The stack holds one frame per nesting level, so a wide array costs nothing beyond its text.
struct canonical_frame {
  const json::value* v;
  std::size_t next = 0;
  std::vector<const json::key_value_pair*> members;  // an object's, sorted by key
};

// Writes a scalar whole, or the opening of a container (pushing its frame).
void open_value(std::string& out, std::vector<canonical_frame>& stack, const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: out += "null"; return;
    case json::kind::bool_: out += v.get_bool() ? "true" : "false"; return;
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: put_number(out, v); return;
    case json::kind::string: put_string(out, v.get_string()); return;
    case json::kind::array:
      out += '[';
      stack.push_back({&v, 0, {}});
      return;
    case json::kind::object: {
      out += '{';
      canonical_frame f{&v, 0, {}};
      f.members.reserve(v.get_object().size());
      for (const auto& kv : v.get_object()) f.members.push_back(&kv);
      std::sort(f.members.begin(), f.members.end(),
                [](const json::key_value_pair* a, const json::key_value_pair* b) { return a->key() < b->key(); });
      stack.push_back(std::move(f));
      return;
    }
  }
}

}  // namespace

std::string canonical_json(const json::value& root) {
  std::string out;
  std::vector<canonical_frame> stack;
  open_value(out, stack, root);
  while (!stack.empty()) {
    canonical_frame& f = stack.back();
    const bool array = f.v->is_array();
    const std::size_t size = array ? f.v->get_array().size() : f.members.size();
    if (f.next == size) {
      out += array ? ']' : '}';
      stack.pop_back();
      continue;
    }
    if (f.next) out += ',';
    const std::size_t i = f.next++;
    if (array) {
      open_value(out, stack, f.v->get_array()[i]);  // (may grow the stack: `f` is not used after)
      continue;
    }
    const json::key_value_pair& kv = *f.members[i];
    put_string(out, std::string_view(kv.key().data(), kv.key().size()));
    out += ':';
    open_value(out, stack, kv.value());
  }
  return out;
}

}  // namespace sluice::schema
