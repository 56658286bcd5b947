#include "upstream/framing.hpp"

#include <boost/beast/http/error.hpp>

namespace sluice::upstream {

namespace bhttp = boost::beast::http;

boost::system::error_code parse_head(response_parser& p, boost::beast::flat_buffer& buf) {
  boost::system::error_code ec;
  if (buf.size() == 0) return ec;
  buf.consume(p.put(buf.data(), ec));
  if (ec && ec == bhttp::error::need_more) ec = {};
  return ec;
}

result<std::size_t> decode_buffered(response_parser& p, boost::beast::flat_buffer& buf, char* dst, std::size_t cap) {
  p.eager(true);  // one put() decodes every chunk the buffer holds, not one parser step
  if (buf.size() == 0 || p.is_done()) return std::size_t{0};
  p.get().body().data = dst;
  p.get().body().size = cap;
  p.get().body().more = true;
  boost::system::error_code ec;
  buf.consume(p.put(buf.data(), ec));
  if (ec && (ec == bhttp::error::need_buffer || ec == bhttp::error::need_more)) ec = {};  // (cheap when none)
  if (ec) return error::make(errc::upstream_protocol, "upstream sent a malformed response body: " + ec.message());
  return cap - p.get().body().size;
}

bool end_of_input(response_parser& p) {
  boost::system::error_code ec;
  p.put_eof(ec);
  return !ec;
}

}  // namespace sluice::upstream
