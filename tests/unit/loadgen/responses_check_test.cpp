// The flood checker on Responses API answers (--path /v1/responses): event order, sequence
// numbers, the terminal event with usage, failures in-band; whole answers by status and output.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "loadgen/stream_check.hpp"

using namespace sluice::loadgen;
using namespace std::chrono_literals;

namespace {

std::string ev(const std::string& type, int seq, const std::string& fields = "") {
  std::string data = "{\"type\":\"" + type + "\"";
  if (seq >= 0) data += ",\"sequence_number\":" + std::to_string(seq);
  if (!fields.empty()) data += "," + fields;
  data += "}";
  return "event: " + type + "\ndata: " + data + "\n\n";
}

const std::string usage = R"("usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5})";
const std::string completed_obj = R"("response":{"id":"resp_1","status":"completed","output":[],)" + usage + "}";

// A good stream as a list of events, each with its sequence number in place.
std::vector<std::string> good_events() {
  return {ev("response.created", 0, R"("response":{"status":"in_progress"})"),
          ev("response.in_progress", 1, R"("response":{"status":"in_progress"})"),
          ev("response.output_item.added", 2, R"("output_index":0,"item":{"type":"message"})"),
          ev("response.output_text.delta", 3, R"("delta":"Hel")"),
          ev("response.output_text.delta", 4, R"("delta":"lo")"),
          ev("response.output_text.done", 5, R"("text":"Hello")"),
          ev("response.completed", 6, completed_obj)};
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += e;
  return s;
}

struct responses_check_test : ::testing::Test {
  std::unique_ptr<json_scratch> scratch = std::make_unique<json_scratch>();
  clock::time_point t0 = clock::now();

  verdict run(const std::string& body, bool streaming = true, bool clean = true) {
    c = std::make_unique<stream_check>(streaming, *scratch, nullptr, wire::responses);
    for (std::size_t i = 0; i < body.size(); i += 7)  // odd splits, across event boundaries
      if (!c->feed(std::string_view(body).substr(i, 7), t0 + std::chrono::milliseconds(i))) break;
    return c->finish(clean);
  }
  std::unique_ptr<stream_check> c;
};

}  // namespace

TEST_F(responses_check_test, good_stream_is_ok) {
  EXPECT_EQ(run(join(good_events())), verdict::ok) << c->reason();
  EXPECT_EQ(c->chunks(), 7u);
  EXPECT_TRUE(c->saw_done());
  ASSERT_TRUE(c->first_token());
  EXPECT_GT(*c->first_token(), t0);  // the first delta, not response.created
}

TEST_F(responses_check_test, tool_call_stream_is_ok_and_its_arguments_are_the_first_token) {
  std::vector<std::string> e{ev("response.created", 0, R"("response":{})"),
                             ev("response.output_item.added", 1, R"("item":{"type":"function_call"})"),
                             ev("response.function_call_arguments.delta", 2, R"("delta":"{}")"),
                             ev("response.function_call_arguments.done", 3, R"("arguments":"{}")"),
                             ev("response.completed", 4, completed_obj)};
  EXPECT_EQ(run(join(e)), verdict::ok) << c->reason();
  const std::string head = e[0] + e[1];
  EXPECT_GT(*c->first_token() - t0, std::chrono::milliseconds(head.size()));  // the delta's arrival
}

TEST_F(responses_check_test, missing_completed_is_truncated) {
  auto e = good_events();
  e.pop_back();
  EXPECT_EQ(run(join(e)), verdict::truncated);
  EXPECT_NE(c->reason().find("response.completed"), std::string::npos) << c->reason();
}

TEST_F(responses_check_test, sequence_gap_is_malformed) {
  auto e = good_events();
  e[4] = ev("response.output_text.delta", 5, R"("delta":"lo")");  // 3 then 5
  EXPECT_EQ(run(join(e)), verdict::malformed);
  EXPECT_NE(c->reason().find("sequence_number 5, expected 4"), std::string::npos) << c->reason();
}

TEST_F(responses_check_test, missing_sequence_number_is_malformed) {
  auto e = good_events();
  e[2] = ev("response.output_item.added", -1);
  EXPECT_EQ(run(join(e)), verdict::malformed);
  EXPECT_NE(c->reason().find("without a sequence_number"), std::string::npos) << c->reason();
}

TEST_F(responses_check_test, reordered_events_are_malformed) {
  auto e = good_events();
  std::swap(e[3], e[4]);  // sequence 4 before 3
  EXPECT_EQ(run(join(e)), verdict::malformed);
  // response.created not first, even with numbers that count up from 0.
  std::vector<std::string> late{ev("response.in_progress", 0), ev("response.created", 1),
                                ev("response.completed", 2, completed_obj)};
  EXPECT_EQ(run(join(late)), verdict::malformed);
  EXPECT_NE(c->reason().find("not response.created"), std::string::npos) << c->reason();
  // Anything after response.completed.
  auto after = good_events();
  after.push_back(ev("response.output_text.delta", 7, R"("delta":"x")"));
  EXPECT_EQ(run(join(after)), verdict::malformed);
  EXPECT_NE(c->reason().find("after response.completed"), std::string::npos) << c->reason();
}

TEST_F(responses_check_test, completed_needs_usage_and_status) {
  auto e = good_events();
  e.back() = ev("response.completed", 6, R"("response":{"status":"completed","usage":null})");
  EXPECT_EQ(run(join(e)), verdict::malformed);
  EXPECT_NE(c->reason().find("without usage"), std::string::npos) << c->reason();
  e.back() = ev("response.completed", 6, R"("response":{"status":"in_progress",)" + usage + "}");
  EXPECT_EQ(run(join(e)), verdict::malformed);
}

TEST_F(responses_check_test, incomplete_failed_and_error_are_failures) {
  for (std::string end : {"response.incomplete", "response.failed", "error"}) {
    auto e = good_events();
    e.back() = ev(end, 6, R"("response":{"status":"x"})");
    EXPECT_EQ(run(join(e)), verdict::error_event) << end;
    EXPECT_EQ(c->reason().rfind(end, 0), 0u) << c->reason();
  }
  // An in-band error without a type field (what a gateway sends): still an error event.
  EXPECT_EQ(run(good_events()[0] + "event: error\ndata: {\"error\":{\"message\":\"x\"}}\n\n"), verdict::error_event);
  EXPECT_EQ(run(good_events()[0] + "data: {\"error\":{\"message\":\"x\"}}\n\n"), verdict::error_event);
}

TEST_F(responses_check_test, done_marker_only_after_completed) {
  EXPECT_EQ(run(join(good_events()) + "data: [DONE]\n\n"), verdict::ok) << c->reason();
  EXPECT_EQ(run(good_events()[0] + "data: [DONE]\n\n"), verdict::malformed);
}

TEST_F(responses_check_test, body_cut_after_completed_is_truncated) {
  EXPECT_EQ(run(join(good_events()), true, false), verdict::truncated);
}

TEST_F(responses_check_test, whole_answers) {
  EXPECT_EQ(run(R"({"id":"resp_1","object":"response","status":"completed","error":null,"output":[{"type":"message"}]})",
                false),
            verdict::ok)
      << c->reason();
  EXPECT_EQ(run(R"({"status":"incomplete","error":null,"output":[]})", false), verdict::error_event);
  EXPECT_EQ(run(R"({"status":"completed","error":{"message":"x"},"output":[]})", false), verdict::error_event);
  EXPECT_EQ(run(R"({"status":"completed","error":null})", false), verdict::malformed);
  EXPECT_EQ(run(R"({"choices":[]})", false), verdict::malformed);
  EXPECT_EQ(run(R"({"status":"completed","output":[])", false), verdict::malformed);  // cut JSON
}
