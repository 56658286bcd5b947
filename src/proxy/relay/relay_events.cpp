#include "proxy/relay/relay_events.hpp"

#include <algorithm>
#include <utility>

namespace sluice::proxy {

void relay_events::on_done(std::size_t end, bool verdict_here) noexcept {
  ++events;
  if (verdict_here) {
    verdict_at_ = good_end_;
    verdict_chunk_ = chunk_start_;
  }
  saw_done_ = true;
  good_end_ = end;
}

bool relay_events::on_data(const event_facts& facts, std::size_t end) noexcept {
  ++events;
  using type_kind = event_facts::type_kind;
  if (responses_end_) {  // Responses API: a terminal event instead of [DONE]
    if (facts.type == type_kind::completed || facts.type == type_kind::incomplete) saw_done_ = true;
    else if (facts.type == type_kind::failed || facts.type == type_kind::error) saw_error_event_ = true;
  }
  if (facts.has_error) saw_error_event_ = true;  // the upstream's own in-band error: forwarded
  if (facts.sequence_number >= 0) last_sequence_number = facts.sequence_number;
  if (facts.usage_object) {
    // Chat completions: prompt_tokens / completion_tokens; Responses API: input_ / output_tokens.
    if (facts.completion_tokens >= 0) completion_tokens = static_cast<std::uint64_t>(facts.completion_tokens);
    if (facts.prompt_tokens >= 0) prompt_tokens = static_cast<std::uint64_t>(facts.prompt_tokens);
    if (facts.output_tokens >= 0) completion_tokens = static_cast<std::uint64_t>(facts.output_tokens);
    if (facts.input_tokens >= 0) prompt_tokens = static_cast<std::uint64_t>(facts.input_tokens);
  }
  bool content = false;
  if ((facts.choices_array && facts.choices > 0) || facts.type == type_kind::text_delta) {
    ++content_events;
    content = true;
  } else if (strip_usage_ && facts.usage_object && facts.choices_array) {
    // The usage chunk the client did not ask for: accounted above, left out of the write. It starts
    // where the previous good event ended, or at the buffer's start when it is the chunk's first
    // event (the buffer then holds only its beginning).
    drop_from_ = good_end_ > 0 ? chunk_start_ + good_end_ : 0;
    drop_to_ = chunk_start_ + end;
    usage_stripped = true;
  }
  good_end_ = end;
  return content;
}

namespace {

// What goes in between the byte ranges, at a buffer offset.
struct write_splice {
  std::size_t at;
  bool verdict;  // else the redacted event
};

}  // namespace

write_plan plan_write(std::size_t upto, const relay_events::cut& c) noexcept {
  write_plan p;
  auto add = [&p](bool verdict, bool redacted, std::size_t from, std::size_t to) {
    if (verdict || redacted || to > from) p.pieces[p.count++] = {verdict, redacted, from, to};
  };
  // The bytes to send: [0, upto) less the dropped and the redacted ranges.
  std::array<std::pair<std::size_t, std::size_t>, 2> holes{};
  std::size_t nh = 0;
  auto hole = [&](std::size_t from, std::size_t to) {
    if (to > from && from < upto) holes[nh++] = {from, std::min(to, upto)};
  };
  hole(c.drop_from, c.drop_to);
  hole(c.redact_from, c.redact_to);
  if (nh == 2 && holes[1].first < holes[0].first) std::swap(holes[0], holes[1]);
  std::array<std::pair<std::size_t, std::size_t>, 3> ranges{};
  std::size_t nr = 0, at = 0;
  for (std::size_t i = 0; i < nh; ++i) {
    ranges[nr++] = {at, holes[i].first};
    at = std::max(at, holes[i].second);
  }
  ranges[nr++] = {at, upto};
  // The splices, by offset (the redacted event first on a tie): each goes at the first send
  // position at or after its offset, so one due inside a range left out moves to its end.
  std::array<write_splice, 2> splices{};
  std::size_t ns = 0;
  if (c.redact_to > c.redact_from && c.redact_from < upto) splices[ns++] = {c.redact_from, false};
  if (c.verdict_at != no_offset) splices[ns++] = {c.verdict_at, true};
  if (ns == 2 && splices[1].at < splices[0].at) std::swap(splices[0], splices[1]);
  std::size_t next = 0;
  for (std::size_t i = 0; i < nr; ++i) {
    auto [from, to] = ranges[i];
    while (next < ns && splices[next].at < to) {
      const std::size_t pos = std::max(splices[next].at, from);
      add(false, false, from, pos);
      add(splices[next].verdict, !splices[next].verdict, 0, 0);
      from = pos;
      ++next;
    }
    add(false, false, from, to);
  }
  for (; next < ns; ++next) add(splices[next].verdict, !splices[next].verdict, 0, 0);
  return p;
}

}  // namespace sluice::proxy
