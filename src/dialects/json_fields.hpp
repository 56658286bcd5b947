// Reading an upstream's JSON fields the translators need: a string, an object, a token count.
// Anything of another type reads as absent (an empty string, no object, 0).
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <string_view>

namespace sluice::dialects {

inline std::string_view string_field(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view{};
}

inline const boost::json::object* object_field(const boost::json::object* o, std::string_view key) {
  const auto* v = o ? o->if_contains(key) : nullptr;
  return v && v->is_object() ? &v->get_object() : nullptr;
}

// A count from the upstream: a non-negative integer, anything else 0.
inline std::uint64_t count_field(const boost::json::object* o, std::string_view key) {
  const auto* v = o ? o->if_contains(key) : nullptr;
  if (!v) return 0;
  if (v->is_uint64()) return v->get_uint64();
  return v->is_int64() && v->get_int64() >= 0 ? static_cast<std::uint64_t>(v->get_int64()) : 0;
}

}  // namespace sluice::dialects
