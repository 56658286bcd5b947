// runtime::head_bytes writes a message head byte for byte as Beast's serializer does.
#include <gtest/gtest.h>

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>

#include "runtime/socket_io.hpp"

using namespace sluice;
namespace bhttp = boost::beast::http;

namespace {

// The reference: what Beast's serializer writes for the head.
template <bool isRequest, class Body>
std::string beast_head(bhttp::message<isRequest, Body>& msg) {
  bhttp::serializer<isRequest, Body> sr(msg);
  sr.split(true);
  std::string out;
  error_code ec;
  while (!sr.is_header_done() && !ec) {
    sr.next(ec, [&](error_code&, const auto& buffers) {
      for (auto it = net::buffer_sequence_begin(buffers); it != net::buffer_sequence_end(buffers); ++it) {
        net::const_buffer b(*it);
        out.append(static_cast<const char*>(b.data()), b.size());
      }
      sr.consume(net::buffer_size(buffers));
    });
  }
  EXPECT_FALSE(ec) << ec.message();
  return out;
}

}  // namespace

TEST(head_bytes, request_with_a_body_matches_beast) {
  bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/v1/chat/completions?x=1", 11};
  req.set(bhttp::field::host, "api.example.com:8443");
  req.set(bhttp::field::authorization, "Bearer sk-x");
  req.set("x-request-id", "abc");
  req.set(bhttp::field::content_type, "application/json");
  req.keep_alive(true);
  req.body() = R"({"model":"m"})";
  req.prepare_payload();
  EXPECT_EQ(runtime::head_bytes(req.base()), beast_head(req));
  EXPECT_EQ(runtime::head_bytes(req.base()).substr(0, 41), "POST /v1/chat/completions?x=1 HTTP/1.1\r\nH");
}

TEST(head_bytes, chunked_stream_response_matches_beast) {
  bhttp::response<bhttp::empty_body> res{bhttp::status::ok, 11};
  res.set(bhttp::field::content_type, "text/event-stream");
  res.set(bhttp::field::cache_control, "no-cache");
  res.set("x-accel-buffering", "no");
  res.set("x-Custom-Case", "Kept As Given");
  res.chunked(true);
  res.keep_alive(false);
  EXPECT_EQ(runtime::head_bytes(res.base()), beast_head(res));
}

TEST(head_bytes, other_versions_statuses_and_reasons_match_beast) {
  for (unsigned version : {10u, 11u}) {
    for (unsigned status : {101u, 204u, 404u, 429u, 503u, 599u}) {
      bhttp::response<bhttp::empty_body> res{static_cast<bhttp::status>(status), version};
      res.set(bhttp::field::retry_after, "2");
      EXPECT_EQ(runtime::head_bytes(res.base()), beast_head(res)) << version << " " << status;
    }
  }
  bhttp::response<bhttp::empty_body> custom{bhttp::status::ok, 11};
  custom.reason("All Good");
  EXPECT_EQ(runtime::head_bytes(custom.base()), beast_head(custom));
  EXPECT_EQ(runtime::head_bytes(custom.base()), "HTTP/1.1 200 All Good\r\n\r\n");
}
