// Incremental Server-Sent Events parser (WHATWG HTML "event stream" rules): LF, CR and CRLF line
// endings, comments, multi-line data, id/retry fields, and a hard cap on one event's size.
// Pure and allocation-light: one instance per stream, not thread-safe, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace sluice::sse {

// One dispatched event. Views point into the parser and are valid only during the callback.
struct event_view {
  std::string_view type;  // "" means the default type, "message"
  std::string_view data;  // data lines joined by '\n', without the final '\n'
  std::string_view id;
  std::optional<std::uint32_t> retry;
  std::size_t end = 0;  // offset in the chunk being fed just past this event's blank line
};

class parser {
 public:
  // max_event_bytes bounds the raw bytes of one event (its lines and endings); past it, feed fails.
  explicit parser(std::size_t max_event_bytes = 64 * 1024) : max_event_bytes_(max_event_bytes) {}

  // Feeds the next bytes of the stream and calls on_event(const event_view&) for each event that
  // completes inside them. on_event may return void, or bool where false stops parsing at once
  // (feed then returns what was consumed so far, and the parser must not be fed again).
  // Returns the number of bytes of `chunk` up to and including the end of the last complete event
  // boundary (a blank line), or npos when no event boundary ended inside `chunk`. A relay uses it
  // to forward whole events byte-for-byte and keep only the incomplete tail.
  template <class OnEvent>
  result<std::size_t> feed(std::string_view chunk, OnEvent&& on_event);

  // Raw bytes of the event currently being assembled (for buffer accounting).
  std::size_t pending_bytes() const noexcept { return event_bytes_; }
  std::size_t max_event_bytes() const noexcept { return max_event_bytes_; }
  // Drops all partial state (e.g. before reusing the parser for another stream).
  void reset();

  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

 private:
  enum class line_result { none, dispatched, stop };
  // Offset of the first CR or LF at or after pos, or chunk.size(): two memchr scans (vectorised)
  // instead of a byte loop; streams end lines with LF, so the CR scan stops at that LF.
  static std::size_t find_line_end(std::string_view chunk, std::size_t pos) noexcept {
    const char* b = chunk.data() + pos;
    std::size_t len = chunk.size() - pos;
    if (const void* lf = std::memchr(b, '\n', len)) len = static_cast<std::size_t>(static_cast<const char*>(lf) - b);
    if (const void* cr = std::memchr(b, '\r', len)) len = static_cast<std::size_t>(static_cast<const char*>(cr) - b);
    return pos + len;
  }
  template <class OnEvent>
  line_result process_line(std::string_view line, OnEvent& on_event);
  void process_field(std::string_view name, std::string_view value);
  void keep_data();  // copies a data_view_ into data_

  std::size_t max_event_bytes_;
  std::size_t event_bytes_ = 0;  // raw bytes of the current event, line endings included
  std::string line_;             // a line split across feeds
  std::string data_;
  // The event's only data line so far, when it lies in the chunk being fed (no copy into data_);
  // copied into data_ before feed returns or when a second data line comes.
  std::string_view data_view_;
  std::string type_;
  std::string id_;               // the last event id persists across events, per spec
  std::optional<std::uint32_t> retry_;
  bool has_data_ = false;
  bool in_line_buffer_ = false;  // the line being processed lives in line_, not in the chunk
  bool skip_lf_ = false;         // the previous chunk ended in CR: a leading LF completes CRLF
  // With skip_lf_: the raw bytes of the event that CR's line belonged to (counted up to the CR), and
  // whether that line ended it (a blank line). The LF is that event's byte, as when fed whole.
  std::size_t cr_event_bytes_ = 0;
  bool cr_dispatched_ = false;
  std::size_t line_end_ = 0;     // offset just past the line being processed, for event_view::end
};

// Writes one event in wire format: optional "event:" line, one "data:" line per data line, blank line.
std::string format_event(std::string_view data, std::string_view type = {});
void append_event(std::string& out, std::string_view data, std::string_view type = {});

// --- implementation -------------------------------------------------------------------------

template <class OnEvent>
parser::line_result parser::process_line(std::string_view line, OnEvent& on_event) {
  if (!line.empty()) {
    if (line.front() != ':') {
      auto colon = line.find(':');
      if (colon == std::string_view::npos) {
        process_field(line, {});
      } else {
        std::string_view value = line.substr(colon + 1);
        if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        process_field(line.substr(0, colon), value);
      }
    }
    return line_result::none;
  }
  // Blank line: dispatch (only if some data arrived, per spec) and start the next event.
  line_result r = line_result::dispatched;
  if (has_data_) {
    const std::string_view data = data_view_.data() ? data_view_ : std::string_view(data_).substr(0, data_.size() - 1);
    event_view ev{type_, data, id_, retry_, line_end_};
    if constexpr (std::is_same_v<decltype(on_event(ev)), bool>) {
      if (!on_event(ev)) r = line_result::stop;
    } else {
      on_event(ev);
    }
  }
  data_.clear();
  data_view_ = {};
  type_.clear();
  retry_.reset();
  has_data_ = false;
  event_bytes_ = 0;
  return r;
}

template <class OnEvent>
result<std::size_t> parser::feed(std::string_view chunk, OnEvent&& on_event) {
  std::size_t boundary = npos;
  std::size_t pos = 0;
  const std::size_t n = chunk.size();
  if (skip_lf_ && n > 0) {
    skip_lf_ = false;
    if (chunk[0] == '\n') {
      // The CRLF's LF belongs to the line the CR ended, and to its event: counted against the cap
      // there (fed whole, the check covers both bytes), and not into the next event once that line
      // ended its event.
      if (cr_event_bytes_ + 1 > max_event_bytes_)
        return error{errc::upstream_protocol,
                     "SSE event exceeds the maximum event size of " + std::to_string(max_event_bytes_) + " bytes",
                     {}, 0, false, {}};
      pos = 1;
      if (!cr_dispatched_) ++event_bytes_;
    }
  }
  while (pos < n) {
    const std::size_t end = find_line_end(chunk, pos);
    if (end == n) {
      std::size_t add = n - pos;
      if (event_bytes_ + add > max_event_bytes_)
        return error{errc::upstream_protocol,
                     "SSE event exceeds the maximum event size of " + std::to_string(max_event_bytes_) + " bytes",
                     {}, 0, false, {}};
      line_.append(chunk.data() + pos, add);
      event_bytes_ += add;
      break;
    }
    std::size_t term = 1;
    if (chunk[end] == '\r') {
      if (end + 1 < n) {
        if (chunk[end + 1] == '\n') term = 2;
      } else {
        skip_lf_ = true;  // CR at the end of the chunk: a following LF belongs to it
      }
    }
    std::size_t add = end - pos + term;
    if (event_bytes_ + add > max_event_bytes_)
      return error{errc::upstream_protocol,
                   "SSE event exceeds the maximum event size of " + std::to_string(max_event_bytes_) + " bytes",
                   {}, 0, false, {}};
    event_bytes_ += add;
    const std::size_t cr_event_bytes_for_line = event_bytes_;
    line_end_ = end + term;
    line_result lr;
    if (line_.empty()) {
      lr = process_line(chunk.substr(pos, end - pos), on_event);
    } else {
      line_.append(chunk.data() + pos, end - pos);
      in_line_buffer_ = true;
      lr = process_line(std::string_view(line_), on_event);
      in_line_buffer_ = false;
      line_.clear();  // keeps the capacity for the next split line
    }
    pos = end + term;
    if (skip_lf_) {  // this line's CR ended the chunk
      cr_event_bytes_ = cr_event_bytes_for_line;
      cr_dispatched_ = lr != line_result::none;
    }
    if (lr != line_result::none) boundary = pos;
    if (lr == line_result::stop) return boundary;
  }
  keep_data();  // the chunk's memory is the caller's: an unfinished event's data is copied now
  return boundary;
}

}  // namespace sluice::sse
