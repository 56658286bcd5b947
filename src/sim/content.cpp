#include "sim/content.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>

#include "core/json_text.hpp"
#include "sse/parser.hpp"

namespace sluice::sim {
namespace {

namespace json = boost::json;

constexpr std::array<std::string_view, 32> words{
    "the",   "river", "gate",  "flows",  "under", "quiet", "stone", "light", "water", "moves", "past",
    "a",     "mill",  "and",   "every",  "drop",  "finds", "its",   "way",   "down",  "into",  "wide",
    "calm",  "sea",   "while", "bright", "banks", "hold",  "steady", "lines", "of",   "reeds"};

constexpr std::string_view alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

void append_json_string(std::string& out, std::string_view s) { out += json::serialize(json::string_view(s.data(), s.size())); }

std::uint64_t splitmix(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

void append_uint(std::string& out, std::uint64_t v) {
  char buf[24];
  int n = std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
  out.append(buf, static_cast<std::size_t>(n));
}

generator::generator(const completion_request& req, std::uint64_t tokens, std::uint64_t token_size,
                     std::uint32_t choice)
    : kind_(req.kind),
      include_usage_(req.include_usage),
      cut_(req.max_tokens && *req.max_tokens < tokens),
      choice_(choice),
      count_(cut_ ? *req.max_tokens : tokens),
      token_size_(token_size),
      prompt_tokens_(req.prompt_tokens),
      created_(0),
      state_(choice == 0 ? req.hash : req.hash ^ (0x9e3779b97f4a7c15ull * choice)),
      usage_tokens_(count_),
      start_state_(state_) {
  // Ids and `created` come from the request hash, never a counter or the clock, so that repeated
  // identical requests are byte-identical.
  std::uint64_t idstate = req.hash ^ 0x1d1d1d1dull;
  id_ = kind_ == api::chat ? "chatcmpl-" : kind_ == api::responses ? "resp_" : kind_ == api::messages ? "msg_" : "cmpl-";
  for (int i = 0; i < 24; ++i) id_.push_back(alphabet[splitmix(idstate) % alphabet.size()]);
  created_ = 1'700'000'000 + splitmix(idstate) % 50'000'000;
  if (kind_ != api::completion && !req.tool_call.empty()) {
    tool_name_ = req.tool_call;  // checked by valid_function_name: JSON-safe as it is
    std::uint64_t callstate = idstate ^ (0x5bd1e995ull * (choice + 1));
    call_id_ = kind_ == api::messages ? "toolu_" : "call_";
    for (int i = 0; i < 24; ++i) call_id_.push_back(alphabet[splitmix(callstate) % alphabet.size()]);
  }

  head_ = "{\"id\":\"" + id_ + "\",\"object\":\"";
  head_ += kind_ == api::chat ? "chat.completion.chunk" : "text_completion";
  head_ += "\",\"created\":";
  append_uint(head_, created_);
  head_ += ",\"model\":";
  append_json_string(head_, req.model);
  head_ += kind_ == api::chat ? ",\"system_fingerprint\":\"fp_sim\"," : ",";
}

std::uint64_t generator::next() noexcept { return splitmix(state_); }

void generator::append_token_text(std::string& out) {
  if (content_) {
    const std::string& t = *content_;
    std::size_t end = std::min(t.size(), content_pos_ + static_cast<std::size_t>(token_size_));
    while (end < t.size() && (static_cast<unsigned char>(t[end]) & 0xC0) == 0x80) ++end;  // keep UTF-8 whole
    std::string quoted = json::serialize(json::string_view(t.data() + content_pos_, end - content_pos_));
    out.append(quoted, 1, quoted.size() - 2);
    content_pos_ = end;
    return;
  }
  // Words (cut to fit) each followed by a space, so a stream reads as text at any token size.
  std::uint64_t left = token_size_;
  while (left > 0) {
    auto w = words[next() % words.size()];
    if (left == 1) {
      out.push_back(w[0]);
      break;
    }
    std::uint64_t take = std::min<std::uint64_t>(w.size(), left - 1);
    out.append(w.substr(0, take));
    out.push_back(' ');
    left -= take + 1;
  }
}

void generator::append_chunk_open(std::string& j) const {
  j.assign(head_);
  j += "\"choices\":[{\"index\":";
  append_uint(j, choice_);
  j += ',';
}

void generator::append_chunk_close(std::string& j, std::string_view finish) const {
  j += ",\"logprobs\":null,\"finish_reason\":";
  if (finish.empty()) {
    j += "null";
  } else {
    j += '"';
    j += finish;
    j += '"';
  }
  j += "}]";
  if (include_usage_) j += ",\"usage\":null";  // OpenAI sends usage:null on every chunk but the last
  j += '}';
}

void generator::append_role_chunk(std::string& out) {
  if (kind_ == api::messages) return append_message_open(out);
  if (kind_ == api::responses) return append_response_open(out);
  append_chunk_open(json_);
  if (calls_tool()) {
    json_ += "\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"";
    json_ += call_id_;
    json_ += "\",\"type\":\"function\",\"function\":{\"name\":\"";
    json_ += tool_name_;
    json_ += "\",\"arguments\":\"\"}}],\"refusal\":null}";
  } else {
    json_ += "\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null}";
  }
  append_chunk_close(json_, {});
  sse::append_event(out, json_);
}

void generator::append_token_chunk(std::string& out) {
  if (kind_ == api::messages) return append_message_delta(out);
  if (kind_ == api::responses) return append_response_delta(out);
  append_chunk_open(json_);
  if (calls_tool()) {  // an argument piece
    json_ += "\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"";
    append_token_text(json_);
    json_ += "\"}}]}";
    append_chunk_close(json_, {});
    sse::append_event(out, json_);
    return;
  }
  json_ += kind_ == api::chat ? "\"delta\":{\"content\":\"" : "\"text\":\"";
  append_token_text(json_);
  json_ += kind_ == api::chat ? "\"}" : "\"";
  append_chunk_close(json_, {});
  sse::append_event(out, json_);
}

void generator::append_finish_chunk(std::string& out) {
  if (kind_ == api::messages) return append_message_close(out);
  if (kind_ == api::responses) return append_response_close(out);
  append_chunk_open(json_);
  json_ += kind_ == api::chat ? "\"delta\":{}" : "\"text\":\"\"";
  append_chunk_close(json_, finish_reason());
  sse::append_event(out, json_);
}

void generator::append_usage_object(std::string& j) const {
  j += "\"usage\":{\"prompt_tokens\":";
  append_uint(j, prompt_tokens_);
  j += ",\"completion_tokens\":";
  append_uint(j, usage_tokens_);
  j += ",\"total_tokens\":";
  append_uint(j, prompt_tokens_ + usage_tokens_);
  j += '}';
}

void generator::append_usage_chunk(std::string& out) {
  json_.assign(head_);
  json_ += "\"choices\":[],";
  append_usage_object(json_);
  json_ += '}';
  sse::append_event(out, json_);
}

void generator::append_malformed_event(std::string& out) {
  if (kind_ == api::messages) return append_message_error(out);
  // Truncated JSON: what a broken upstream or a cut proxy buffer looks like to a gateway.
  json_.assign(head_);
  json_ += "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"sim-malformed";
  sse::append_event(out, json_);
}

void generator::append_done(std::string& out) { sse::append_event(out, "[DONE]"); }

std::string generator::full_text() const {
  generator replay = *this;
  replay.state_ = start_state_;
  replay.content_pos_ = 0;
  std::string text;
  for (std::uint64_t i = 0; i < count_; ++i) replay.append_token_text(text);
  return text;
}

std::string generator::body() {
  if (kind_ == api::responses) return response_body();
  if (kind_ == api::messages) return message_body();
  return whole_body(std::span<generator>(this, 1));
}

std::string generator::whole_body(std::span<generator> choices) {
  generator& g0 = choices.front();
  std::string j = "{\"id\":\"" + g0.id_ + "\",\"object\":\"";
  j += g0.kind_ == api::chat ? "chat.completion" : "text_completion";
  j += "\",\"created\":";
  append_uint(j, g0.created_);
  j += g0.head_.substr(g0.head_.find(",\"model\":"));
  j += "\"choices\":[";
  std::uint64_t total = 0;
  for (std::size_t c = 0; c < choices.size(); ++c) {
    generator& g = choices[c];
    std::string text;
    text.reserve(g.count_ * g.token_size_);
    for (std::uint64_t i = 0; i < g.count_; ++i) g.append_token_text(text);
    total += g.count_;
    if (c) j += ',';
    if (g.kind_ == api::chat && g.calls_tool()) {
      j += "{\"index\":";
      append_uint(j, g.choice_);
      j += ",\"message\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"";
      j += g.call_id_;
      j += "\",\"type\":\"function\",\"function\":{\"name\":\"";
      j += g.tool_name_;
      j += "\",\"arguments\":\"";
      j += text;
      j += "\"}}],\"refusal\":null}";
    } else if (g.kind_ == api::chat) {
      j += "{\"index\":";
      append_uint(j, g.choice_);
      j += ",\"message\":{\"role\":\"assistant\",\"content\":\"";
      j += text;
      j += "\",\"refusal\":null}";
    } else {
      j += "{\"text\":\"";
      j += text;
      j += "\",\"index\":";
      append_uint(j, g.choice_);
    }
    j += ",\"logprobs\":null,\"finish_reason\":\"";
    j += g.finish_reason();
    j += "\"}";
  }
  j += "],";
  g0.usage_tokens_ = total;
  g0.append_usage_object(j);
  j += '}';
  return j;
}

choice_set::choice_set(const completion_request& req, std::uint64_t tokens, std::uint64_t token_size,
                       const std::optional<std::string>& content, const std::vector<std::string>& per_choice) {
  const std::uint32_t n = req.kind == api::responses || req.kind == api::messages ? 1 : std::max<std::uint32_t>(req.n, 1);
  gens_.reserve(n);
  std::uint64_t total = 0;
  static const std::string no_arguments = "{}";  // a tool call without x-sim-content
  for (std::uint32_t c = 0; c < n; ++c) {
    const std::string* text = content ? &*content : nullptr;
    if (!per_choice.empty()) text = &per_choice[std::min<std::size_t>(c, per_choice.size() - 1)];
    if (!text && !req.tool_call.empty() && req.kind != api::completion) text = &no_arguments;
    const std::uint64_t t = text ? (text->size() + token_size - 1) / token_size : tokens;
    generator& g = gens_.emplace_back(req, t, token_size, c);
    if (text) g.use_content(*text);
    steps_ = std::max(steps_, g.completion_tokens());
    total += g.completion_tokens();
  }
  gens_.front().set_usage_tokens(total);
}

void choice_set::append_role_chunks(std::string& out) {
  for (auto& g : gens_) g.append_role_chunk(out);
}

void choice_set::append_step(std::string& out, std::uint64_t i) {
  for (auto& g : gens_) {
    if (i < g.completion_tokens()) g.append_token_chunk(out);
    else if (i == g.completion_tokens()) g.append_finish_chunk(out);
  }
}

void choice_set::append_usage_chunk(std::string& out) { gens_.front().append_usage_chunk(out); }

std::string choice_set::body() {
  if (!gens_.front().has_done_marker()) return gens_.front().body();  // the Responses and Messages APIs
  return generator::whole_body(gens_);
}

std::string render_stream(const completion_request& req, std::uint64_t tokens, std::uint64_t token_size) {
  choice_set choices(req, tokens, token_size);
  std::string out;
  if (choices.has_role_chunk()) choices.append_role_chunks(out);
  for (std::uint64_t i = 0; i <= choices.steps(); ++i) choices.append_step(out, i);
  if (req.include_usage) choices.append_usage_chunk(out);
  if (choices.has_done_marker()) generator::append_done(out);
  return out;
}

std::string error_body(std::string_view message, std::string_view type, std::string_view param, std::string_view code) {
  json::object e;
  e["message"] = message;
  e["type"] = type;
  e["param"] = param.empty() ? json::value(nullptr) : json::value(param);
  e["code"] = code.empty() ? json::value(nullptr) : json::value(code);
  json::object root;
  root["error"] = std::move(e);
  return json::serialize(root);
}

std::string_view error_type_for_status(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_exceeded";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

namespace {

// Appends `json` with a space after each structural ':' and ','.
void append_spaced(std::string& out, std::string_view json) {
  for_each_json_byte(json, [&out](char c, bool structural) {
    out.push_back(c);
    if (structural && (c == ':' || c == ',')) out.push_back(' ');
  });
}

}  // namespace

std::string spaced_json(std::string_view text, bool sse) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  if (!sse) {
    append_spaced(out, text);
    return out;
  }
  constexpr std::string_view data = "data: ";
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl == std::string_view::npos ? text.size() : nl + 1);
    text.remove_prefix(line.size());
    if (line.starts_with(data)) {
      out.append(data);
      append_spaced(out, line.substr(data.size()));
    } else {
      out.append(line);
    }
  }
  return out;
}

namespace {
json::object model_object(std::string_view id) {
  return json::object{{"id", id}, {"object", "model"}, {"created", 1700000000}, {"owned_by", "sluice-sim"}};
}
}  // namespace

std::string models_body(const std::vector<std::string>& models) {
  json::array data;
  for (const auto& m : models) data.push_back(model_object(m));
  return json::serialize(json::object{{"object", "list"}, {"data", std::move(data)}});
}

std::string model_body(std::string_view id) { return json::serialize(model_object(id)); }

}  // namespace sluice::sim
