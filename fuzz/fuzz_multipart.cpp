// The streaming multipart/form-data parser (sim/multipart.hpp): any bytes, fed whole and fed in
// pieces, give the same events (part heads, each part's data joined, ends, close) and the same
// verdict; a part's data pieces are never empty and never longer than what was fed.
#include <algorithm>
#include <string>
#include <vector>

#include "fuzz_util.hpp"
#include "sim/multipart.hpp"

namespace {

namespace mp = sluice::sim::multipart;

struct recorder final : mp::handler {
  std::vector<std::string> events;
  std::size_t fed = 0;  // the size of the current feed, which a piece may not exceed...
  std::size_t held = 0;  // ...but for the bytes held back from the feed before
  void on_part_begin(const mp::part_head& h) override {
    events.push_back("B" + h.name + '\0' + (h.has_filename ? "F" + h.filename : "") + '\0' + h.content_type);
  }
  void on_part_data(std::string_view bytes) override {
    sluice::fuzz::require(!bytes.empty(), "a data piece is never empty");
    sluice::fuzz::require(bytes.size() <= fed + held, "a data piece comes from this feed or the held bytes");
    if (events.empty() || events.back()[0] != 'D') events.push_back("D");
    events.back() += bytes;
  }
  void on_part_end() override { events.push_back("E"); }
  void on_close() override { events.push_back("C"); }
};

mp::failure run(std::string_view boundary, std::string_view text, const std::vector<std::size_t>& cuts,
                std::vector<std::string>& out) {
  mp::parser p(boundary);
  recorder r;
  r.held = boundary.size() + 4;
  std::size_t from = 0;
  mp::failure f = mp::failure::none;
  auto feed = [&](std::size_t to) {
    r.fed = to - from;
    f = p.feed(text.substr(from, to - from), r);
    from = to;
  };
  for (std::size_t c : cuts) feed(c);
  feed(text.size());
  if (f == mp::failure::none) f = p.finish();
  out = std::move(r.events);
  return f;
}

}  // namespace

// The input's first line (up to 70 bytes) is the boundary; the rest, split as fuzz_util says, the body.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = sluice::fuzz::split_from(sluice::fuzz::as_text(data, size));
  const auto eol = in.text.find('\n');
  const std::string_view boundary = in.text.substr(0, eol == std::string_view::npos ? 0 : std::min<std::size_t>(eol, 70));
  const std::size_t skip = eol == std::string_view::npos ? 0 : eol + 1;
  const std::string_view body = in.text.substr(skip);
  std::vector<std::size_t> cuts;
  for (std::size_t c : in.cuts)
    if (c > skip) cuts.push_back(c - skip);
  std::vector<std::string> whole, pieces;
  const mp::failure f_whole = run(boundary, body, {}, whole);
  const mp::failure f_pieces = run(boundary, body, cuts, pieces);
  sluice::fuzz::require(f_whole == f_pieces, "whole and split feeds agree on the verdict");
  sluice::fuzz::require(whole == pieces, "whole and split feeds give the same events");
  (void)mp::boundary_of(body.substr(0, 200));  // the Content-Type reader on the same bytes
  return 0;
}
