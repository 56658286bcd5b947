// The relay's pure parts: the events' bookkeeping (ends, content, errors, usage, the usage chunk to
// strip, where the verdict goes) and the write plan that cuts one write around them.
#include <gtest/gtest.h>

#include <string>

#include "proxy/relay/relay_events.hpp"

using namespace sluice::proxy;

namespace {

event_facts content_event() {
  event_facts f;
  f.choices_array = true;
  f.choices = 1;
  return f;
}
event_facts usage_chunk(std::int64_t prompt, std::int64_t completion) {
  event_facts f;
  f.choices_array = true;
  f.choices = 0;
  f.usage_object = true;
  f.prompt_tokens = prompt;
  f.completion_tokens = completion;
  return f;
}
event_facts typed(event_facts::type_kind t) {
  event_facts f;
  f.type = t;
  return f;
}

// A plan as text: byte ranges as [a,b), the verdict as V.
std::string show(const write_plan& p) {
  std::string out;
  for (std::size_t i = 0; i < p.count; ++i) {
    const auto& x = p.pieces[i];
    if (!out.empty()) out += " ";
    out += x.verdict ? "V" : x.redacted ? "R" : "[" + std::to_string(x.from) + "," + std::to_string(x.to) + ")";
  }
  return out;
}
relay_events::cut cut_of(std::size_t df, std::size_t dt, std::size_t v, std::size_t rf = 0, std::size_t rt = 0) {
  return {df, dt, v, rf, rt};
}

}  // namespace

TEST(relay_events, counts_content_and_reads_usage_of_both_apis) {
  relay_events e;
  e.begin_chunk(0);
  EXPECT_TRUE(e.on_data(content_event(), 40));
  EXPECT_TRUE(e.on_data(content_event(), 80));
  EXPECT_FALSE(e.on_data(usage_chunk(11, 2), 150));
  EXPECT_EQ(e.content_events, 2u);
  EXPECT_EQ(e.events, 3u);
  EXPECT_EQ(e.prompt_tokens, 11u);
  EXPECT_EQ(e.completion_tokens, 2u);
  EXPECT_FALSE(e.usage_stripped) << "the client asked for it: forwarded";
  EXPECT_TRUE(e.plain_write());
  event_facts responses;
  responses.usage_object = true;
  responses.input_tokens = 5;
  responses.output_tokens = 9;
  e.on_data(responses, 200);
  EXPECT_EQ(e.prompt_tokens, 5u);
  EXPECT_EQ(e.completion_tokens, 9u);
  EXPECT_EQ(e.good_end(), 200u);
}

TEST(relay_events, responses_deltas_are_content_and_sequence_numbers_are_kept) {
  relay_events e;
  e.end_on_response_completed();
  e.begin_chunk(0);
  event_facts created = typed(event_facts::type_kind::none);
  created.sequence_number = 0;
  EXPECT_FALSE(e.on_data(created, 10));
  for (auto t : {event_facts::type_kind::text_delta, event_facts::type_kind::text_delta}) {
    event_facts d = typed(t);
    d.sequence_number = e.last_sequence_number + 1;
    EXPECT_TRUE(e.on_data(d, 20));
  }
  EXPECT_EQ(e.content_events, 2u);
  EXPECT_EQ(e.last_sequence_number, 2);
  event_facts no_number;  // an event without one keeps the last
  e.on_data(no_number, 30);
  EXPECT_EQ(e.last_sequence_number, 2);
}

TEST(relay_events, ends_by_the_api_contract) {
  relay_events chat;
  chat.begin_chunk(0);
  chat.on_data(typed(event_facts::type_kind::completed), 10);
  EXPECT_FALSE(chat.saw_end()) << "a chat stream ends with [DONE] only";
  chat.on_done(20, false);
  EXPECT_TRUE(chat.saw_end());

  relay_events responses;
  responses.end_on_response_completed();
  responses.begin_chunk(0);
  responses.on_data(typed(event_facts::type_kind::incomplete), 10);
  EXPECT_TRUE(responses.saw_end());
  relay_events failed;
  failed.end_on_response_completed();
  failed.on_data(typed(event_facts::type_kind::failed), 10);
  EXPECT_TRUE(failed.saw_error_event());
  EXPECT_FALSE(failed.saw_end());

  relay_events upstream_error;
  event_facts err;
  err.has_error = true;
  upstream_error.on_data(err, 10);
  EXPECT_TRUE(upstream_error.saw_error_event());
}

TEST(relay_events, the_usage_chunk_sluice_asked_for_is_cut_out) {
  relay_events e;
  e.strip_usage_chunk();
  e.begin_chunk(100);  // this chunk starts at offset 100 of the buffer
  e.on_data(content_event(), 30);
  e.on_data(usage_chunk(3, 4), 70);
  EXPECT_TRUE(e.usage_stripped);
  EXPECT_EQ(e.prompt_tokens, 3u);
  EXPECT_FALSE(e.plain_write());
  auto c = e.take_cut();
  EXPECT_EQ(c.drop_from, 130u);
  EXPECT_EQ(c.drop_to, 170u);
  EXPECT_EQ(c.verdict_at, no_offset);
  EXPECT_TRUE(e.plain_write()) << "handed out once";
  // The chunk's first event: the drop starts at the buffer's start.
  e.begin_chunk(0);
  e.on_data(usage_chunk(1, 1), 50);
  c = e.take_cut();
  EXPECT_EQ(c.drop_from, 0u);
  EXPECT_EQ(c.drop_to, 50u);
}

TEST(relay_events, the_verdict_goes_right_before_done) {
  relay_events e;
  e.begin_chunk(200);
  e.on_data(content_event(), 25);
  e.on_done(40, true);
  auto c = e.take_cut();
  EXPECT_EQ(c.verdict_at, 225u) << "where [DONE] starts: after the last good event";
  relay_events first;
  first.begin_chunk(0);
  first.on_done(14, true);
  EXPECT_EQ(first.take_cut().verdict_at, 0u) << "[DONE] first in its chunk: the buffer's start";
  relay_events none;
  none.on_done(14, false);
  EXPECT_EQ(none.take_cut().verdict_at, no_offset);
}

TEST(plan_write, plain_write_is_one_piece) {
  EXPECT_EQ(show(plan_write(100, cut_of(0, 0, no_offset))), "[0,100)");
  EXPECT_EQ(show(plan_write(0, cut_of(0, 0, no_offset))), "");
}

TEST(plan_write, a_dropped_range_is_left_out) {
  EXPECT_EQ(show(plan_write(100, cut_of(10, 30, no_offset))), "[0,10) [30,100)");
  EXPECT_EQ(show(plan_write(100, cut_of(0, 30, no_offset))), "[30,100)");
  EXPECT_EQ(show(plan_write(100, cut_of(60, 100, no_offset))), "[0,60)");
}

TEST(plan_write, the_verdict_is_spliced_in) {
  EXPECT_EQ(show(plan_write(100, cut_of(0, 0, 50))), "[0,50) V [50,100)");
  EXPECT_EQ(show(plan_write(100, cut_of(0, 0, 0))), "V [0,100)");
  EXPECT_EQ(show(plan_write(100, cut_of(0, 0, 100))), "[0,100) V");
}

TEST(plan_write, verdict_and_drop_together) {
  // Usage chunk, then [DONE] right after it: the verdict goes where [DONE] starts.
  EXPECT_EQ(show(plan_write(100, cut_of(10, 30, 30))), "[0,10) V [30,100)");
  // A verdict due inside the dropped range moves to its end.
  EXPECT_EQ(show(plan_write(100, cut_of(10, 30, 20))), "[0,10) V [30,100)");
  EXPECT_EQ(show(plan_write(100, cut_of(10, 30, 10))), "[0,10) V [30,100)");
  // After the drop.
  EXPECT_EQ(show(plan_write(100, cut_of(10, 30, 70))), "[0,10) [30,70) V [70,100)");
  // Before it (never from the relay, whose usage chunk precedes [DONE], but still exact).
  EXPECT_EQ(show(plan_write(100, cut_of(10, 30, 5))), "[0,5) V [5,10) [30,100)");
  // The drop runs to the write's end.
  EXPECT_EQ(show(plan_write(100, cut_of(60, 100, 80))), "[0,60) V");
}

TEST(plan_write, a_redacted_event_replaces_its_bytes) {
  EXPECT_EQ(show(plan_write(100, cut_of(0, 0, no_offset, 40, 70))), "[0,40) R [70,100)");
  EXPECT_EQ(show(plan_write(100, cut_of(0, 0, no_offset, 0, 100))), "R");
  EXPECT_EQ(show(plan_write(100, cut_of(0, 0, no_offset, 60, 100))), "[0,60) R");
  // With the usage chunk dropped before it and the verdict after it ([DONE] follows the error).
  EXPECT_EQ(show(plan_write(100, cut_of(10, 30, 70, 40, 70))), "[0,10) [30,40) R V [70,100)");
  // The usage chunk after it.
  EXPECT_EQ(show(plan_write(100, cut_of(50, 60, no_offset, 20, 40))), "[0,20) R [40,50) [60,100)");
}

TEST(relay_events, one_redaction_per_write) {
  relay_events e;
  EXPECT_TRUE(e.plain_write());
  EXPECT_TRUE(e.redact(10, 20));
  EXPECT_FALSE(e.plain_write());
  EXPECT_FALSE(e.redact(30, 40)) << "a second one in the same write is masked in place instead";
  auto c = e.take_cut();
  EXPECT_EQ(c.redact_from, 10u);
  EXPECT_EQ(c.redact_to, 20u);
  EXPECT_TRUE(e.plain_write());
  EXPECT_TRUE(e.redact(5, 9));
}
