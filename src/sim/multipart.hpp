// An incremental multipart/form-data parser (RFC 7578 over RFC 2046) for request bodies that may be
// far larger than memory should hold: the bytes are fed in pieces of any size and each part's data
// is handed on as views, never gathered. Pure, std only; one parser per body, not thread-safe. Its
// state is bounded: a part's header block (at most max_part_headers bytes) and, between feeds, at
// most one delimiter's length of bytes that might begin the next boundary.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::sim::multipart {

// RFC 2046's bound on a boundary's length, and the header block a part may carry.
inline constexpr std::size_t max_boundary = 70;
inline constexpr std::size_t max_part_headers = 8 * 1024;

// What can be wrong with a body; `none` while nothing is.
enum class failure {
  none,
  no_boundary,       // the boundary is empty or longer than max_boundary
  bad_delimiter,     // a boundary line followed by something other than "--", spaces or CRLF
  headers_too_long,  // a part's header block over max_part_headers
  bad_header,        // a header line without a colon
  missing_name,      // a part without Content-Disposition: form-data; name="..."
  truncated,         // the body ended before the closing boundary
};

// A sentence saying what the failure is, for an error message.
std::string_view describe(failure f) noexcept;

// What a part's headers said.
struct part_head {
  std::string name;          // Content-Disposition's name
  std::string filename;      // its filename (filename* when given)
  bool has_filename = false;  // a file part, even with filename=""
  std::string content_type;  // empty when the part has none
};

// Receives the parser's events, in order: for each part begin, data pieces (zero or more), end;
// then close once the closing boundary is seen. The views are valid only during the call.
class handler {
 public:
  virtual void on_part_begin(const part_head& head) = 0;
  virtual void on_part_data(std::string_view bytes) = 0;
  virtual void on_part_end() = 0;
  virtual void on_close() = 0;

 protected:
  ~handler() = default;
};

class parser {
 public:
  explicit parser(std::string_view boundary);

  // Parses the next bytes of the body (any split gives the same events, data aside, whose pieces
  // may be cut differently). After a failure every call returns it again and reports nothing.
  failure feed(std::string_view bytes, handler& h);
  // The body has ended: `truncated` unless the closing boundary was seen.
  failure finish();
  // The closing boundary has been seen (what follows it, the epilogue, is ignored).
  bool closed() const noexcept { return state_ == state::epilogue; }

 private:
  enum class state { preamble, delimiter_line, padding, expect_lf, close_dash, headers, body, epilogue };

  std::string_view scan(std::string_view in, handler& h);
  std::string_view scan_held(std::string_view in, handler& h);
  std::string_view take_delimiter_line(std::string_view in, handler& h);
  std::string_view take_headers(std::string_view in, handler& h);
  void emit(std::string_view data, handler& h);
  void found_delimiter(handler& h);
  void fail(failure f) noexcept { error_ = f; }

  std::string delimiter_;  // CRLF "--" boundary
  state state_ = state::preamble;
  failure error_ = failure::none;
  std::string held_;     // a proper prefix of delimiter_ seen at the end of the last feed
  std::string window_;   // held_ and the start of the next feed, reused
  std::string headers_;  // the current part's header block so far
};

// The boundary of a multipart/form-data Content-Type (quoted or not), or nothing when the type is
// another or its boundary is missing, empty or over max_boundary.
std::optional<std::string> boundary_of(std::string_view content_type);

// The part head of a header block ("Name: value" lines, CRLF-separated, the blank line optional),
// or the failure (bad_header, missing_name). Exposed for tests.
failure parse_part_head(std::string_view block, part_head& out);

}  // namespace sluice::sim::multipart
