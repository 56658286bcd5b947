// The HTTP/1.1 framing rules of a request head (RFC 9112): limits, target forms, Host,
// Transfer-Encoding and Content-Length, and the body reservation policy.
#include <gtest/gtest.h>

#include <string>

#include "http/request_framing.hpp"

using namespace sluice::http;

namespace {

// A well-formed HTTP/1.1 POST with one Host and nothing else; tests add what they need.
request_head post(std::string_view target = "/v1/chat/completions") {
  request_head h;
  h.method = "POST";
  h.target = target;
  h.version = 11;
  h.host.add("gw.example:8080");
  h.field_count = 1;
  return h;
}

request_head with_te(std::initializer_list<std::string_view> lines) {
  request_head h = post();
  for (auto l : lines) {
    h.transfer_encoding.add(l);
    ++h.field_count;
  }
  return h;
}

framing_refusal verdict(const request_head& h, framing_limits l = {}) { return check_request_framing(h, l).refusal; }

}  // namespace

TEST(request_framing, a_plain_request_is_accepted_with_its_target) {
  auto h = post("/v1/chat/completions?x=1");
  h.content_length.add("42");
  auto d = check_request_framing(h, {});
  EXPECT_TRUE(d.accepted());
  EXPECT_EQ(d.origin_target, "/v1/chat/completions?x=1");
  EXPECT_EQ(framing_status(d.refusal), 0u);
}

TEST(request_framing, chunked_alone_is_the_only_transfer_encoding_accepted) {
  EXPECT_EQ(verdict(with_te({"chunked"})), framing_refusal::none);
  EXPECT_EQ(verdict(with_te({"Chunked"})), framing_refusal::none);  // coding names are case-insensitive
  EXPECT_EQ(verdict(with_te({" chunked\t"})), framing_refusal::none);
}

TEST(request_framing, codings_whose_last_is_not_chunked_are_400) {
  for (auto v : {"chunked, identity", "xchunked", "chunkedx", "identity", "gzip", "chunked, gzip", "chunk"}) {
    SCOPED_TRACE(v);
    const auto h = with_te({v});
    EXPECT_EQ(verdict(h), framing_refusal::bad_transfer_encoding);
    EXPECT_EQ(framing_status(verdict(h)), 400u);
  }
}

TEST(request_framing, chunked_twice_or_with_parameters_is_400) {
  EXPECT_EQ(verdict(with_te({"chunked, chunked"})), framing_refusal::bad_transfer_encoding);
  EXPECT_EQ(verdict(with_te({"chunked", "chunked"})), framing_refusal::bad_transfer_encoding);
  EXPECT_EQ(verdict(with_te({"chunked;ext=1"})), framing_refusal::bad_transfer_encoding);
  EXPECT_EQ(verdict(with_te({"gzip;q=1, chunked;x"})), framing_refusal::bad_transfer_encoding);
}

TEST(request_framing, malformed_or_empty_coding_lists_are_400) {
  for (auto v : {"", " ", ",", "chunked,", ", chunked", "chunked,,", "gz ip, chunked", "\"chunked\"", "chun\x01ked"}) {
    SCOPED_TRACE(v);
    EXPECT_EQ(verdict(with_te({v})), framing_refusal::bad_transfer_encoding);
  }
}

TEST(request_framing, another_coding_before_chunked_is_501) {
  for (auto v : {"gzip, chunked", "deflate,chunked", "x-custom, gzip, chunked", "gzip;level=9, chunked"}) {
    SCOPED_TRACE(v);
    const auto h = with_te({v});
    EXPECT_EQ(verdict(h), framing_refusal::unsupported_transfer_coding);
    EXPECT_EQ(framing_status(verdict(h)), 501u);
  }
  // Several lines form one list, in order.
  EXPECT_EQ(verdict(with_te({"gzip", "chunked"})), framing_refusal::unsupported_transfer_coding);
  EXPECT_EQ(verdict(with_te({"chunked", "gzip"})), framing_refusal::bad_transfer_encoding);
}

TEST(request_framing, transfer_encoding_with_content_length_is_400_whatever_the_codings) {
  for (auto v : {"chunked", "chunked, identity", "xchunked", "gzip, chunked"}) {
    SCOPED_TRACE(v);
    auto h = with_te({v});
    h.content_length.add("5");
    EXPECT_EQ(verdict(h), framing_refusal::content_length_with_transfer_encoding);
    EXPECT_EQ(framing_status(verdict(h)), 400u);
  }
}

TEST(request_framing, transfer_encoding_in_http_1_0_is_400) {
  auto h = with_te({"chunked"});
  h.version = 10;
  EXPECT_EQ(verdict(h), framing_refusal::bad_transfer_encoding);
}

TEST(request_framing, too_many_transfer_encoding_lines_are_400) {
  auto h = with_te({"gzip", "gzip", "gzip", "gzip", "chunked"});
  EXPECT_EQ(h.transfer_encoding.count, 5u);
  EXPECT_EQ(verdict(h), framing_refusal::bad_transfer_encoding);
}

TEST(request_framing, content_lengths_must_be_numbers_that_agree) {
  auto cl = [](std::initializer_list<std::string_view> lines) {
    request_head h = post();
    for (auto l : lines) h.content_length.add(l);
    return verdict(h);
  };
  EXPECT_EQ(cl({"5"}), framing_refusal::none);
  EXPECT_EQ(cl({"0"}), framing_refusal::none);
  EXPECT_EQ(cl({"5", "5"}), framing_refusal::none);     // identical duplicates: one value (RFC 9110 8.6)
  EXPECT_EQ(cl({"5, 5"}), framing_refusal::none);
  EXPECT_EQ(cl({"005", "5"}), framing_refusal::none);   // the same number
  EXPECT_EQ(cl({"5", "6"}), framing_refusal::bad_content_length);
  EXPECT_EQ(cl({"5, 6"}), framing_refusal::bad_content_length);
  EXPECT_EQ(cl({"5", "5", "5", "5", "5"}), framing_refusal::bad_content_length);  // past the lines kept
  for (auto v : {"", " ", "-1", "+5", "0x10", "5 5", "1e3", "5,", "12345678901234567890", "five"}) {
    SCOPED_TRACE(v);
    EXPECT_EQ(cl({v}), framing_refusal::bad_content_length);
  }
  EXPECT_EQ(framing_status(framing_refusal::bad_content_length), 400u);
}

TEST(request_framing, http_1_1_needs_exactly_one_valid_host) {
  auto h = post();
  h.host = {};
  EXPECT_EQ(verdict(h), framing_refusal::missing_host);
  h.version = 10;  // HTTP/1.0 had no Host
  EXPECT_EQ(verdict(h), framing_refusal::none);
  h = post();
  h.host.add("other");
  EXPECT_EQ(verdict(h), framing_refusal::bad_host);
  for (auto v : {"a b", "host/path", "user@host", "h\"x"}) {
    SCOPED_TRACE(v);
    h = post();
    h.host = {};
    h.host.add(v);
    EXPECT_EQ(verdict(h), framing_refusal::bad_host);
  }
  for (auto v : {"", "localhost", "127.0.0.1:8080", "[::1]:443", "my-gw.internal"}) {
    SCOPED_TRACE(v);
    h = post();
    h.host = {};
    h.host.add(v);
    EXPECT_EQ(verdict(h), framing_refusal::none);
  }
}

TEST(request_framing, absolute_form_is_served_as_its_path) {
  auto at = [](std::string_view t) { return check_request_framing(post(t), {}); };
  EXPECT_EQ(at("http://gw.example/v1/chat/completions").origin_target, "/v1/chat/completions");
  EXPECT_EQ(at("HTTPS://gw.example:8443/v1/models?x=1").origin_target, "/v1/models?x=1");
  // No path: the caller routes "/" (plus the query).
  auto empty = at("http://gw.example");
  EXPECT_TRUE(empty.accepted());
  EXPECT_EQ(empty.origin_target, "");
  EXPECT_EQ(at("http://gw.example?q").origin_target, "?q");
  for (auto t : {"ftp://gw.example/x", "http:///x", "http://user@gw.example/x", "http://gw example/x",
                 "1http://gw/x", "http:/x"}) {
    SCOPED_TRACE(t);
    EXPECT_EQ(at(t).refusal, framing_refusal::bad_target);
  }
}

TEST(request_framing, authority_form_is_only_for_connect_and_connect_is_405) {
  EXPECT_EQ(verdict(post("gw.example:443")), framing_refusal::bad_target);
  request_head c = post("gw.example:443");
  c.method = "CONNECT";
  EXPECT_EQ(verdict(c), framing_refusal::connect_not_supported);
  EXPECT_EQ(framing_status(framing_refusal::connect_not_supported), 405u);
  c.target = "/x";  // whatever its target
  EXPECT_EQ(verdict(c), framing_refusal::connect_not_supported);
}

TEST(request_framing, other_target_forms) {
  request_head o = post("*");
  EXPECT_EQ(verdict(o), framing_refusal::bad_target);  // asterisk-form is OPTIONS only
  o.method = "OPTIONS";
  EXPECT_EQ(verdict(o), framing_refusal::none);
  for (auto t : {"", "v1/chat/completions", "/v1/x#frag", "localhost"}) {
    SCOPED_TRACE(t);
    EXPECT_EQ(verdict(post(t)), framing_refusal::bad_target);
  }
}

TEST(request_framing, request_line_limit_is_414) {
  framing_limits l;
  l.max_request_line_bytes = 100;
  // "POST " + target + " HTTP/1.1" == 14 + target bytes.
  const std::string fits = "/" + std::string(100 - 14 - 1, 'a');
  EXPECT_EQ(verdict(post(fits), l), framing_refusal::none);
  const std::string over = fits + "a";
  EXPECT_EQ(verdict(post(over), l), framing_refusal::request_line_too_long);
  EXPECT_EQ(framing_status(framing_refusal::request_line_too_long), 414u);
  // Checked first: a long line with other faults is still 414.
  auto h = post(over);
  h.host = {};
  EXPECT_EQ(verdict(h, l), framing_refusal::request_line_too_long);
}

TEST(request_framing, header_field_limit_is_431) {
  framing_limits l;
  l.max_header_fields = 100;
  auto h = post();
  h.field_count = 100;
  EXPECT_EQ(verdict(h, l), framing_refusal::none);
  h.field_count = 101;
  EXPECT_EQ(verdict(h, l), framing_refusal::too_many_header_fields);
  EXPECT_EQ(framing_status(framing_refusal::too_many_header_fields), 431u);
}

TEST(request_framing, every_refusal_has_a_name_a_status_and_a_message) {
  for (auto r : {framing_refusal::request_line_too_long, framing_refusal::too_many_header_fields,
                 framing_refusal::connect_not_supported, framing_refusal::bad_target, framing_refusal::missing_host,
                 framing_refusal::bad_host, framing_refusal::bad_content_length,
                 framing_refusal::content_length_with_transfer_encoding, framing_refusal::bad_transfer_encoding,
                 framing_refusal::unsupported_transfer_coding}) {
    EXPECT_NE(to_string(r), "unknown");
    EXPECT_GE(framing_status(r), 400u);
  }
  EXPECT_FALSE(check_request_framing(with_te({"xchunked"}), {}).message.empty());
}

// Whatever bytes the fields hold, the verdict is one of the refusals or an origin target inside
// the head's own target (a cheap stand-in for the fuzzer: no crash, no view outside the input).
TEST(request_framing, arbitrary_values_never_escape_the_input) {
  const std::string alphabet = "chunked, ;=\t0123456789/:?#@*htps\x01";
  std::uint32_t seed = 12345;
  auto next = [&] {
    seed = seed * 1664525u + 1013904223u;
    return seed >> 8;
  };
  for (int i = 0; i < 20000; ++i) {
    std::string target, te, cl, host;
    for (auto* s : {&target, &te, &cl, &host}) {
      const std::size_t n = next() % 12;
      for (std::size_t k = 0; k < n; ++k) s->push_back(alphabet[next() % alphabet.size()]);
    }
    request_head h;
    h.method = (next() % 4 == 0) ? "CONNECT" : "POST";
    h.target = target;
    h.version = next() % 2 ? 11 : 10;
    if (next() % 2) h.host.add(host);
    if (next() % 2) h.transfer_encoding.add(te);
    if (next() % 2) h.content_length.add(cl);
    const auto d = check_request_framing(h, {});
    if (d.accepted()) {
      ASSERT_TRUE(d.origin_target.empty() ||
                  (d.origin_target.data() >= h.target.data() &&
                   d.origin_target.data() + d.origin_target.size() <= h.target.data() + h.target.size()));
      ASSERT_TRUE(h.transfer_encoding.count == 0 || h.content_length.count == 0);
    } else {
      ASSERT_FALSE(d.message.empty());
    }
  }
}

TEST(body_reserve, small_bodies_get_a_small_buffer_larger_ones_the_cap_in_one_step) {
  const std::size_t cap = 4 * 1024 * 1024;
  EXPECT_EQ(body_reserve(0, 10, cap), small_body_bytes);
  EXPECT_EQ(body_reserve(small_body_bytes, small_body_bytes, cap), 0u);  // fits
  EXPECT_EQ(body_reserve(small_body_bytes, small_body_bytes + 1, cap), cap);
  EXPECT_EQ(body_reserve(0, 3 * 1024 * 1024, cap), cap);
  EXPECT_EQ(body_reserve(cap, cap, cap), 0u);
  // A cap below the small size: never more than the cap.
  EXPECT_EQ(body_reserve(0, 10, 1000), 1000u);
  EXPECT_EQ(body_reserve(1000, 1000, 1000), 0u);
}

// std::string::reserve alone would not do: it grows to at least twice the old capacity.
TEST(body_reserve, reserve_body_allocates_exactly_what_the_policy_says) {
  std::string body(1000, 'x');
  reserve_body(body, 2000, 100000);
  EXPECT_EQ(body.capacity(), small_body_bytes);
  EXPECT_EQ(body, std::string(1000, 'x'));
  reserve_body(body, small_body_bytes + 1, 100000);
  EXPECT_EQ(body.capacity(), 100000u);  // reserve() would have made it 131072
  EXPECT_EQ(body.size(), 1000u);
  reserve_body(body, 5000, 100000);  // fits: unchanged
  EXPECT_EQ(body.capacity(), 100000u);
}

// A body of chunks read under the policy never reaches a capacity above the cap, and no growth
// step holds more than the cap plus the small buffer (old and new together): the old growth by
// doubling held 7.5 MiB for a 4 MiB cap.
TEST(body_reserve, a_body_filled_to_the_cap_never_holds_more) {
  for (std::size_t cap : {std::size_t{4} << 20, std::size_t{5} << 20, std::size_t{100000}, std::size_t{1000}}) {
    for (std::size_t chunk : {std::size_t{1}, std::size_t{997}, std::size_t{16384}, std::size_t{65536}}) {
      if (chunk == 1 && cap > 100000) continue;  // a byte at a time for small caps only
      std::string body;
      std::size_t peak = 0;
      while (body.size() + chunk <= cap) {
        const std::size_t old_capacity = body.capacity();
        reserve_body(body, body.size() + chunk, cap);
        if (body.capacity() != old_capacity)
          peak = std::max(peak, old_capacity + body.capacity());  // old and new both held while copying
        const std::size_t before = body.capacity();
        body.append(chunk, 'x');
        ASSERT_EQ(body.capacity(), before) << "the append never reallocates";
      }
      EXPECT_LE(body.capacity(), std::max(cap, std::size_t{15}));  // 15: std::string's inline buffer
      EXPECT_LE(peak, cap + std::min(small_body_bytes, cap) + 15);
    }
  }
}
