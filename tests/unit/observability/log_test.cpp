#include "observability/log.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <map>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "config/option_table.hpp"

namespace sluice::obs {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Captures everything logged while it lives; restores a silent logger afterwards.
class captured_log {
 public:
  explicit captured_log(std::string format = "json", std::string level = "info") {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    const auto r = init_logging({std::move(level), std::move(format)}, sink);
    EXPECT_TRUE(r);
  }
  ~captured_log() { (void)init_logging({"info", "json"}, std::make_shared<spdlog::sinks::null_sink_mt>()); }
  std::string text() const { return out_.str(); }
  std::vector<std::string> lines() const { return lines_of(out_.str()); }

 private:
  std::ostringstream out_;
};

boost::json::object parse_line(const std::string& line) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(line, ec);
  EXPECT_FALSE(ec) << ec.message() << " in: " << line;
  if (ec || !v.is_object()) return {};
  return v.as_object();
}

// RFC 3339, UTC, milliseconds: 2025-03-14T09:26:53.589Z. (No std::regex: GCC 12 warns inside
// <regex> under the sanitizers, and the shape is simple enough to check by hand.)
bool is_rfc3339_ms_utc(std::string_view t) {
  constexpr std::string_view shape = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (t.size() != shape.size()) return false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (shape[i] == 'd' ? (t[i] < '0' || t[i] > '9') : t[i] != shape[i]) return false;
  }
  const int month = (t[5] - '0') * 10 + (t[6] - '0'), day = (t[8] - '0') * 10 + (t[9] - '0');
  const int hour = (t[11] - '0') * 10 + (t[12] - '0'), minute = (t[14] - '0') * 10 + (t[15] - '0');
  return month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour < 24 && minute < 60;
}

request_record sample_record() {
  request_record r;
  r.request_id = "req-7f3a";
  r.route = "chat_completions";
  r.upstream = "openai";
  r.outcome = "ok";
  r.model = "gpt-4o-mini";
  r.status = 200;
  r.ttft_ms = 312.4567;
  r.duration_ms = 2048.25;
  r.overhead_ms = 0.8;
  r.tokens_in = 17;
  r.tokens_out = 256;
  r.bytes_in = 512;
  r.bytes_out = 40960;
  return r;
}

TEST(log, stream_completed_is_one_valid_json_object_per_line) {
  captured_log cap;
  log_stream_completed(sample_record());
  const auto lines = cap.lines();
  ASSERT_EQ(lines.size(), 1u);
  const auto o = parse_line(lines[0]);
  ASSERT_TRUE(o.contains("ts"));
  EXPECT_TRUE(is_rfc3339_ms_utc(o.at("ts").as_string())) << o.at("ts");
  EXPECT_EQ(o.at("level").as_string(), "info");
  EXPECT_EQ(o.at("msg").as_string(), "stream completed");
  EXPECT_EQ(o.at("request_id").as_string(), "req-7f3a");
  EXPECT_EQ(o.at("route").as_string(), "chat_completions");
  EXPECT_EQ(o.at("upstream").as_string(), "openai");
  EXPECT_EQ(o.at("outcome").as_string(), "ok");
  EXPECT_EQ(o.at("model").as_string(), "gpt-4o-mini");
  EXPECT_EQ(o.at("status").as_int64(), 200);
  EXPECT_DOUBLE_EQ(o.at("ttft_ms").as_double(), 312.457);  // rounded to the microsecond
  EXPECT_DOUBLE_EQ(o.at("duration_ms").as_double(), 2048.25);
  EXPECT_DOUBLE_EQ(o.at("overhead_ms").as_double(), 0.8);
  EXPECT_EQ(o.at("tokens_in").to_number<std::uint64_t>(), 17u);
  EXPECT_EQ(o.at("tokens_out").to_number<std::uint64_t>(), 256u);
  EXPECT_EQ(o.at("bytes_in").to_number<std::uint64_t>(), 512u);
  EXPECT_EQ(o.at("bytes_out").to_number<std::uint64_t>(), 40960u);
}

TEST(log, request_completed_and_refused_carry_their_own_fields) {
  captured_log cap;
  auto r = sample_record();
  log_request_completed(r);
  r.status = 503;
  r.outcome = "rejected";
  r.reason = "queue_full";
  log_request_refused(r);
  const auto lines = cap.lines();
  ASSERT_EQ(lines.size(), 2u);
  const auto done = parse_line(lines[0]);
  EXPECT_EQ(done.at("msg").as_string(), "request completed");
  EXPECT_FALSE(done.contains("ttft_ms"));  // not a stream
  EXPECT_EQ(done.at("tokens_out").to_number<std::uint64_t>(), 256u);
  const auto refused = parse_line(lines[1]);
  EXPECT_EQ(refused.at("msg").as_string(), "request refused");
  EXPECT_EQ(refused.at("status").as_int64(), 503);
  EXPECT_EQ(refused.at("reason").as_string(), "queue_full");
  EXPECT_EQ(refused.at("outcome").as_string(), "rejected");
  EXPECT_FALSE(refused.contains("tokens_out"));
}

TEST(log, hostile_values_stay_inside_one_valid_line) {
  captured_log cap;
  request_record r = sample_record();
  // Request ids come from a header: quotes, backslashes, newlines, controls, invalid UTF-8.
  const std::string id = std::string("a\"b\\c\nd\re\tf") + '\x01' + '\x7f' + "\xff\xfe" + "\xc3\x28" + "\xed\xa0\x80" +
                         "\xf4\x90\x80\x80" + "é€😀" + "\"}, \"level\":\"error";
  r.request_id = id;
  r.model = "{\"inject\":true}\n{\"msg\":\"forged\"}";
  log_stream_completed(r);
  log_info("free text\nwith newline", {{"msg", "shadow"}, {"ts", 1}, {"odd key", "x"}});
  const auto lines = cap.lines();
  ASSERT_EQ(lines.size(), 2u);
  const auto o = parse_line(lines[0]);
  EXPECT_EQ(o.at("level").as_string(), "info");
  const std::string got(o.at("request_id").as_string());
  // Valid text survives byte for byte; each invalid byte became U+FFFD.
  EXPECT_EQ(got.substr(0, 13), std::string("a\"b\\c\nd\re\tf") + '\x01' + '\x7f');
  EXPECT_NE(got.find("é€😀"), std::string::npos);
  EXPECT_NE(got.find("\xef\xbf\xbd"), std::string::npos);
  EXPECT_EQ(got.find('\xff'), std::string::npos);
  EXPECT_EQ(o.at("model").as_string(), "{\"inject\":true}\n{\"msg\":\"forged\"}");
  const auto o2 = parse_line(lines[1]);
  EXPECT_EQ(o2.at("msg").as_string(), "free text\nwith newline");
  EXPECT_EQ(o2.at("_msg").as_string(), "shadow");  // a field may not overwrite a built-in key
  EXPECT_EQ(o2.at("_ts").as_int64(), 1);
  EXPECT_EQ(o2.at("odd key").as_string(), "x");
}

TEST(log, text_format_is_logfmt_with_quoting) {
  captured_log cap("text");
  auto r = sample_record();
  r.model = "my model=\"x\"\nnext";
  log_stream_completed(r);
  log_warn("careful", {{"odd key", "v"}, {"empty", ""}, {"flag", true}, {"n", -3}});
  const auto lines = cap.lines();
  ASSERT_EQ(lines.size(), 2u);
  ASSERT_TRUE(lines[0].starts_with("ts=")) << lines[0];
  EXPECT_TRUE(is_rfc3339_ms_utc(std::string_view(lines[0]).substr(3, 24))) << lines[0];
  const std::string head = " level=info msg=\"stream completed\" request_id=req-7f3a ";
  EXPECT_EQ(lines[0].substr(27, head.size()), head) << lines[0];
  EXPECT_NE(lines[0].find(" model=\"my model=\\\"x\\\"\\nnext\" "), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(" status=200 "), std::string::npos);
  EXPECT_NE(lines[0].find(" ttft_ms=312.457 "), std::string::npos);
  EXPECT_EQ(lines[1].substr(lines[1].find(" level=")), " level=warn msg=careful odd_key=v empty=\"\" flag=true n=-3");
}

TEST(log, level_filters_and_off_silences) {
  {
    captured_log cap("json", "warn");
    EXPECT_FALSE(log_enabled(log_level::info));
    EXPECT_TRUE(log_enabled(log_level::error));
    log_info("hidden");
    log_stream_completed(sample_record());
    log_error("shown", {{"code", 7u}});
    const auto lines = cap.lines();
    ASSERT_EQ(lines.size(), 1u);
    const auto o = parse_line(lines[0]);
    EXPECT_EQ(o.at("level").as_string(), "error");
    EXPECT_EQ(o.at("code").to_number<std::uint64_t>(), 7u);
  }
  {
    captured_log cap("json", "off");
    log_error("nothing");
    EXPECT_EQ(cap.text(), "");
  }
  {
    captured_log cap("json", "debug");
    log_debug("dbg", {{"ratio", 0.25}, {"nan", std::numeric_limits<double>::quiet_NaN()}});
    const auto o = parse_line(cap.lines().at(0));
    EXPECT_EQ(o.at("level").as_string(), "debug");
    EXPECT_DOUBLE_EQ(o.at("ratio").as_double(), 0.25);
    EXPECT_TRUE(o.at("nan").is_null());  // JSON has no NaN
  }
}

TEST(log, plain_spdlog_calls_come_out_in_the_same_format) {
  captured_log cap;
  spdlog::warn("listening on {} with \"quotes\"\n", "127.0.0.1:8080");
  spdlog::info("second");
  const auto lines = cap.lines();
  ASSERT_EQ(lines.size(), 2u);
  const auto o = parse_line(lines[0]);
  EXPECT_EQ(o.at("level").as_string(), "warn");
  EXPECT_EQ(o.at("msg").as_string(), "listening on 127.0.0.1:8080 with \"quotes\"\n");
  EXPECT_TRUE(is_rfc3339_ms_utc(o.at("ts").as_string()));
  EXPECT_EQ(parse_line(lines[1]).at("msg").as_string(), "second");
}

TEST(log, init_logging_rejects_bad_values_naming_the_option) {
  auto sink = std::make_shared<spdlog::sinks::null_sink_mt>();
  auto bad_level = init_logging({"verbose", "json"}, sink);
  ASSERT_FALSE(bad_level);
  EXPECT_NE(bad_level.err().message.find("--log-level"), std::string::npos);
  EXPECT_NE(bad_level.err().message.find("verbose"), std::string::npos);
  EXPECT_EQ(bad_level.err().param, "log-level");
  auto bad_format = init_logging({"info", "xml"}, sink);
  ASSERT_FALSE(bad_format);
  EXPECT_NE(bad_format.err().message.find("--log-format"), std::string::npos);
  for (auto level : {"trace", "debug", "info", "warn", "error", "off"})
    EXPECT_TRUE(init_logging({level, "text"}, sink)) << level;
}

TEST(log, options_register_in_the_option_table_and_validate_on_set) {
  log_options o;
  config::option_table t;
  o.register_options(t);
  ASSERT_TRUE(t.apply_yaml_text("log-level: debug\nlog-format: text\n"));
  EXPECT_EQ(o.level, "debug");
  EXPECT_EQ(o.format, "text");
  const auto bad = t.apply_yaml_text("log-level: loud\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.err().message.find("log-level"), std::string::npos);
  EXPECT_EQ(o.level, "debug");  // unchanged on error
  EXPECT_FALSE(t.apply_yaml_text("log-format: xml\n"));
  EXPECT_EQ(o.format, "text");
}

TEST(log, format_log_line_matches_what_is_logged) {
  const log_field fields[] = {{"a", 1}, {"b", "two"}};
  const auto o = parse_line(format_log_line(true, log_level::warn, "m", fields));
  EXPECT_EQ(o.at("level").as_string(), "warn");
  EXPECT_EQ(o.at("a").as_int64(), 1);
  EXPECT_EQ(o.at("b").as_string(), "two");
  EXPECT_EQ(o.size(), 5u);
}

TEST(log, emits_valid_lines_from_many_threads_without_interleaving) {
  captured_log cap;
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([t] {
      for (int i = 0; i < 200; ++i) log_info("tick", {{"thread", t}, {"i", i}});
    });
  for (auto& th : pool) th.join();
  const auto lines = cap.lines();
  ASSERT_EQ(lines.size(), 800u);
  std::map<std::int64_t, int> per_thread;
  for (const auto& l : lines) ++per_thread[parse_line(l).at("thread").as_int64()];
  for (int t = 0; t < 4; ++t) EXPECT_EQ(per_thread[t], 200);
}

}  // namespace
}  // namespace sluice::obs
