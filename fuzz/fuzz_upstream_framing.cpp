// The upstream response framing (head, then a Content-Length, chunked or close-delimited body):
// any bytes, whole or cut anywhere, are accepted alike and decode to the same body.
#include <string>

#include "fuzz_util.hpp"
#include "upstream/framing.hpp"

namespace {

struct outcome {
  bool head_ok = false, body_ok = false, complete = false;
  std::string body;
};

outcome run(std::string_view text, const std::vector<std::size_t>& cuts) {
  outcome o;
  sluice::upstream::response_parser p;
  p.body_limit(1 << 20);
  boost::beast::flat_buffer buf;
  char out[64];
  std::size_t from = 0;
  bool failed = false;
  auto step = [&](std::size_t to) {
    if (to > from) {
      auto dst = buf.prepare(to - from);
      std::memcpy(dst.data(), text.data() + from, to - from);
      buf.commit(to - from);
    }
    from = to;
    if (!p.is_header_done()) {
      if (sluice::upstream::parse_head(p, buf)) {
        failed = true;
        return;
      }
      if (!p.is_header_done()) return;
      o.head_ok = true;
    }
    while (true) {
      auto n = sluice::upstream::decode_buffered(p, buf, out, sizeof out);
      if (!n) {
        failed = true;
        return;
      }
      if (*n == 0) return;
      o.body.append(out, *n);
    }
  };
  for (std::size_t c : cuts) {
    step(c);
    if (failed) return o;
  }
  step(text.size());
  if (failed) return o;
  o.body_ok = true;
  o.complete = p.is_done() || (o.head_ok && sluice::upstream::end_of_input(p));
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = sluice::fuzz::split_from(sluice::fuzz::as_text(data, size));
  const outcome whole = run(in.text, {});
  const outcome pieces = run(in.text, in.cuts);
  // What the client acts on: a response accepted whole (head and body complete, no error) or not.
  // A malformed head may be refused at once when whole and only at the end of input when split
  // (the parser waits for the rest of a head it cannot finish): either way it is not accepted.
  const bool accepted_whole = whole.body_ok && whole.head_ok && whole.complete;
  const bool accepted_pieces = pieces.body_ok && pieces.head_ok && pieces.complete;
  sluice::fuzz::require(accepted_whole == accepted_pieces, "a response is accepted whole iff accepted split");
  if (accepted_whole) sluice::fuzz::require(whole.body == pieces.body, "the same body bytes whole and split");
  return 0;
}
