// The framing of one upstream response over the bytes read from its connection, apart from the
// socket: the head parsed from the buffered bytes, then the body (Content-Length, chunked or
// close-delimited) decoded into the caller's memory, every chunk the buffer holds in one step.
// Pure functions over a Beast parser and buffer: the connection reads, these decode. One thread.
#pragma once

#include <cstddef>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>

#include <boost/system/error_code.hpp>

#include "core/error.hpp"

namespace sluice::upstream {

using response_parser = boost::beast::http::response_parser<boost::beast::http::buffer_body>;

// Parses the head from what `buf` holds, consuming what it used. {} with p.is_header_done() when
// the head is complete, {} without it when more bytes are needed; an error for a malformed head.
boost::system::error_code parse_head(response_parser& p, boost::beast::flat_buffer& buf);

// Decodes the body bytes `buf` already holds into dst[0, cap), consuming what it used: the bytes
// written, 0 when nothing decodable is buffered (or the body is complete). A malformed body
// (a bad chunk size, say) is errc::upstream_protocol.
result<std::size_t> decode_buffered(response_parser& p, boost::beast::flat_buffer& buf, char* dst, std::size_t cap);

// The connection reached its end: true when that completes the body (a close-delimited one),
// false when it cut the body short.
bool end_of_input(response_parser& p);

}  // namespace sluice::upstream
