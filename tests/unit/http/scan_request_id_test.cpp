// http::scan_request_id finds the client's x-request-id in the unparsed bytes of a head that could
// not be read whole, so that even a broken request's log line carries it.
#include <gtest/gtest.h>

#include "http/connection.hpp"

using sluice::http::scan_request_id;

TEST(scan_request_id, finds_the_header_in_a_raw_head) {
  EXPECT_EQ(scan_request_id("GET / HTTP/1.1\r\nHost: x\r\nX-Request-Id:  abc-1 \r\nBad\r\n\r\n"), "abc-1");
  EXPECT_EQ(scan_request_id("GET / HTTP/1.1\r\nx-request-id:\tq\r\n"), "q");
  EXPECT_EQ(scan_request_id("GET / HTTP/1.1\nx-request-id: lf-only\n"), "lf-only");
  // Cut off mid-value (a head still arriving when its deadline passed): what arrived.
  EXPECT_EQ(scan_request_id("POST / HTTP/1.1\r\nx-request-id: partial"), "partial");
}

TEST(scan_request_id, only_a_header_line_of_that_name) {
  EXPECT_EQ(scan_request_id("GET /x-request-id:no HTTP/1.1\r\nHost: x\r\n"), "");
  EXPECT_EQ(scan_request_id("GET / HTTP/1.1\r\nx-request-ids: no\r\nx-forwarded-x-request-id: no\r\n"), "");
  EXPECT_EQ(scan_request_id(""), "");
  // What the parser left after consuming the lines before: the id line comes first.
  EXPECT_EQ(scan_request_id("x-request-id: rest-1\r\nX-Big: aaaa"), "rest-1");
  // The first of two wins.
  EXPECT_EQ(scan_request_id("G / HTTP/1.1\r\nx-request-id: one\r\nx-request-id: two\r\n"), "one");
}
