#include "proxy/adapters/anthropic_upstream.hpp"

#include <chrono>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "dialects/anthropic_upstream_request.hpp"
#include "dialects/anthropic_upstream_response.hpp"
#include "dialects/anthropic_upstream_responses_request.hpp"
#include "dialects/anthropic_upstream_responses_response.hpp"
#include "dialects/anthropic_upstream_responses_stream.hpp"
#include "dialects/anthropic_upstream_stream.hpp"
#include "proxy/request_id.hpp"
#include "sse/parser.hpp"
#include "upstream/body_filter.hpp"

namespace sluice::proxy {

namespace json = boost::json;
namespace bhttp = boost::beast::http;

namespace {

constexpr std::string_view chat_path = "/v1/chat/completions";
constexpr std::string_view responses_path = "/v1/responses";

// "Bearer <key>" -> "<key>" (the gateway's key and a pass-through client's are both kept so).
std::string_view token_of(std::string_view authorization) noexcept {
  constexpr std::string_view bearer = "Bearer ";
  if (authorization.size() > bearer.size() && authorization.substr(0, bearer.size()) == bearer)
    return authorization.substr(bearer.size());
  return authorization;
}


// The request's body (chat completions or a Responses request, by `path`) translated once per
// request; every Anthropic upstream of the request gets it (default-max-tokens is the first one's).
std::optional<error> translate_body(upstream_call& call, const routing::upstream_state& u, std::string_view path) {
  if (!call.other_dialect_body.empty()) return std::nullopt;
  error_code ec;
  const json::value chat = json::parse(call.req.body(), ec);
  if (ec || !chat.is_object()) return error::make(errc::bad_request, "The request body is not a JSON object.");
  const dialects::messages_request_options opts{u.spec.default_max_tokens};
  auto messages = path == responses_path ? dialects::messages_request_of_responses(chat.get_object(), opts)
                                         : dialects::messages_request_of(chat.get_object(), opts);
  if (!messages) return std::move(messages).err();
  call.other_dialect_body = json::serialize(*messages);
  // The body now is the injected variant exactly when usage_injected says so.
  const auto* so = chat.get_object().if_contains("stream_options");
  const auto* asked = so && so->is_object() ? so->get_object().if_contains("include_usage") : nullptr;
  call.client_asked_usage = asked && asked->is_bool() && asked->get_bool() && !call.usage_injected;
  return std::nullopt;
}

// A 2xx stream's events in the client's API (`Translator`: dialects::messages_to_chat_stream or
// messages_to_responses_stream), translated as the relay reads them.
template <class Translator>
class translating_filter final : public upstream::body_filter {
 public:
  // `max_event`: one upstream event's bound while it is translated (the relay's own).
  translating_filter(Translator t, std::size_t max_event) : parser_(max_event), stream_(std::move(t)) {}

  void feed(std::string_view in, std::string& out) override {
    if (stream_.finished()) return;  // an error or message_stop ended it: the rest is not the client's
    auto fed = parser_.feed(in, [&](const sse::event_view& ev) { return stream_.on_event(ev.type, ev.data, out); });
    if (!fed) stream_.fail("The upstream sent an event larger than the gateway reads.", out);
  }
  void end(std::string& out) override { stream_.on_end(out); }
  std::size_t held_bytes() const noexcept override { return parser_.pending_bytes(); }

 private:
  sse::parser parser_;
  Translator stream_;
};

dialects::chunk_start_info chunk_info(const request_context& ctx, const upstream_call& call) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return {new_random_id("chatcmpl-"), ctx.model, std::chrono::duration_cast<std::chrono::seconds>(now).count(),
          // Usage is reported when the chat body asks for it, as an OpenAI upstream would.
          call.client_asked_usage || call.usage_injected};
}

dialects::response_start_info response_info(const request_context& ctx) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return {new_random_id("resp_"), ctx.model, std::chrono::duration_cast<std::chrono::seconds>(now).count()};
}

// `max_event`: the relay's stream-buffer, the largest event it takes; a Responses stream keeps no
// more output than that for its response.completed (which must fit it, as any upstream's does).
void set_stream_filter(upstream::response& r, const request_context& ctx, const upstream_call& call,
                       std::size_t max_event) {
  using chat_filter = translating_filter<dialects::messages_to_chat_stream>;
  using responses_filter = translating_filter<dialects::messages_to_responses_stream>;
  if (ctx.path == responses_path)
    r.set_filter(std::make_unique<responses_filter>(
        dialects::messages_to_responses_stream(response_info(ctx), max_event), max_event));
  else r.set_filter(std::make_unique<chat_filter>(dialects::messages_to_chat_stream(chunk_info(ctx, call)), max_event));
}

// A 2xx whole answer in the client's API.
result<json::object> whole_answer(const json::object& message, const request_context& ctx, const upstream_call& call) {
  if (ctx.path == responses_path) return dialects::response_of_message(message, response_info(ctx));
  return dialects::chat_completion_of(message, chunk_info(ctx, call));
}

// The answer's status and body as an OpenAI client expects them; an error when a 2xx whole answer
// cannot be translated.
std::optional<error> translate_answer(exchange& x, const request_context& ctx, const upstream_call& call,
                                      std::size_t max_event) {
  const unsigned upstream_status = x.status;
  x.status = dialects::openai_status_of_messages(upstream_status);
  if (x.is_sse()) {
    set_stream_filter(*x.response, ctx, call, max_event);
    return std::nullopt;
  }
  if (!x.body || (upstream_status / 100 == 2 && ctx.path == count_tokens_path)) return std::nullopt;
  if (upstream_status / 100 != 2) {
    x.body = dialects::openai_error_body_of_messages(upstream_status, *x.body);
    return std::nullopt;
  }
  error_code ec;
  const json::value v = json::parse(*x.body, ec);
  auto completion = !ec && v.is_object() ? whole_answer(v.get_object(), ctx, call)
                                         : result<json::object>(error::make(errc::upstream_protocol, "not JSON"));
  if (!completion)
    return error::make(errc::upstream_protocol,
                       "the Anthropic upstream's answer could not be translated: " + completion.err().message);
  x.body = json::serialize(*completion);
  return std::nullopt;
}

}  // namespace

void set_anthropic_credentials(upstream::request& req, const routing::upstream_state& u, std::string_view authorization) {
  req.erase(bhttp::field::authorization);
  req.erase("openai-organization");
  req.erase("openai-project");
  if (authorization.empty()) req.erase("x-api-key");
  else req.set("x-api-key", token_of(authorization));
  req.set("anthropic-version", u.spec.anthropic_version);
}

void restore_chat_body(upstream_call& call) noexcept {
  if (!call.body_translated) return;
  std::swap(call.req.body(), call.other_dialect_body);
  call.body_translated = false;
  call.req.erase("x-api-key");
  call.req.erase("anthropic-version");
}

std::optional<error> refuse_anthropic_only(const routing::upstream_state& u, std::string_view path) {
  if (path != count_tokens_path) return std::nullopt;
  error e = error::make(errc::not_found, "count_tokens needs the model's tokenizer: the upstream '" + u.spec.name +
                                             "' speaks the OpenAI API, which has none to ask; an upstream of dialect: "
                                             "anthropic serves it.");
  return e;
}

std::optional<error> address_anthropic(upstream_call& call, const routing::upstream_state& u, std::string_view path) {
  if (path == count_tokens_path) {  // the Messages API's own request: only the credential changes
    set_anthropic_credentials(call.req, u, !u.authorization.empty() ? u.authorization : call.client_authorization);
    return std::nullopt;
  }
  if (path != chat_path && path != responses_path)
    return error::make(errc::not_found, "The upstream '" + u.spec.name + "' speaks the Anthropic Messages API; sluice " +
                                            "translates chat completions and Responses requests to it, not " +
                                            std::string(path) + ".");
  if (auto e = translate_body(call, u, path)) return e;
  std::swap(call.req.body(), call.other_dialect_body);
  call.body_translated = true;
  call.req.target(u.target.base_path + "/v1/messages" + (u.target.query.empty() ? "" : "?" + u.target.query));
  set_anthropic_credentials(call.req, u, !u.authorization.empty() ? u.authorization : call.client_authorization);
  return std::nullopt;
}

attempt_outcome adopt_anthropic_answer(exchange& x, const request_context& ctx, const upstream_call& call,
                                       std::size_t max_event, attempt_outcome out) {
  if (auto e = translate_answer(x, ctx, call, max_event)) {
    x.response.reset();
    x.body.reset();
    out.kind = attempt_kind::body_failed;
    out.failure = e->code;
    x.failure = std::move(*e);
  }
  out.status = x.status;
  return out;
}

}  // namespace sluice::proxy
