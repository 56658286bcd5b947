// The RESP2 vocabulary of the Redis client: a reply value owned by the caller, the command encoder
// and an incremental reply parser. hiredis (0.14) is used as the codec only (redisFormatCommandArgv,
// redisReader*); its objects never leave this module's .cpp files (docs/adr/0007).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::redis {

// One reply. Plain value type, safe to move across threads.
struct reply {
  enum class kind : std::uint8_t { nil, integer, string, status, error, array };

  kind type = kind::nil;
  std::int64_t integer = 0;    // kind::integer
  std::string str;             // kind::string (bulk), kind::status ("OK"), kind::error (the message)
  std::vector<reply> elements; // kind::array

  bool is_nil() const noexcept { return type == kind::nil; }
  bool is_error() const noexcept { return type == kind::error; }
  // An integer reply, or a bulk/status string that is a whole decimal number (INCR-like scripts
  // return either).
  std::optional<std::int64_t> as_integer() const noexcept;
  // A short description for logs and test failures, e.g. `int 3`, `str "x"`, `err "NOSCRIPT ..."`.
  std::string describe() const;

  static reply make_integer(std::int64_t v);
  static reply make_string(std::string s);
  static reply make_status(std::string s);
  static reply make_error(std::string s);
  static reply make_array(std::vector<reply> v);
};

std::string_view to_string(reply::kind k) noexcept;

// One command as RESP bytes (an array of bulk strings), appended to `out`. Arguments are binary-safe.
void append_command(std::string& out, std::span<const std::string_view> args);
std::string format_command(std::span<const std::string_view> args);

// Turns the bytes of a reply stream into replies, in order. feed() takes any slice of the stream;
// next() returns the next complete reply, or nothing while more bytes are needed. A malformed stream
// is a protocol error: failed() turns true (with a message) and stays true. One thread at a time.
class reply_parser {
 public:
  reply_parser();
  ~reply_parser();
  reply_parser(const reply_parser&) = delete;
  reply_parser& operator=(const reply_parser&) = delete;

  void feed(const char* data, std::size_t size);
  std::optional<reply> next();
  bool failed() const noexcept { return !error_.empty(); }
  const std::string& error() const noexcept { return error_; }
  // A fresh stream (a new connection): buffered bytes and a failure are forgotten.
  void reset();

 private:
  struct reader_free {
    void operator()(void* r) const noexcept;
  };
  std::unique_ptr<void, reader_free> reader_;  // a redisReader
  std::string error_;
};

}  // namespace sluice::redis
