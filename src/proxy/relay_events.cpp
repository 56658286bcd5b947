#include "proxy/relay_events.hpp"

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

write_plan plan_write(std::size_t upto, const relay_events::cut& c) noexcept {
  write_plan p;
  auto add = [&p](bool verdict, std::size_t from, std::size_t to) {
    if (verdict || to > from) p.pieces[p.count++] = {verdict, from, to};
  };
  // The bytes to send: [0, upto) less the dropped range.
  std::array<std::pair<std::size_t, std::size_t>, 2> ranges{};
  std::size_t n = 0;
  if (c.drop_to > c.drop_from && c.drop_from < upto) {
    ranges[n++] = {0, c.drop_from};
    ranges[n++] = {std::min(c.drop_to, upto), upto};
  } else {
    ranges[n++] = {0, upto};
  }
  // The verdict goes at the first send position at or after verdict_at: one due inside the
  // dropped range moves to its end.
  bool verdict_due = c.verdict_at != no_offset;
  for (std::size_t i = 0; i < n; ++i) {
    const auto [from, to] = ranges[i];
    if (verdict_due && c.verdict_at < to) {
      const std::size_t at = std::max(c.verdict_at, from);
      add(false, from, at);
      add(true, 0, 0);
      add(false, at, to);
      verdict_due = false;
    } else {
      add(false, from, to);
    }
  }
  if (verdict_due) add(true, 0, 0);
  return p;
}

}  // namespace sluice::proxy
