// The relay's pure parts, apart from any I/O, each unit-tested on its own:
//  - relay_events: the bookkeeping of one stream's events: which end it ([DONE], or for the
//    Responses API response.completed / .incomplete), which carry content (TTFT and gaps) or an
//    upstream error, the token usage they report, the usage chunk to leave out of the write when
//    sluice asked for it, and where the structured-output verdict event goes;
//  - plan_write: how the bytes of one write are cut around that usage chunk and verdict event.
// Offsets: events are reported relative to the chunk being parsed (where the read put them in the
// relay buffer); the plan works on absolute buffer offsets. One stream, one thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "proxy/relay/event_scan.hpp"

namespace sluice::proxy {

inline constexpr std::size_t no_offset = static_cast<std::size_t>(-1);

class relay_events {
 public:
  // The stream ends with response.completed / .incomplete (the Responses API: no [DONE]).
  void end_on_response_completed() noexcept { responses_end_ = true; }
  // sluice asked for the usage chunk ({"choices":[],"usage":{...}}); it is counted, not forwarded.
  void strip_usage_chunk() noexcept { strip_usage_ = true; }
  bool strips_usage() const noexcept { return strip_usage_; }
  bool ends_on_response_completed() const noexcept { return responses_end_; }

  // A read put `n` new bytes at `chunk_start` of the buffer; its events follow.
  void begin_chunk(std::size_t chunk_start) noexcept {
    chunk_start_ = chunk_start;
    good_end_ = 0;
  }
  // [DONE], ending at `end` within the chunk; `verdict_here`: the verdict event goes right before it.
  void on_done(std::size_t end, bool verdict_here) noexcept;
  // A JSON event with these facts, ending at `end` within the chunk. True when it carries content
  // (a chat choice delta, or a Responses API output delta), for time-to-first-token and
  // inter-token gaps.
  bool on_data(const event_facts& facts, std::size_t end) noexcept;

  // Within the chunk: the end of the last event accepted (where a bad one starts).
  std::size_t good_end() const noexcept { return good_end_; }
  std::size_t chunk_start() const noexcept { return chunk_start_; }
  bool saw_end() const noexcept { return saw_done_; }
  bool saw_error_event() const noexcept { return saw_error_event_; }
  // Nothing to cut out of, or splice into, the next write.
  bool plain_write() const noexcept {
    return drop_to_ <= drop_from_ && verdict_at_ == no_offset && redact_to_ <= redact_from_;
  }
  // The next write sends the relay's redacted text (an upstream's error event without the
  // gateway's keys) instead of the bytes [from, to) (buffer offsets). One per write: false when
  // one is already due (the bytes, masked in place, then go as they are).
  bool redact(std::size_t from, std::size_t to) noexcept {
    if (redact_to_ > redact_from_) return false;
    redact_from_ = from;
    redact_to_ = to;
    return true;
  }

  // The usage chunk to leave out of the next write, [from, to) in buffer offsets (from == to:
  // none), and where the verdict goes (buffer offset, or no_offset); take() hands them out once.
  struct cut {
    std::size_t drop_from = 0, drop_to = 0;
    std::size_t verdict_at = no_offset;
    std::size_t redact_from = 0, redact_to = 0;  // the redacted text goes instead of these bytes
  };
  cut take_cut() noexcept {
    cut c;
    c.redact_from = std::exchange(redact_from_, 0);
    c.redact_to = std::exchange(redact_to_, 0);
    if (drop_to_ > drop_from_) {
      c.drop_from = drop_from_;
      c.drop_to = drop_to_;
    }
    drop_from_ = drop_to_ = 0;
    if (verdict_at_ != no_offset) {
      // [DONE] starts right after the last good event before it, or at the buffer's start when it
      // is its chunk's first event.
      c.verdict_at = verdict_at_ > 0 ? verdict_chunk_ + verdict_at_ : 0;
      verdict_at_ = no_offset;
    }
    return c;
  }

  std::uint64_t events = 0;
  std::uint64_t content_events = 0;
  std::uint64_t completion_tokens = 0;  // from a usage report, when the upstream sent one
  std::uint64_t prompt_tokens = 0;
  bool usage_stripped = false;
  // The last Responses API sequence_number seen (-1: none), so that an in-band error sluice adds
  // continues the upstream's numbering.
  std::int64_t last_sequence_number = -1;

 private:
  bool responses_end_ = false;
  bool strip_usage_ = false;
  bool saw_done_ = false;
  bool saw_error_event_ = false;
  std::size_t chunk_start_ = 0;
  std::size_t good_end_ = 0;
  std::size_t drop_from_ = 0, drop_to_ = 0;
  std::size_t redact_from_ = 0, redact_to_ = 0;
  std::size_t verdict_at_ = no_offset;  // within the chunk it was found in: chunk_start_ + this
  std::size_t verdict_chunk_ = 0;
};

// One write of the buffer's bytes [0, upto): byte ranges with the verdict event and the redacted
// error event between them, in order. The usage chunk [drop_from, drop_to) is left out; the
// redacted text replaces [redact_from, redact_to); the verdict goes at `verdict_at` (buffer offset;
// no_offset: none), never inside a range left out (the usage chunk always comes before [DONE], so a
// verdict due inside it moves to its end).
struct write_plan {
  struct piece {
    bool verdict = false;   // the verdict event, not bytes
    bool redacted = false;  // the redacted error event, not bytes
    std::size_t from = 0, to = 0;
  };
  std::array<piece, 8> pieces{};
  std::size_t count = 0;
};
write_plan plan_write(std::size_t upto, const relay_events::cut& c) noexcept;

}  // namespace sluice::proxy
