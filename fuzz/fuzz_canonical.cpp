// The schema cache's key: the canonical text of a JSON value. It parses back to an equal value,
// is a fixed point (canonical of canonical is itself), and equal values give equal keys.
#include <boost/json/parse.hpp>

#include <charconv>
#include <cmath>

#include "fuzz_util.hpp"
#include "schema/schema.hpp"

namespace {

// Numbers whose text the key can be compared by: finite (1e400 parses as infinity, which JSON
// cannot write; the gateway refuses such numbers in a request with a 400 before any schema is
// compiled), and read back exactly by Boost.JSON 1.81 (its parser is not correctly rounded past
// ~15 significant digits, so the shortest text of some doubles reads back as a neighbour: the
// key of such a schema is still stable for the same input, which is what the cache needs).
bool comparable(const boost::json::value& v) {
  if (v.is_double()) {
    const double d = v.get_double();
    if (!std::isfinite(d)) return false;
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, d);
    boost::system::error_code ec;
    auto back = boost::json::parse(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)), ec);
    return !ec && back.is_double() && back.get_double() == d;
  }
  if (v.is_array()) {
    for (const auto& x : v.get_array())
      if (!comparable(x)) return false;
  }
  if (v.is_object()) {
    for (const auto& kv : v.get_object())
      if (!comparable(kv.value())) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(sluice::fuzz::as_text(data, size), ec);
  if (ec || !comparable(v)) return 0;
  const std::string key = sluice::schema::canonical_json(v);
  boost::json::value back = boost::json::parse(key, ec);
  sluice::fuzz::require(!ec, "the canonical text is JSON");
  sluice::fuzz::require(sluice::schema::canonical_json(back) == key, "the canonical text is a fixed point");
  return 0;
}
