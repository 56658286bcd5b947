// The schema compiler on any JSON document: compiles or refuses with a bad_request naming a path,
// within its limits, never crashing, hanging or leaking.
#include <boost/json/parse.hpp>

#include "fuzz_util.hpp"
#include "schema/schema.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(sluice::fuzz::as_text(data, size), ec);
  if (ec) return 0;
  for (auto purpose : {sluice::schema::compile_purpose::validate, sluice::schema::compile_purpose::check_only}) {
    auto r = sluice::schema::compile(v, {}, purpose);
    if (!r) sluice::fuzz::require(r.err().code == sluice::errc::bad_request, "a refused schema is a bad_request");
  }
  return 0;
}
