// event_scan, the relay's one-pass reader of every event it forwards, against a DOM oracle: it
// accepts exactly what boost::json parses as an object, and on any object (duplicate keys aside,
// which a DOM cannot show: the oracle then reads the re-serialized DOM) reads the same facts. Its
// skim, wherever it is sure, reads what its SAX scan reads, duplicate names included.
#include <boost/json/serialize.hpp>

#include "event_scan_oracle.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace sluice::proxy;
  const std::string_view text = sluice::fuzz::as_text(data, size);
  event_facts got, want;
  const bool ok = scan_event(text, got);
  const bool want_ok = event_scan_oracle(text, want);
  sluice::fuzz::require(ok == want_ok, "scan_event accepts exactly the JSON objects");
  event_facts skimmed, scanned;
  if (detail::skim_event(text, skimmed) == detail::skim_verdict::object) {
    sluice::fuzz::require(detail::scan_event_sax(text, scanned), "the skim accepts only what the SAX scan accepts");
    sluice::fuzz::require(same_facts_and_id(skimmed, scanned), "the skim reads the SAX scan's facts");
  }
  if (!ok) return 0;
  const std::string canonical = boost::json::serialize(boost::json::parse(text));
  // (Boost.JSON writes a number that overflowed a double, parsed as infinity, as text it does not
  // read back: both sides must then refuse it alike.)
  const bool again = scan_event(canonical, got);
  sluice::fuzz::require(again == event_scan_oracle(canonical, want), "the re-serialized object: the same verdict");
  if (again) sluice::fuzz::require(same_facts(got, want), "scan_event reads the facts the DOM holds");
  return 0;
}
