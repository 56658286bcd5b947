#include "redis/reply.hpp"

#include <hiredis/hiredis.h>

#include <charconv>
#include <cstdlib>
#include <limits>

namespace sluice::redis {

std::string_view to_string(reply::kind k) noexcept {
  switch (k) {
    case reply::kind::nil: return "nil";
    case reply::kind::integer: return "integer";
    case reply::kind::string: return "string";
    case reply::kind::status: return "status";
    case reply::kind::error: return "error";
    case reply::kind::array: return "array";
  }
  return "unknown";
}

std::optional<std::int64_t> reply::as_integer() const noexcept {
  if (type == kind::integer) return integer;
  if (type != kind::string && type != kind::status) return std::nullopt;
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(str.data(), str.data() + str.size(), v);
  if (str.empty() || ec != std::errc{} || ptr != str.data() + str.size()) return std::nullopt;
  return v;
}

std::string reply::describe() const {
  constexpr std::size_t shown = 80;
  auto quoted = [&](std::string_view tag) {
    std::string out(tag);
    out += " \"";
    out += str.substr(0, shown);
    if (str.size() > shown) out += "...";
    out += '"';
    return out;
  };
  switch (type) {
    case kind::nil: return "nil";
    case kind::integer: return "int " + std::to_string(integer);
    case kind::string: return quoted("str");
    case kind::status: return quoted("status");
    case kind::error: return quoted("err");
    case kind::array: {
      std::string out = "[";
      for (std::size_t i = 0; i < elements.size(); ++i) {
        if (i) out += ", ";
        if (i == 8) {
          out += "... " + std::to_string(elements.size()) + " in all";
          break;
        }
        out += elements[i].describe();
      }
      return out + "]";
    }
  }
  return "?";
}

reply reply::make_integer(std::int64_t v) {
  reply r;
  r.type = kind::integer;
  r.integer = v;
  return r;
}
reply reply::make_string(std::string s) {
  reply r;
  r.type = kind::string;
  r.str = std::move(s);
  return r;
}
reply reply::make_status(std::string s) {
  reply r;
  r.type = kind::status;
  r.str = std::move(s);
  return r;
}
reply reply::make_error(std::string s) {
  reply r;
  r.type = kind::error;
  r.str = std::move(s);
  return r;
}
reply reply::make_array(std::vector<reply> v) {
  reply r;
  r.type = kind::array;
  r.elements = std::move(v);
  return r;
}

void append_command(std::string& out, std::span<const std::string_view> args) {
  // hiredis' encoder; a small-vector of pointers on the stack for the common few arguments.
  constexpr std::size_t local = 16;
  const char* argv_local[local];
  std::size_t len_local[local];
  std::vector<const char*> argv_heap;
  std::vector<std::size_t> len_heap;
  const char** argv = argv_local;
  std::size_t* lens = len_local;
  if (args.size() > local) {
    argv_heap.resize(args.size());
    len_heap.resize(args.size());
    argv = argv_heap.data();
    lens = len_heap.data();
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    argv[i] = args[i].data() ? args[i].data() : "";
    lens[i] = args[i].size();
  }
  char* cmd = nullptr;
  const int n = redisFormatCommandArgv(&cmd, static_cast<int>(args.size()), argv, lens);
  if (n < 0 || cmd == nullptr) throw std::bad_alloc();
  out.append(cmd, static_cast<std::size_t>(n));
  redisFreeCommand(cmd);
}

std::string format_command(std::span<const std::string_view> args) {
  std::string out;
  append_command(out, args);
  return out;
}

namespace {

reply convert(const redisReply& r) {
  switch (r.type) {
    case REDIS_REPLY_STRING: return reply::make_string(std::string(r.str, r.len));
    case REDIS_REPLY_STATUS: return reply::make_status(std::string(r.str, r.len));
    case REDIS_REPLY_ERROR: return reply::make_error(std::string(r.str, r.len));
    case REDIS_REPLY_INTEGER: return reply::make_integer(r.integer);
    case REDIS_REPLY_ARRAY: {
      std::vector<reply> v;
      v.reserve(r.elements);
      for (std::size_t i = 0; i < r.elements; ++i) v.push_back(convert(*r.element[i]));
      return reply::make_array(std::move(v));
    }
    default: return reply{};  // REDIS_REPLY_NIL (and a nil array, *-1)
  }
}

redisReader* as_reader(void* p) noexcept { return static_cast<redisReader*>(p); }

}  // namespace

void reply_parser::reader_free::operator()(void* r) const noexcept { redisReaderFree(as_reader(r)); }

reply_parser::reply_parser() : reader_(redisReaderCreate()) {
  if (!reader_) throw std::bad_alloc();
}
reply_parser::~reply_parser() = default;

void reply_parser::reset() {
  reader_.reset(redisReaderCreate());
  if (!reader_) throw std::bad_alloc();
  error_.clear();
}

void reply_parser::feed(const char* data, std::size_t size) {
  if (failed() || size == 0) return;
  if (redisReaderFeed(as_reader(reader_.get()), data, size) != REDIS_OK) {
    error_ = as_reader(reader_.get())->errstr;
    if (error_.empty()) error_ = "reader failed";
  }
}

std::optional<reply> reply_parser::next() {
  if (failed()) return std::nullopt;
  void* out = nullptr;
  if (redisReaderGetReply(as_reader(reader_.get()), &out) != REDIS_OK) {
    error_ = as_reader(reader_.get())->errstr;
    if (error_.empty()) error_ = "malformed reply";
    return std::nullopt;
  }
  if (out == nullptr) return std::nullopt;
  std::unique_ptr<redisReply, void (*)(void*)> owned(static_cast<redisReply*>(out), freeReplyObject);
  return convert(*owned);
}

}  // namespace sluice::redis
