// duplicate_members, the request check for a member name written twice: on any input that
// Boost.JSON parses, the cheap count (name separators in the text against members in the DOM)
// and the SAX search agree.
#include <boost/json/parse.hpp>

#include "fuzz_util.hpp"
#include "proxy/duplicate_members.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace sluice::proxy;
  const std::string_view text = sluice::fuzz::as_text(data, size);
  boost::json::parse_options po;
  po.max_depth = 64;
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(text, ec, {}, po);
  const auto found = duplicate_member(text);
  if (ec) return 0;  // not JSON: refused before this check; the search must only not crash
  const bool counts_differ = written_members(text) != parsed_members(v);
  sluice::fuzz::require(counts_differ == found.has_value(), "the count and the search agree on a repeated member");
  return 0;
}
