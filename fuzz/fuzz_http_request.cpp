// The request reading path fed as bytes: Beast's request parser under the gateway's limits (head
// bytes, body bytes), whole and cut in pieces, must reach the same verdict and the same request.
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "fuzz_util.hpp"
#include "http/request_framing.hpp"

namespace {

namespace bhttp = boost::beast::http;

struct outcome {
  bool ok = false, done = false;
  std::string method, target, body;
  std::size_t fields = 0;
};

outcome run(std::string_view text, const std::vector<std::size_t>& cuts) {
  outcome o;
  bhttp::request_parser<bhttp::string_body> p;
  p.header_limit(16 * 1024);
  p.body_limit(64 * 1024);
  p.eager(true);
  std::string pending;
  std::size_t from = 0;
  auto step = [&](std::size_t to) {
    pending.append(text.data() + from, to - from);
    from = to;
    while (!pending.empty() && !p.is_done()) {
      // As the gateway reads (http::connection::read_body): a chunked body's last bytes wait for
      // five (Beast 1.81 asserts otherwise; request_framing.hpp).
      if (p.is_header_done() && sluice::http::hold_body_bytes(p.chunked(), pending.size())) return true;
      boost::system::error_code ec;
      const std::size_t used = p.put(boost::asio::buffer(pending.data(), pending.size()), ec);
      pending.erase(0, used);
      if (ec == bhttp::error::need_more) return true;
      if (ec) return false;
      if (used == 0) return true;
    }
    return true;
  };
  for (std::size_t c : cuts)
    if (!step(c)) return o;
  if (!step(text.size())) return o;
  o.ok = true;
  o.done = p.is_done();
  if (o.done) {
    const auto& m = p.get();
    o.method = std::string(m.method_string());
    o.target = std::string(m.target());
    o.body = m.body();
    o.fields = static_cast<std::size_t>(std::distance(m.begin(), m.end()));
  }
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = sluice::fuzz::split_from(sluice::fuzz::as_text(data, size));
  const outcome whole = run(in.text, {});
  const outcome pieces = run(in.text, in.cuts);
  // What the server acts on: a request read whole (complete, no error) or not. A malformed head
  // may be refused at once when whole and only when its reading times out when split (the parser
  // waits for the rest of a head it cannot finish): either way it is never served.
  const bool read_whole = whole.ok && whole.done;
  const bool read_pieces = pieces.ok && pieces.done;
  sluice::fuzz::require(read_whole == read_pieces, "a request is read whole iff read split");
  if (read_whole) {
    sluice::fuzz::require(whole.method == pieces.method && whole.target == pieces.target, "the same request line");
    sluice::fuzz::require(whole.body == pieces.body && whole.fields == pieces.fields, "the same fields and body");
  }
  return 0;
}
