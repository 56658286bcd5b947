// Secrets never reach the logs: the logging API takes no headers, requests or keys, so a caller
// building log records from a real request has nowhere to put the Authorization value. This test
// plays such a caller with keys planted everywhere a request carries them and searches the output.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <map>
#include <sstream>
#include <type_traits>

#include "observability/log.hpp"
#include "observability/metrics.hpp"

namespace sluice::obs {
namespace {

constexpr std::string_view client_key = "sk-PLANTED7fQ2mZ9xKc4VwR8tLb3NhJ6yPd1G";
constexpr std::string_view upstream_key = "sk-PLANTEDu8Yc2Wq5Xr7Ta1Zm4Hk9Vn3Bf6Gs0E";

// What the gateway holds while serving one request.
struct fake_request {
  std::map<std::string, std::string> headers;
  std::string body;
};
struct fake_upstream {
  std::string name = "openai";
  std::string api_key;
};

// Every window of 8 characters of the key: a partial mask ("sk-PLANT...XYZ") must fail too.
void expect_absent(const std::string& out, std::string_view key) {
  EXPECT_EQ(out.find(key), std::string::npos) << "full key leaked";
  for (std::size_t i = 0; i + 8 <= key.size(); ++i)
    EXPECT_EQ(out.find(key.substr(i, 8)), std::string::npos) << "fragment '" << key.substr(i, 8) << "' leaked";
}

// The API cannot take the things secrets live in.
static_assert(!std::is_invocable_v<decltype(&log_stream_completed), const std::map<std::string, std::string>&>);
static_assert(!std::is_invocable_v<decltype(&log_request_refused), const fake_request&>);
static_assert(!std::is_constructible_v<log_field, std::string_view, const std::map<std::string, std::string>&>);

TEST(secrets, request_and_upstream_keys_never_reach_the_log) {
  std::ostringstream out;
  ASSERT_TRUE(init_logging({"trace", "json"}, std::make_shared<spdlog::sinks::ostream_sink_mt>(out)));

  fake_request req;
  req.headers = {{"authorization", "Bearer " + std::string(client_key)},
                 {"x-api-key", std::string(client_key)},
                 {"x-request-id", "req-42"},
                 {"user-agent", "OpenAI/Python 1.30"},
                 {"content-type", "application/json"}};
  req.body = R"({"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]})";
  fake_upstream up{"openai", std::string(upstream_key)};

  // Everything a caller can plausibly log about this request, taken from the request itself.
  request_record r;
  r.request_id = req.headers.at("x-request-id");
  r.route = to_string(route::chat_completions);
  r.upstream = up.name;
  r.outcome = to_string(outcome::ok);
  r.model = "gpt-4o-mini";
  r.status = 200;
  r.bytes_in = req.body.size();
  log_stream_completed(r);
  log_request_completed(r);
  r.outcome = to_string(outcome::rejected);
  r.reason = to_string(reject_reason::unauthorized);
  r.status = 401;
  log_request_refused(r);
  log_info("upstream chosen", {{"upstream", up.name}, {"user_agent", req.headers.at("user-agent")}});
  log_warn("client key rejected", {{"request_id", r.request_id}, {"route", r.route}});

  // The text format too.
  ASSERT_TRUE(init_logging({"trace", "text"}, std::make_shared<spdlog::sinks::ostream_sink_mt>(out)));
  log_stream_completed(r);
  log_request_refused(r);

  const std::string text = out.str();
  // The logging happened (otherwise absence proves nothing)...
  EXPECT_NE(text.find("req-42"), std::string::npos);
  EXPECT_NE(text.find("gpt-4o-mini"), std::string::npos);
  EXPECT_NE(text.find("unauthorized"), std::string::npos);
  EXPECT_NE(text.find("OpenAI/Python"), std::string::npos);
  // ...and neither key, nor any 8-character piece of one, is in it.
  expect_absent(text, client_key);
  expect_absent(text, upstream_key);
  EXPECT_EQ(text.find("PLANTED"), std::string::npos);
  EXPECT_EQ(text.find("Bearer"), std::string::npos);

  (void)init_logging({"info", "json"}, std::make_shared<spdlog::sinks::null_sink_mt>());
}

// The detector itself must notice a leak, or the test above could pass vacuously.
TEST(secrets, the_leak_check_catches_a_masked_key) {
  const std::string masked = "key=" + std::string(client_key.substr(0, 10)) + "****";
  bool caught = false;
  for (std::size_t i = 0; i + 8 <= client_key.size(); ++i)
    caught = caught || masked.find(client_key.substr(i, 8)) != std::string::npos;
  EXPECT_TRUE(caught);
}

}  // namespace
}  // namespace sluice::obs
