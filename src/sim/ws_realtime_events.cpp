#include "sim/ws_realtime_events.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <array>

#include "sim/bytes.hpp"

namespace sluice::sim {
namespace {

namespace json = boost::json;

// The words a Realtime response says (the HTTP routes' lists are their own).
constexpr std::array<std::string_view, 24> realtime_words{
    "sure",  "here", "is",  "the",   "answer", "you", "asked", "for", "it",    "looks", "like", "a",
    "quick", "test", "of",  "voice", "and",    "text", "over", "one", "socket", "that", "works", "fine"};

// Types and field values quoted in an error message are cut to this many bytes.
constexpr std::size_t quoted_bytes = 64;

constexpr std::string_view known_types =
    "'session.update', 'conversation.item.create', 'input_audio_buffer.append', 'input_audio_buffer.commit', "
    "'input_audio_buffer.clear', 'response.create', 'sim.echo'";

// A fresh id: the prefix and 16 hex digits hashed from the session's key and its id counter. For one
// key the hash is a bijection of the counter, so a session never repeats an id.
std::string next_id(realtime_state& s, std::string_view prefix) {
  ++s.ids;
  return std::string(prefix) + hex_digits(mix64(s.config.key ^ (s.ids * 0xd6e8feb86659fd93ull)), 16);
}

// At most `max` bytes of a UTF-8 string, never cut inside a character.
std::string_view quoted(std::string_view text, std::size_t max = quoted_bytes) {
  if (text.size() <= max) return text;
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xc0) == 0x80) --n;
  return text.substr(0, n);
}

std::string_view word_of(const realtime_response& r, std::uint64_t i) {
  return realtime_words[mix64(r.seed_of_words ^ (i * 0x9e3779b97f4a7c15ull)) % realtime_words.size()];
}

// One client event being answered: what it said, and where the replies go.
struct realtime_call {
  const json::object& event;
  std::string_view text;
  realtime_state& s;
  std::vector<std::string>& out;

  json::value client_event_id() const {
    const auto* id = event.if_contains("event_id");
    return id && id->is_string() ? *id : json::value(nullptr);
  }
  void send(json::object o) { out.push_back(json::serialize(o)); }
  // {"type","event_id"} and then the fields of `o`.
  void send_event(std::string_view type, json::object o) {
    json::object e{{"type", type}, {"event_id", next_id(s, "event_")}};
    for (auto& [k, v] : o) e[k] = std::move(v);
    send(std::move(e));
  }
  void fail(std::string_view code, std::string message, std::string_view param = {}) {
    send_event("error", {{"error", json::object{{"type", "invalid_request_error"},
                                                {"code", code},
                                                {"message", message},
                                                {"param", param.empty() ? json::value(nullptr) : json::value(param)},
                                                {"event_id", client_event_id()}}}});
  }
  // The member `name` when it is an object; fails naming it otherwise (absent: when `required`).
  const json::object* object_member(std::string_view name, bool required) {
    const auto* v = event.if_contains(name);
    if (v && v->is_object()) return &v->get_object();
    if (!v && !required) return nullptr;
    if (!v) fail("missing_required_parameter", "Missing required parameter: '" + std::string(name) + "'.", name);
    else fail("invalid_type", "Invalid type for '" + std::string(name) + "': expected an object.", name);
    return nullptr;
  }
};

void on_session_update(realtime_call& c) {
  const auto* update = c.object_member("session", true);
  if (!update) return;
  std::size_t added = 0;
  for (const auto& [k, v] : *update) added += c.s.session.contains(k) ? 0 : 1;
  if (c.s.session.size() + added > realtime_max_session_fields)
    return c.fail("invalid_value", "A session holds at most " + std::to_string(realtime_max_session_fields) + " fields.",
                  "session");
  // Shallow: a field given replaces the whole field; the session's id and object stay.
  for (const auto& [k, v] : *update)
    if (k != "id" && k != "object") c.s.session[k] = v;
  c.send_event("session.updated", {{"session", c.s.session}});
}

void on_item_create(realtime_call& c) {
  const auto* given = c.object_member("item", true);
  if (!given) return;
  json::object item = *given;
  if (const auto* id = item.if_contains("id"); id && !id->is_string())
    return c.fail("invalid_type", "Invalid type for 'item.id': expected a string.", "item.id");
  if (!item.contains("id")) item["id"] = next_id(c.s, "item_");
  json::value previous = c.s.last_item_id.empty() ? json::value(nullptr) : json::value(c.s.last_item_id);
  if (const auto* p = c.event.if_contains("previous_item_id"); p && p->is_string()) previous = *p;
  c.s.last_item_id = item.at("id").get_string();
  const std::string item_json = json::serialize(item);
  c.s.item_bytes += item_json.size();
  c.send_event("conversation.item.created", {{"previous_item_id", std::move(previous)}, {"item", std::move(item)}});
}

void on_audio_append(realtime_call& c) {
  const auto* audio = c.event.if_contains("audio");
  if (!audio || !audio->is_string())
    return c.fail(audio ? "invalid_type" : "missing_required_parameter",
                  audio ? "Invalid type for 'audio': expected a base64 string." : "Missing required parameter: 'audio'.",
                  "audio");
  const auto bytes = base64_decoded_size(audio->get_string());
  if (!bytes) return c.fail("invalid_value", "Invalid 'audio'. Expected base64-encoded audio bytes.", "audio");
  c.s.audio_buffered += *bytes;
  c.s.audio_bytes += *bytes;
}

void on_audio_commit(realtime_call& c) {
  json::value previous = c.s.last_item_id.empty() ? json::value(nullptr) : json::value(c.s.last_item_id);
  c.s.last_item_id = next_id(c.s, "item_");
  c.s.audio_committed += c.s.audio_buffered;
  c.s.audio_buffered = 0;
  c.send_event("input_audio_buffer.committed", {{"previous_item_id", std::move(previous)}, {"item_id", c.s.last_item_id}});
}

void on_audio_clear(realtime_call& c) {
  c.s.audio_buffered = 0;
  c.send_event("input_audio_buffer.cleared", {});
}

// A cap on output tokens: a positive integer, or "inf" (none). Nothing when `v` is neither.
std::optional<std::uint64_t> token_cap(const json::value& v) {
  if (v.is_string() && v.get_string() == "inf") return UINT64_MAX;
  if (v.is_int64() && v.get_int64() > 0) return static_cast<std::uint64_t>(v.get_int64());
  if (v.is_uint64() && v.get_uint64() > 0) return v.get_uint64();
  return std::nullopt;
}

void on_response_create(realtime_call& c) {
  if (c.s.response)
    return c.fail("conversation_already_has_active_response",
                  "Conversation already has an active response in progress: " + c.s.response->id + ".");
  const auto* options = c.object_member("response", false);
  if (!options && c.event.contains("response")) return;
  std::uint64_t cap = UINT64_MAX;
  if (const auto* m = c.s.session.if_contains("max_response_output_tokens"); m && token_cap(*m)) cap = *token_cap(*m);
  if (const auto* m = options ? options->if_contains("max_output_tokens") : nullptr) {
    if (!token_cap(*m))
      return c.fail("invalid_value", "Invalid 'response.max_output_tokens': a positive integer or 'inf'.",
                    "response.max_output_tokens");
    cap = *token_cap(*m);
  }
  realtime_response r;
  r.id = next_id(c.s, "resp_");
  r.item_id = next_id(c.s, "item_");
  r.seed_of_words = mix64(c.s.config.key ^ mix64(c.s.ids));
  r.words = std::min(c.s.config.tokens, cap);
  r.cut = cap < c.s.config.tokens;
  r.input_tokens = (c.s.item_bytes + 3) / 4 + c.s.audio_committed / 1024;
  c.s.last_item_id = r.item_id;
  c.send_event("response.created", {{"response", json::object{{"id", r.id},
                                                              {"object", "realtime.response"},
                                                              {"status", "in_progress"},
                                                              {"status_details", nullptr},
                                                              {"output", json::array{}},
                                                              {"usage", nullptr}}}});
  c.s.response = std::move(r);
}

void on_echo(realtime_call& c) { c.out.emplace_back(c.text); }

using realtime_handler = void (*)(realtime_call&);
struct realtime_route {
  std::string_view type;
  realtime_handler handle;
};
constexpr std::array<realtime_route, 7> realtime_routes{{{"session.update", on_session_update},
                                                         {"conversation.item.create", on_item_create},
                                                         {"input_audio_buffer.append", on_audio_append},
                                                         {"input_audio_buffer.commit", on_audio_commit},
                                                         {"input_audio_buffer.clear", on_audio_clear},
                                                         {"response.create", on_response_create},
                                                         {"sim.echo", on_echo}}};

// The words of r from the first, joined as the deltas carried them.
std::string response_text(const realtime_response& r) {
  std::string text;
  for (std::uint64_t i = 0; i < r.words; ++i) (text += word_of(r, i)) += ' ';
  return text;
}

std::string response_done(realtime_state& s, const realtime_response& r) {
  const std::string_view status = r.cut ? "incomplete" : "completed";
  const json::value details = r.cut ? json::value(json::object{{"type", "incomplete"}, {"reason", "max_output_tokens"}})
                                    : json::value(nullptr);
  json::object item{{"id", r.item_id},     {"object", "realtime.item"}, {"type", "message"},
                    {"role", "assistant"}, {"status", status},
                    {"content", json::array{json::object{{"type", "text"}, {"text", response_text(r)}}}}};
  json::object usage{{"total_tokens", r.input_tokens + r.words},
                     {"input_tokens", r.input_tokens},
                     {"output_tokens", r.words}};
  json::object done{{"type", "response.done"}, {"event_id", next_id(s, "event_")}};
  done["response"] = json::object{{"id", r.id},
                                  {"object", "realtime.response"},
                                  {"status", status},
                                  {"status_details", details},
                                  {"output", json::array{std::move(item)}},
                                  {"usage", std::move(usage)}};
  return json::serialize(done);
}

// The fields every text event of a response carries after its type and event id.
std::string text_event(realtime_state& s, const realtime_response& r, std::string_view type) {
  // Ids and words are plain ASCII: written directly, as the JSON they are.
  std::string e = "{\"type\":\"";
  e.append(type).append("\",\"event_id\":\"").append(next_id(s, "event_"));
  e.append("\",\"response_id\":\"").append(r.id).append("\",\"item_id\":\"").append(r.item_id);
  e.append("\",\"output_index\":0,\"content_index\":0,");
  return e;
}

}  // namespace

std::uint64_t realtime_key(std::uint64_t seed, std::size_t worker, std::uint64_t number) noexcept {
  return mix64(mix64(seed) ^ mix64((static_cast<std::uint64_t>(worker) << 40) ^ number));
}

realtime_state::realtime_state(realtime_config c) : config(std::move(c)) {
  session = json::object{{"id", "sess_" + hex_digits(mix64(config.key), 16)},
                         {"object", "realtime.session"},
                         {"model", config.model},
                         {"modalities", json::array{"text", "audio"}},
                         {"voice", "alloy"},
                         {"instructions", ""}};
}

std::string realtime_session_created(realtime_state& s) {
  return json::serialize(json::object{{"type", "session.created"}, {"event_id", next_id(s, "event_")}, {"session", s.session}});
}

std::vector<std::string> realtime_replies(std::string_view text, realtime_state& s) {
  std::vector<std::string> out;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  static const json::object no_fields;
  const json::object& event = !ec && v.is_object() ? v.get_object() : no_fields;
  realtime_call c{event, text, s, out};
  const auto* type = event.if_contains("type");
  if (!type || !type->is_string()) {
    c.fail("invalid_json", ec ? "The event is not valid JSON: " + ec.message() + "."
                              : "An event is a JSON object with a string 'type'.");
    return out;
  }
  for (const auto& r : realtime_routes)
    if (r.type == type->get_string()) {
      r.handle(c);
      return out;
    }
  c.fail("unknown_event", "Invalid value: '" + std::string(quoted(type->get_string())) + "'. Supported values are: " +
                              std::string(known_types) + ".",
         "type");
  return out;
}

std::optional<realtime_event> realtime_next_response_event(realtime_state& s) {
  if (!s.response) return std::nullopt;
  realtime_response& r = *s.response;
  if (r.sent < r.words) {
    std::string e = text_event(s, r, "response.output_text.delta");
    e.append("\"delta\":\"").append(word_of(r, r.sent++)).append(" \"}");
    return realtime_event{std::move(e), true};
  }
  if (!r.text_done) {
    r.text_done = true;
    std::string e = text_event(s, r, "response.output_text.done");
    e.append("\"text\":\"").append(response_text(r)).append("\"}");
    return realtime_event{std::move(e), false};
  }
  realtime_event done{response_done(s, r), false};
  s.response.reset();
  return done;
}

std::optional<std::uint64_t> base64_decoded_size(std::string_view text) noexcept {
  std::size_t pad = 0;
  while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=') ++pad;
  const std::string_view body = text.substr(0, text.size() - pad);
  for (char ch : body) {
    const bool alnum = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
    if (!alnum && ch != '+' && ch != '/') return std::nullopt;
  }
  // Padding completes a group of four; without it the last group holds 2 or 3 characters (or none).
  if (pad > 0 && text.size() % 4 != 0) return std::nullopt;
  if (body.size() % 4 == 1) return std::nullopt;
  return body.size() / 4 * 3 + (body.size() % 4 == 0 ? 0 : body.size() % 4 - 1);
}

}  // namespace sluice::sim
