#include "admission/client_keys.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace sluice::admission {
namespace {

using digest = std::array<unsigned char, 32>;

digest sha256(std::string_view text) {
  digest out{};
  unsigned int len = 0;
  // EVP_Digest only fails on allocation failure; an all-zero digest then matches no key.
  if (EVP_Digest(text.data(), text.size(), out.data(), &len, EVP_sha256(), nullptr) != 1) out.fill(0);
  return out;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string hex_of(const unsigned char* p, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(digits[p[i] >> 4]);
    out.push_back(digits[p[i] & 0xF]);
  }
  return out;
}

// The name of the key already loaded under `name`, and its line; null when none.
const detail::key_entry* key_named(const std::vector<std::unique_ptr<detail::key_entry>>& keys, std::string_view name) {
  for (const auto& k : keys)
    if (k->name == name) return k.get();
  return nullptr;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    std::size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::optional<std::uint64_t> parse_count(std::string_view s) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::string tenant_of_digest(const digest& key_digest) {
  // A domain tag keeps the tenant id from being the key's own SHA-256 (which names it in the
  // pod's shared tables).
  std::string input = "sluice tenant v1\n";
  input.append(reinterpret_cast<const char*>(key_digest.data()), key_digest.size());
  const digest d = sha256(input);
  return hex_of(d.data(), 16);
}

std::string tenant_of_credential(std::string_view credential) { return tenant_of_digest(sha256(credential)); }

std::string_view bearer_credential(std::string_view authorization) noexcept {
  auto v = trim(authorization);
  constexpr std::string_view scheme = "bearer";
  const bool has_scheme = v.size() > scheme.size() && is_space(v[scheme.size()]) &&
                          std::equal(scheme.begin(), scheme.end(), v.begin(), [](char a, char b) {
                            return a == (b >= 'A' && b <= 'Z' ? static_cast<char>(b - 'A' + 'a') : b);
                          });
  return has_scheme ? trim(v.substr(scheme.size())) : std::string_view{};
}

std::string_view to_string(rate_limit_kind k) noexcept {
  switch (k) {
    case rate_limit_kind::concurrency: return "concurrency";
    case rate_limit_kind::rpm: return "rpm";
    case rate_limit_kind::tpm: return "tpm";
    case rate_limit_kind::unavailable: return "unavailable";
  }
  return "rpm";
}

key_permit& key_permit::operator=(key_permit&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = std::exchange(o.owner_, nullptr);
    entry_ = std::exchange(o.entry_, nullptr);
    headers = std::move(o.headers);
    usage_ = o.usage_;
  }
  return *this;
}

void key_permit::reset() noexcept {
  if (entry_ != nullptr) std::exchange(owner_, nullptr)->release(*entry_, usage_);
  entry_ = nullptr;
}

void settle_tokens(token_bucket& tokens, const permit_usage& u) {
  if (!u.used_tokens || *u.used_tokens == u.reserved_tokens) return;
  if (*u.used_tokens < u.reserved_tokens) tokens.give_back(u.reserved_tokens - *u.used_tokens);
  else tokens.take(*u.used_tokens - u.reserved_tokens);
}

void client_keys::release(detail::key_entry& e, const permit_usage& u) noexcept {
  e.in_use.fetch_sub(1, std::memory_order_acq_rel);
  if (!e.tokens || !u.used_tokens || *u.used_tokens == u.reserved_tokens) return;
  auto now = now_();
  std::lock_guard lock(e.mu);
  e.tokens->refill(now);
  settle_tokens(*e.tokens, u);
}

client_keys::client_keys(now_fn now) : now_(now ? std::move(now) : now_fn([] { return clock::now(); })) {}

result<void> client_keys::add_line(client_keys& out, std::string_view line, std::size_t line_no) {
  // A comment starts at a '#' that begins a field.
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && (i == 0 || is_space(line[i - 1]))) {
      line = line.substr(0, i);
      break;
    }
  }
  line = trim(line);
  if (line.empty()) return ok;
  auto where = "keys file line " + std::to_string(line_no) + ": ";
  auto f = fields(line);
  // Messages name the line only: the key may be right there in the text.
  if (f.size() < 3 || f.size() > 5)
    return error::make(errc::bad_request, where + "expected '<key> <max_streams> <rpm> [name] [tpm=<n>]'");
  auto max_streams = parse_count(f[1]);
  auto rpm = parse_count(f[2]);
  if (!max_streams || !rpm) return error::make(errc::bad_request, where + "max_streams and rpm must be whole numbers");
  auto e = std::make_unique<detail::key_entry>();
  e->digest = sha256(f[0]);
  e->tenant = tenant_of_digest(e->digest);
  e->line = line_no;
  e->name = "key-" + std::to_string(line_no);
  e->max_streams = *max_streams;
  e->rpm = *rpm;
  bool named = false, tpm_given = false;
  for (std::size_t i = 3; i < f.size(); ++i) {
    constexpr std::string_view tpm_field = "tpm=";
    if (f[i].substr(0, tpm_field.size()) == tpm_field) {
      auto tpm = parse_count(f[i].substr(tpm_field.size()));
      if (!tpm || tpm_given) return error::make(errc::bad_request, where + "tpm=<n> takes one whole number");
      e->tpm = *tpm;
      tpm_given = true;
    } else if (!named) {
      e->name = std::string(f[i]);
      named = true;
    } else {
      return error::make(errc::bad_request, where + "expected '<key> <max_streams> <rpm> [name] [tpm=<n>]'");
    }
  }
  for (const auto& k : out.keys_)
    if (CRYPTO_memcmp(k->digest.data(), e->digest.data(), e->digest.size()) == 0)
      return error::make(errc::bad_request, where + "duplicate key (also '" + k->name + "')");
  if (const auto* k = key_named(out.keys_, e->name))
    return error::make(errc::bad_request, where + "the name '" + e->name + "' is also line " + std::to_string(k->line) +
                                              "'s; every key needs a name of its own");
  out.add_entry(std::move(e));
  return ok;
}

void client_keys::add_entry(std::unique_ptr<detail::key_entry> e) {
  const auto now = now_();
  e->index = keys_.size();
  if (e->identity == nullptr) e->identity = e.get();
  if (e->rpm != 0) e->requests.emplace(e->rpm, now);
  if (e->tpm != 0) e->tokens.emplace(e->tpm, now);
  keys_.push_back(std::move(e));
}

client_keys client_keys::divided(std::uint64_t n) const {
  if (n == 0) n = 1;
  auto share = [n](std::uint64_t limit) { return limit == 0 ? 0 : (limit + n - 1) / n; };
  client_keys out(now_);
  for (const auto& k : keys_) {
    auto e = std::make_unique<detail::key_entry>();
    e->digest = k->digest;
    e->tenant = k->tenant;
    e->line = k->line;
    e->name = k->name;
    e->max_streams = share(k->max_streams);
    e->rpm = share(k->rpm);
    e->tpm = share(k->tpm);
    e->identity = k->identity;
    out.add_entry(std::move(e));
  }
  return out;
}

result<client_keys> client_keys::parse(std::string_view text, now_fn now) {
  client_keys out(std::move(now));
  std::size_t line_no = 0;
  // Editors on some systems start a UTF-8 file with a byte-order mark: not part of the first key.
  constexpr std::string_view bom = "\xEF\xBB\xBF";
  if (text.starts_with(bom)) text.remove_prefix(bom.size());
  while (!text.empty()) {
    auto nl = text.find('\n');
    auto line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    auto r = add_line(out, line, ++line_no);
    if (!r) return std::move(r).err();
  }
  return out;
}

result<client_keys> client_keys::load_file(const std::string& path, now_fn now) {
  std::ifstream in(path);
  if (!in) return error::make(errc::bad_request, "cannot read keys file '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  auto r = parse(ss.str(), std::move(now));
  if (!r) {
    auto e = std::move(r).err();
    e.message = path + ": " + e.message;
    return e;
  }
  return r;
}

result<key_handle> client_keys::authenticate(std::string_view key) const {
  if (key.empty()) return error::make(errc::unauthorized, "missing API key");
  auto d = sha256(key);
  // Every key is compared, in constant time, and the match is selected without branching on it,
  // so neither which key matched nor how much of it did shows in the timing.
  std::uintptr_t found = 0;
  for (const auto& k : keys_) {
    auto equal = static_cast<std::uintptr_t>(CRYPTO_memcmp(k->digest.data(), d.data(), d.size()) == 0);
    found |= reinterpret_cast<std::uintptr_t>(k.get()) & (std::uintptr_t{0} - equal);
  }
  if (found == 0) return error::make(errc::unauthorized, "invalid API key");
  return key_handle(reinterpret_cast<detail::key_entry*>(found));
}

result<key_handle> client_keys::authenticate_header(std::string_view authorization) const {
  const auto key = bearer_credential(authorization);
  if (key.empty()) return error::make(errc::unauthorized, "missing API key (expected 'Authorization: Bearer <key>')");
  return authenticate(key);
}

rate_headers client_keys::make_headers(std::uint64_t rpm, double requests_left, duration requests_reset,
                                       std::uint64_t tpm, double tokens_left, duration tokens_reset) {
  auto whole = [](double v) { return v > 0 ? static_cast<std::uint64_t>(v) : std::uint64_t{0}; };
  rate_headers h;
  if (rpm != 0) h.requests = rate_header{rpm, whole(requests_left), format_openai_duration(requests_reset)};
  if (tpm != 0) h.tokens = rate_header{tpm, whole(tokens_left), format_openai_duration(tokens_reset)};
  return h;
}

rate_headers bucket_headers(const std::optional<token_bucket>& requests, const std::optional<token_bucket>& tokens) {
  rate_headers h;
  if (requests)
    h.requests = rate_header{requests->limit(), requests->remaining(), format_openai_duration(requests->time_until_full())};
  if (tokens) h.tokens = rate_header{tokens->limit(), tokens->remaining(), format_openai_duration(tokens->time_until_full())};
  return h;
}

std::optional<rate_refusal> decide_on(std::uint64_t max_streams, std::uint64_t in_use,
                                      std::optional<token_bucket>& requests, std::optional<token_bucket>& tokens,
                                      std::uint64_t cost) {
  auto wait = [](duration d) { return std::max(std::chrono::ceil<std::chrono::seconds>(d), std::chrono::seconds(1)); };
  if (max_streams != 0 && in_use >= max_streams) {
    // We cannot know when one of the key's streams ends; a second is a polite minimum.
    return rate_refusal{rate_limit_kind::concurrency, std::chrono::seconds(1), bucket_headers(requests, tokens)};
  }
  // A burst of up to rpm requests, refilled at rpm per minute.
  if (requests && !requests->can_take(1))
    return rate_refusal{rate_limit_kind::rpm, wait(requests->time_until(1)), bucket_headers(requests, tokens)};
  // Tokens: the estimate must be there (a cost above the whole limit waits for a full bucket and
  // then goes into debt, as the upstream pacer does: the estimate is a ceiling, not a use).
  if (tokens) {
    if (auto d = tokens->time_until(cost); d > duration::zero())
      return rate_refusal{rate_limit_kind::tpm, wait(d), bucket_headers(requests, tokens)};
  }
  if (requests) requests->take(1);
  if (tokens) tokens->take(cost);
  return std::nullopt;
}

key_decision client_keys::decide(const key_handle& key, std::uint64_t tokens, std::uint64_t held_elsewhere) {
  auto& e = *key.entry_;
  auto now = now_();
  std::lock_guard lock(e.mu);
  // A thread that read the clock earlier but locked later refills nothing (the bucket ignores a
  // clock going backwards) and is charged at the later time, which only errs strict.
  if (e.requests) e.requests->refill(now);
  if (e.tokens) e.tokens->refill(now);
  const std::uint64_t in_use = e.in_use.load(std::memory_order_acquire) + held_elsewhere;
  if (auto refused = decide_on(e.max_streams, in_use, e.requests, e.tokens, tokens))
    return std::move(*refused);
  e.in_use.fetch_add(1, std::memory_order_acq_rel);
  return make_permit(e, bucket_headers(e.requests, e.tokens), permit_usage{0, e.tokens ? tokens : 0, std::nullopt});
}

task<key_decision> client_keys::acquire(const key_handle& key, std::uint64_t tokens) { co_return decide(key, tokens); }

void client_keys::lower_to(std::size_t index, std::uint64_t requests, std::uint64_t tokens) {
  auto& e = *keys_[index];
  auto now = now_();
  std::lock_guard lock(e.mu);
  if (e.requests) {
    e.requests->refill(now);
    e.requests->lower_to(requests);
  }
  if (e.tokens) {
    e.tokens->refill(now);
    e.tokens->lower_to(tokens);
  }
}

}  // namespace sluice::admission
