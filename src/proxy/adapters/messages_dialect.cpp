#include "proxy/adapters/messages_dialect.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "dialects/anthropic_error.hpp"
#include "dialects/anthropic_request.hpp"
#include "dialects/anthropic_response.hpp"
#include "proxy/request_id.hpp"

namespace sluice::proxy {

namespace json = boost::json;

namespace {

constexpr std::string_view messages_path = "/v1/messages";

std::string_view path_of(const http::request& req) noexcept {
  std::string_view target = req.target();
  return target.substr(0, target.find('?'));
}

// The Anthropic SDKs send the key as x-api-key; the pipeline reads Authorization (Bearer). A
// request that sends both is authenticated by its Authorization; x-api-key never goes upstream.
void adopt_credential(http::request& req) {
  auto key = req.find("x-api-key");
  if (key == req.end()) return;
  if (req.find(bhttp::field::authorization) == req.end())
    req.set(bhttp::field::authorization, "Bearer " + std::string(key->value()));
  req.erase("x-api-key");
}

}  // namespace

bool is_messages_request(const http::request& req) noexcept {
  const auto path = path_of(req);
  return path == messages_path || path.starts_with("/v1/messages/");
}

std::optional<error> adopt_messages_request(http::request& req) {
  if (path_of(req) == count_tokens_path) {
    // The Messages API's own request, for an upstream that speaks it (the pipeline refuses it to
    // any other: an OpenAI-compatible upstream has no tokenizer to ask).
    adopt_credential(req);
    return std::nullopt;
  }
  if (path_of(req) != messages_path)
    return error::make(errc::not_found, "Unknown request URL: " + std::string(req.method_string()) + " " +
                                            std::string(path_of(req)) +
                                            ". sluice serves POST /v1/messages and /v1/messages/count_tokens.");
  if (req.method() != bhttp::verb::post)
    return error::make(errc::method_not_allowed,
                       "Method " + std::string(req.method_string()) + " is not allowed on /v1/messages; use POST.");
  boost::system::error_code ec;
  const json::value body = json::parse(req.body(), ec);
  if (ec || !body.is_object()) return error::make(errc::bad_request, "The request body is not a JSON object.");
  auto chat = dialects::chat_request_of(body.get_object());
  if (!chat) return chat.err();
  req.body() = json::serialize(*chat);
  req.target("/v1/chat/completions");
  req.prepare_payload();
  adopt_credential(req);
  return std::nullopt;
}

dialects::message_start_info messages_downstream::start_info() const {
  return {new_random_id("msg_"), ctx_.model, ctx_.prompt_estimate};
}

dialects::chat_to_messages_stream& messages_downstream::stream() {
  if (!stream_) stream_.emplace(start_info());
  return *stream_;
}

void messages_downstream::translate_whole(http::response& res) const {
  const unsigned status = res.result_int();
  res.set(bhttp::field::content_type, "application/json");
  if (status / 100 == 2 && ctx_.which == api::count_tokens) return;  // the upstream's answer, in this dialect
  if (status / 100 != 2) {
    res.body() = dialects::error_body_of_openai(status, res.body());
    // The Messages API says "overloaded" with 529 where the gateway sheds (503).
    if (status == 503) {
      res.result(529);
      res.reason("Overloaded");
    }
    return;
  }
  boost::system::error_code ec;
  const json::value v = json::parse(res.body(), ec);
  auto message = !ec && v.is_object()
                     ? dialects::message_of(v.get_object(), start_info())
                     : result<json::object>(error::make(errc::upstream_protocol, "the upstream's answer is not JSON"));
  if (message) {
    res.body() = json::serialize(*message);
    return;
  }
  res.result(bhttp::status::bad_gateway);
  res.body() = dialects::error_body("api_error", "The upstream's answer could not be translated: " + message.err().message);
}

void messages_downstream::translate(std::string_view data) {
  out_.clear();
  auto& s = stream();
  if (s.finished()) return;  // an error or message_stop ended it: nothing after it is the client's
  auto fed = parser_.feed(data, [&](const sse::event_view& ev) { return s.on_event(ev.data, out_); });
  if (!fed) s.fail("api_error", "The upstream sent an event larger than the gateway reads.", out_);
}

task<result<void>> messages_downstream::write(http::response& res) {
  translate_whole(res);
  res.prepare_payload();
  co_return co_await client_.write(res);
}

task<result<void>> messages_downstream::write_chunk(std::string_view data) {
  translate(data);
  if (out_.empty()) co_return ok;  // nothing yet (an empty chunk would end the body)
  co_return co_await client_.write_chunk(out_);
}

task<result<void>> messages_downstream::write_last_chunk(std::string_view data) {
  translate(data);
  stream().on_end(out_);
  if (out_.empty()) co_return co_await client_.finish_chunks();
  co_return co_await client_.write_last_chunk(out_);
}

task<result<void>> messages_downstream::finish_chunks() { return write_last_chunk({}); }

}  // namespace sluice::proxy
