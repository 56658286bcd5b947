// The SSE parser: any bytes, fed whole and fed in pieces, give the same events (type, data, id,
// retry) and the same verdict; a failure (an event over the cap) fails both ways.
#include <string>
#include <vector>

#include "fuzz_util.hpp"
#include "sse/parser.hpp"

namespace {

struct seen {
  std::string type, data, id;
  long long retry = -1;
  bool operator==(const seen&) const = default;
};

bool run(std::string_view text, const std::vector<std::size_t>& cuts, std::vector<seen>& out) {
  sluice::sse::parser p(512);
  std::size_t from = 0;
  auto feed = [&](std::size_t to) {
    auto r = p.feed(text.substr(from, to - from), [&](const sluice::sse::event_view& ev) {
      out.push_back({std::string(ev.type), std::string(ev.data), std::string(ev.id),
                     ev.retry ? static_cast<long long>(*ev.retry) : -1});
      sluice::fuzz::require(ev.end <= to - from, "an event ends inside the chunk fed");
    });
    from = to;
    return static_cast<bool>(r);
  };
  for (std::size_t c : cuts)
    if (!feed(c)) return false;
  return feed(text.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = sluice::fuzz::split_from(sluice::fuzz::as_text(data, size));
  std::vector<seen> whole, pieces;
  const bool ok_whole = run(in.text, {}, whole);
  const bool ok_pieces = run(in.text, in.cuts, pieces);
  sluice::fuzz::require(ok_whole == ok_pieces, "whole and split feeds agree on failure");
  if (ok_whole) sluice::fuzz::require(whole == pieces, "whole and split feeds give the same events");
  return 0;
}
