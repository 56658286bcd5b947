// The schema cache's key: the canonical text of a JSON value. It parses back to an equal value,
// is a fixed point (canonical of canonical is itself), and equal values give equal keys.
#include <boost/json/parse.hpp>

#include "fuzz_util.hpp"
#include "schema/schema.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(sluice::fuzz::as_text(data, size), ec);
  if (ec) return 0;
  const std::string key = sluice::schema::canonical_json(v);
  boost::json::value back = boost::json::parse(key, ec);
  sluice::fuzz::require(!ec, "the canonical text is JSON");
  sluice::fuzz::require(sluice::schema::canonical_json(back) == key, "the canonical text is a fixed point");
  return 0;
}
