// canonical_json(): one spelling per JSON value, so equal schemas share a cache entry whatever
// their key order, whitespace or number spelling. Iterative (explicit stack), so no input depth
// can exhaust the call stack.
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

struct task {
  enum class type { value, literal, key } t;
  const json::value* v = nullptr;
  std::string_view s;
};

}  // namespace

std::string canonical_json(const json::value& root) {
  std::string out;
  std::vector<task> stack{{task::type::value, &root, {}}};
  std::vector<const json::key_value_pair*> members;
  while (!stack.empty()) {
    task t = stack.back();
    stack.pop_back();
    if (t.t == task::type::literal) {
      out += t.s;
      continue;
    }
    if (t.t == task::type::key) {
      put_string(out, t.s);
      continue;
    }
    const json::value& v = *t.v;
    switch (v.kind()) {
      case json::kind::null: out += "null"; break;
      case json::kind::bool_: out += v.get_bool() ? "true" : "false"; break;
      case json::kind::int64:
      case json::kind::uint64:
      case json::kind::double_: put_number(out, v); break;
      case json::kind::string: put_string(out, v.get_string()); break;
      case json::kind::array: {
        const auto& a = v.get_array();
        out += '[';
        stack.push_back({task::type::literal, nullptr, "]"});
        for (std::size_t i = a.size(); i-- > 0;) {
          stack.push_back({task::type::value, &a[i], {}});
          if (i) stack.push_back({task::type::literal, nullptr, ","});
        }
        break;
      }
      case json::kind::object: {
        members.clear();
        for (const auto& kv : v.get_object()) members.push_back(&kv);
        std::sort(members.begin(), members.end(),
                  [](const json::key_value_pair* a, const json::key_value_pair* b) { return a->key() < b->key(); });
        out += '{';
        stack.push_back({task::type::literal, nullptr, "}"});
        for (std::size_t i = members.size(); i-- > 0;) {
          stack.push_back({task::type::value, &members[i]->value(), {}});
          stack.push_back({task::type::literal, nullptr, ":"});
          stack.push_back({task::type::key, nullptr, std::string_view(members[i]->key().data(), members[i]->key().size())});
          if (i) stack.push_back({task::type::literal, nullptr, ","});
        }
        break;
      }
    }
  }
  return out;
}

}  // namespace sluice::schema
