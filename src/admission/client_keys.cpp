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

std::string_view to_string(rate_limit_kind k) noexcept {
  return k == rate_limit_kind::concurrency ? "concurrency" : "rpm";
}

key_permit& key_permit::operator=(key_permit&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = std::exchange(o.owner_, nullptr);
    entry_ = std::exchange(o.entry_, nullptr);
    headers = std::move(o.headers);
  }
  return *this;
}

void key_permit::reset() noexcept {
  if (entry_ != nullptr) std::exchange(owner_, nullptr)->release(*entry_);
  entry_ = nullptr;
}

void client_keys::release(detail::key_entry& e) noexcept { e.in_use.fetch_sub(1, std::memory_order_acq_rel); }

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
  if (f.size() < 3 || f.size() > 4)
    return error::make(errc::bad_request, where + "expected '<key> <max_streams> <rpm> [name]'");
  auto max_streams = parse_count(f[1]);
  auto rpm = parse_count(f[2]);
  if (!max_streams || !rpm) return error::make(errc::bad_request, where + "max_streams and rpm must be whole numbers");
  auto e = std::make_unique<detail::key_entry>();
  e->digest = sha256(f[0]);
  e->name = f.size() == 4 ? std::string(f[3]) : "key-" + std::to_string(line_no);
  e->max_streams = *max_streams;
  e->rpm = *rpm;
  if (e->rpm != 0) e->requests.emplace(e->rpm, out.now_());
  for (const auto& k : out.keys_)
    if (CRYPTO_memcmp(k->digest.data(), e->digest.data(), e->digest.size()) == 0)
      return error::make(errc::bad_request, where + "duplicate key (also '" + k->name + "')");
  out.keys_.push_back(std::move(e));
  return ok;
}

result<client_keys> client_keys::parse(std::string_view text, now_fn now) {
  client_keys out(std::move(now));
  std::size_t line_no = 0;
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
  auto v = trim(authorization);
  constexpr std::string_view scheme = "bearer";
  bool has_scheme = v.size() > scheme.size() && is_space(v[scheme.size()]) &&
                    std::equal(scheme.begin(), scheme.end(), v.begin(), [](char a, char b) {
                      return a == (b >= 'A' && b <= 'Z' ? static_cast<char>(b - 'A' + 'a') : b);
                    });
  if (!has_scheme) return error::make(errc::unauthorized, "missing API key (expected 'Authorization: Bearer <key>')");
  return authenticate(trim(v.substr(scheme.size())));
}

std::optional<rate_headers> client_keys::headers_locked(const detail::key_entry& e) {
  if (!e.requests) return std::nullopt;
  const auto& b = *e.requests;
  return rate_headers{b.limit(), b.remaining(), format_openai_duration(b.time_until_full())};
}

std::variant<key_permit, rate_refusal> client_keys::try_acquire(const key_handle& key) {
  auto& e = *key.entry_;
  auto now = now_();
  std::lock_guard lock(e.mu);
  // A thread that read the clock earlier but locked later refills nothing (the bucket ignores a
  // clock going backwards) and is charged at the later time, which only errs strict.
  if (e.requests) e.requests->refill(now);
  if (e.max_streams != 0 && e.in_use.load(std::memory_order_acquire) >= e.max_streams) {
    // We cannot know when one of the key's streams ends; a second is a polite minimum.
    return rate_refusal{rate_limit_kind::concurrency, std::chrono::seconds(1), headers_locked(e)};
  }
  // A burst of up to rpm requests, refilled at rpm per minute.
  if (e.requests && !e.requests->try_take(1)) {
    auto secs = std::chrono::ceil<std::chrono::seconds>(e.requests->time_until(1));
    return rate_refusal{rate_limit_kind::rpm, std::max(secs, std::chrono::seconds(1)), headers_locked(e)};
  }
  e.in_use.fetch_add(1, std::memory_order_acq_rel);
  return make_permit(e, headers_locked(e));
}

}  // namespace sluice::admission
