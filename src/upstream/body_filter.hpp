// upstream::body_filter: what a response's body becomes before its reader sees it, for an upstream
// that speaks another API than the one the reader relays (an Anthropic upstream's Messages events
// become chat-completions chunks: proxy/adapters/anthropic_upstream.hpp). The response feeds it the body's
// bytes as they are decoded, in whatever pieces the socket gave, and hands the reader what it
// wrote instead; a filter holds its own state only, so the body stays bounded. One thread: the
// response's.
#pragma once

#include <string>
#include <string_view>

namespace sluice::upstream {

class body_filter {
 public:
  virtual ~body_filter() = default;
  // The next decoded body bytes; appends what the reader gets for them to `out` (maybe nothing).
  virtual void feed(std::string_view in, std::string& out) = 0;
  // The body ended cleanly (not cut short: a reader then gets the read's error instead); appends
  // what the reader is still owed.
  virtual void end(std::string& out) = 0;
  // What it holds between feeds (a partial event), counted in the stream's memory.
  virtual std::size_t held_bytes() const noexcept = 0;
};

}  // namespace sluice::upstream
