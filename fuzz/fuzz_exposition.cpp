// The Prometheus text exposition codec (observability/exposition.hpp) that merges the worker
// processes' /metrics: any text either is refused or parses into families that, written and read
// again, are the same; merging a parse with itself keeps its families and series, and the merge
// writes an exposition that parses.
#include "fuzz_util.hpp"
#include "observability/exposition.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace sluice::obs;
  auto e = parse_exposition(sluice::fuzz::as_text(data, size));
  if (!e) return 0;
  const std::string text = write_exposition(*e);
  auto again = parse_exposition(text);
  sluice::fuzz::require(again.has_value(), "a written exposition reads back");
  sluice::fuzz::require(write_exposition(*again) == text, "and writes the same text again");
  const exposition m = merge_expositions({*e, *e});
  sluice::fuzz::require(m.size() <= e->size(), "a merge adds no family");
  sluice::fuzz::require(parse_exposition(write_exposition(m)).has_value(), "a merge is an exposition");
  exposition ended;
  fold_ended(ended, *e);
  sluice::fuzz::require(parse_exposition(write_exposition(ended)).has_value(), "the ended totals are an exposition");
  return 0;
}
