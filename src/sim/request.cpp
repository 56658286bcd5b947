#include "sim/request.hpp"

#include <boost/json.hpp>

#include <charconv>

namespace sluice::sim {
namespace {

namespace json = boost::json;

error bad(std::string msg, std::string param = {}) { return error::make(errc::bad_request, std::move(msg), std::move(param)); }

result<std::uint64_t> header_count(std::string_view name, std::string_view v) {
  std::uint64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc{} || p != v.data() + v.size())
    return bad(std::string(name) + ": expected a whole number, got '" + std::string(v) + "'");
  return x;
}

result<duration> header_duration(std::string_view name, std::string_view v) {
  auto d = parse_duration(v);
  if (!d) return bad(std::string(name) + ": " + d.err().message);
  return *d;
}

// FNV-1a: cheap, stable across platforms and runs, which is all content identity needs.
std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t text_bytes(const json::value& v) {
  if (v.is_string()) return v.get_string().size();
  std::uint64_t n = 0;
  if (v.is_array()) {
    for (const auto& part : v.get_array()) {
      if (part.is_string()) n += part.get_string().size();
      else if (part.is_object())
        if (auto* t = part.get_object().if_contains("text"); t && t->is_string()) n += t->get_string().size();
    }
  }
  return n;
}

result<std::optional<std::uint64_t>> positive_int(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) return std::optional<std::uint64_t>{};
  if (v->is_uint64() && v->get_uint64() > 0) return std::optional<std::uint64_t>{v->get_uint64()};
  if (v->is_int64() && v->get_int64() > 0) return std::optional<std::uint64_t>{static_cast<std::uint64_t>(v->get_int64())};
  return bad(std::string(key) + " must be a positive integer", std::string(key));
}

// RFC 4648 base64 (standard alphabet, '=' padding optional); nullopt on any other byte.
std::optional<std::string> decode_base64(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

// The function a deterministic model calls (see completion_request::tool_call): tool_choice
// "required" takes the first function tool, a named tool_choice that name; anything else
// ("auto", "none", absent, no tools) answers in text. Chat tools nest the name under `function`,
// Responses tools carry it at the top.
result<std::string> pick_tool(api kind, const json::object& o) {
  const json::value* tools = o.if_contains("tools");
  if (!tools || tools->is_null()) return std::string();
  if (!tools->is_array()) return bad("tools must be an array", "tools");
  auto name_of = [kind](const json::object& holder) -> const json::value* {
    if (kind == api::chat) {
      const json::value* f = holder.if_contains("function");
      return f && f->is_object() ? f->get_object().if_contains("name") : nullptr;
    }
    return holder.if_contains("name");
  };
  std::string first;
  for (const auto& t : tools->get_array()) {
    if (!t.is_object()) return bad("each tool must be an object", "tools");
    const json::value* type = t.get_object().if_contains("type");
    if (!type || *type != "function") continue;
    const json::value* name = name_of(t.get_object());
    if (!name || !name->is_string() || !valid_function_name(name->get_string()))
      return bad("a function tool needs a name (1..64 of a-z, A-Z, 0-9, _ and -)", "tools");
    if (first.empty()) first = name->get_string();
  }
  const json::value* choice = o.if_contains("tool_choice");
  if (!choice || first.empty()) return std::string();
  if (choice->is_string()) return choice->get_string() == "required" ? first : std::string();
  if (choice->is_object() && choice->get_object().if_contains("type") &&
      *choice->get_object().if_contains("type") == "function") {
    const json::value* name = name_of(choice->get_object());
    if (!name || !name->is_string() || !valid_function_name(name->get_string()))
      return bad("tool_choice must name a function", "tool_choice");
    return std::string(name->get_string());
  }
  return std::string();
}

// x-sim-tokens and x-sim-token-size, within their bounds.
result<void> apply_sizes(request_settings& s, const header_overrides& h) {
  struct count_field { std::string_view name, value; std::uint64_t* target; };
  for (auto [name, value, target] : {count_field{"x-sim-tokens", h.tokens, &s.tokens},
                                     count_field{"x-sim-token-size", h.token_size, &s.token_size}}) {
    if (value.empty()) continue;
    auto r = header_count(name, value);
    if (!r) return std::move(r).err();
    *target = *r;
  }
  if (s.token_size == 0 || s.token_size > 1024 * 1024) return bad("x-sim-token-size: expected 1..1048576");
  if (s.tokens > 10'000'000) return bad("x-sim-tokens: at most 10000000");
  return ok;
}

// x-sim-ttft, x-sim-token-delay, x-sim-header-delay and x-sim-retry-after.
result<void> apply_durations(request_settings& s, const header_overrides& h) {
  struct duration_field { std::string_view name, value; duration* target; };
  for (auto [name, value, target] : {duration_field{"x-sim-ttft", h.ttft, &s.ttft},
                                     duration_field{"x-sim-token-delay", h.token_delay, &s.token_delay},
                                     duration_field{"x-sim-header-delay", h.header_delay, &s.header_delay},
                                     duration_field{"x-sim-retry-after", h.retry_after, &s.retry_after}}) {
    if (value.empty()) continue;
    auto r = header_duration(name, value);
    if (!r) return std::move(r).err();
    *target = *r;
  }
  return ok;
}

// x-sim-fault (with x-sim-fault-after) and x-sim-status: either pins the request's faults.
result<void> apply_faults(request_settings& s, const header_overrides& h) {
  std::uint64_t after = 0;
  if (!h.fault_after.empty()) {
    auto r = header_count("x-sim-fault-after", h.fault_after);
    if (!r) return std::move(r).err();
    after = *r;
  }
  if (!h.fault.empty()) {
    // A pinned fault replaces every configured one, so one simulator can serve many test cases.
    s.faults_pinned = true;
    s.stall_after.reset();
    s.reset_after.reset();
    s.malformed_after.reset();
    if (h.fault == "5xx") s.fault = status_fault::http_5xx;
    else if (h.fault == "429") s.fault = status_fault::http_429;
    else if (h.fault == "stall") s.stall_after = after;
    else if (h.fault == "reset") s.reset_after = after;
    else if (h.fault == "malformed") s.malformed_after = after;
    else if (h.fault != "none")
      return bad("x-sim-fault: expected one of 5xx, 429, stall, reset, malformed, none; got '" + std::string(h.fault) + "'");
  }
  if (!h.status.empty()) {
    auto r = header_count("x-sim-status", h.status);
    if (!r || *r < 200 || *r > 599) return bad("x-sim-status: expected an HTTP status 200..599");
    s.faults_pinned = true;
    s.fault = status_fault::forced;
    s.status = static_cast<int>(*r);
  }
  return ok;
}

// The exact output: x-sim-content-b64 or x-sim-content, a script entry's per-choice contents, and
// x-sim-tool-call.
result<void> apply_content(request_settings& s, const header_overrides& h) {
  if (!h.content_b64.empty()) {
    s.content = decode_base64(h.content_b64);
    if (!s.content) return bad("x-sim-content-b64: not valid base64");
  } else if (!h.content.empty()) {
    s.content = std::string(h.content);
  }
  if (h.choice_contents && !h.choice_contents->empty()) {
    s.choice_contents = *h.choice_contents;
    if (!s.content) s.content = s.choice_contents.front();
  }
  if (!h.tool_call.empty()) {
    if (!valid_function_name(h.tool_call))
      return bad("x-sim-tool-call: expected a function name (1..64 of a-z, A-Z, 0-9, _ and -)");
    s.tool_call = std::string(h.tool_call);
  }
  return ok;
}

// stream and stream_options.include_usage.
result<void> read_stream(const json::object& o, completion_request& r) {
  if (auto* s = o.if_contains("stream"); s && !s->is_null()) {
    if (!s->is_bool()) return bad("stream must be a boolean", "stream");
    r.stream = s->get_bool();
  }
  if (auto* so = o.if_contains("stream_options"); so && so->is_object())
    if (auto* iu = so->get_object().if_contains("include_usage"); iu && iu->is_bool()) r.include_usage = iu->get_bool();
  return ok;
}

// max_tokens / max_completion_tokens (the smaller wins) and n.
result<void> read_limits(api kind, const json::object& o, completion_request& r) {
  for (std::string_view key : {"max_tokens", "max_completion_tokens"}) {
    auto m = positive_int(o, key);
    if (!m) return std::move(m).err();
    if (*m && (!r.max_tokens || **m < *r.max_tokens)) r.max_tokens = *m;
  }
  if (kind != api::responses) {  // the Responses API has no `n`
    auto n = positive_int(o, "n");
    if (!n) return std::move(n).err();
    if (*n) {
      if (**n > max_choices) return bad("n must be at most " + std::to_string(max_choices), "n");
      r.n = static_cast<std::uint32_t>(**n);
    }
  }
  return ok;
}

// The prompt's text bytes and per-message overhead, from which its tokens are estimated.
struct prompt_size {
  std::uint64_t bytes = 0, overhead = 0;
};

// The prompt of each API: chat messages, Responses input (and its max_output_tokens), a legacy
// completion's prompt.
result<prompt_size> read_prompt(api kind, const json::object& o, completion_request& r) {
  prompt_size size;
  if (kind == api::chat) {
    auto* msgs = o.if_contains("messages");
    if (!msgs || !msgs->is_array() || msgs->get_array().empty())
      return bad("messages must be a non-empty array", "messages");
    for (const auto& m : msgs->get_array()) {
      if (!m.is_object()) return bad("each message must be an object", "messages");
      if (auto* c = m.get_object().if_contains("content")) size.bytes += text_bytes(*c);
      size.overhead += 4;  // role and framing, roughly as OpenAI counts them
    }
  } else if (kind == api::responses) {
    auto* input = o.if_contains("input");
    if (!input || !(input->is_string() || input->is_array())) return bad("input must be a string or an array", "input");
    if (input->is_string()) size.bytes = input->get_string().size();
    else
      for (const auto& item : input->get_array())
        if (item.is_object())
          if (auto* c = item.get_object().if_contains("content")) size.bytes += text_bytes(*c);
    auto m = positive_int(o, "max_output_tokens");
    if (!m) return std::move(m).err();
    if (*m) r.max_tokens = *m;
  } else {
    auto* prompt = o.if_contains("prompt");
    if (!prompt || !(prompt->is_string() || prompt->is_array())) return bad("prompt must be a string or an array", "prompt");
    size.bytes = text_bytes(*prompt);
  }
  return size;
}

}  // namespace

bool valid_function_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  return true;
}

result<request_settings> resolve_settings(const options& opts, const header_overrides& h) {
  request_settings s;
  s.tokens = opts.tokens;
  s.token_size = opts.token_size;
  s.ttft = opts.ttft;
  s.token_delay = opts.token_delay;
  s.header_delay = opts.header_delay;
  s.retry_after = opts.retry_after;
  s.stall_after = opts.stall_after;
  s.reset_after = opts.reset_after;
  s.malformed_after = opts.malformed_after;
  if (auto r = apply_sizes(s, h); !r) return std::move(r).err();
  if (auto r = apply_durations(s, h); !r) return std::move(r).err();
  if (auto r = apply_faults(s, h); !r) return std::move(r).err();
  if (auto r = apply_content(s, h); !r) return std::move(r).err();
  if (s.content) s.tokens = (s.content->size() + s.token_size - 1) / s.token_size;
  return s;
}

status_fault pick_status_fault(const request_settings& s, const options& opts, double u) {
  if (s.faults_pinned || s.fault != status_fault::none) return s.fault;
  if (u < opts.fault_5xx_rate) return status_fault::http_5xx;
  if (u < opts.fault_5xx_rate + opts.fault_429_rate) return status_fault::http_429;
  return status_fault::none;
}

std::string_view route_of(api kind) noexcept {
  switch (kind) {
    case api::chat: return "/v1/chat/completions";
    case api::completion: return "/v1/completions";
    case api::responses: return "/v1/responses";
    case api::messages: return "/v1/messages";
  }
  return {};
}

std::uint64_t request_hash(api kind, std::string_view body, std::uint64_t seed) noexcept {
  const std::uint64_t salt = kind == api::chat         ? 0x63686174ull
                             : kind == api::completion ? 0x636d706cull
                             : kind == api::responses  ? 0x72657370ull
                                                       : 0x6d657373ull;
  return mix(fnv1a(body, mix(seed ^ salt)));
}

result<completion_request> parse_completion(api kind, std::string_view body, std::uint64_t seed,
                                            std::string_view deployment) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  if (ec) return bad("We could not parse the JSON body of your request: " + ec.message());
  if (!doc.is_object()) return bad("The request body must be a JSON object.");
  const auto& o = doc.get_object();

  completion_request r;
  r.kind = kind;
  auto* model = o.if_contains("model");
  if (deployment.empty() && (!model || !model->is_string())) return bad("you must provide a model parameter", "model");
  r.model = deployment.empty() ? std::string(model->get_string()) : std::string(deployment);
  if (auto v = read_stream(o, r); !v) return std::move(v).err();
  if (auto v = read_limits(kind, o, r); !v) return std::move(v).err();
  auto size = read_prompt(kind, o, r);
  if (!size) return std::move(size).err();
  if (kind != api::completion) {
    auto tool = pick_tool(kind, o);
    if (!tool) return std::move(tool).err();
    r.tool_call = std::move(*tool);
  }
  r.prompt_tokens = std::max<std::uint64_t>(1, (size->bytes + 3) / 4 + size->overhead);
  r.hash = request_hash(kind, body, seed);
  return r;
}

}  // namespace sluice::sim
