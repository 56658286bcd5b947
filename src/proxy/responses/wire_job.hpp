// Foreground requests through the queue (--queue redis, --role front; docs/queue.md, ADR 0011).
// A front enqueues a client's chat/completions/responses request as a job whose event log is the
// answer itself, as the client is to get it: event 0 the head (status, headers, streamed or whole),
// each later event a piece of the body exactly as the worker's relay wrote it. The worker runs the
// job through its pipeline with a wire_sink as the downstream (the same attempt loop, relay,
// structured-output checks and in-band errors as a client's request); the front reads the log
// back and writes it to the client (queued_front.cpp), so the client sees an ordinary answer.
// One thread: the job's (wire_sink), the front's request's (the head functions are pure).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jobs/response_store.hpp"
#include "proxy/responses/wire_head.hpp"
#include "proxy/responses/job_sink.hpp"

namespace sluice::proxy {

namespace bhttp = boost::beast::http;

// A new foreground job id: "job_" and 32 hex digits from the system's CSPRNG.
std::string new_job_id();

class wire_sink final : public job_downstream {
 public:
  explicit wire_sink(std::shared_ptr<jobs::response_record> rec) : rec_(std::move(rec)) {}

  task<result<void>> write(http::response& res) override;
  task<result<void>> write_head(bhttp::response<bhttp::empty_body>& head) override;
  void hold_head(bhttp::response<bhttp::empty_body>& head) override;
  bool holds_head() const noexcept override { return held_.has_value(); }
  task<result<void>> flush_head() override;
  task<result<void>> write_chunk(std::string_view data) override;
  task<result<void>> finish_chunks() override;
  task<result<void>> write_last_chunk(std::string_view data) override;
  [[nodiscard]] peer_watch watch_peer(http::peer_listener& l) override;
  bool peer_gone() const noexcept override { return gone_; }
  void close() noexcept override { gone_ = true; }
  bool stalled() const noexcept override { return false; }
  std::uint64_t bytes_written() const noexcept override { return bytes_; }

  void cancel() noexcept override;
  // Completed once the whole answer is in the log; else cancelled, or failed naming `why`.
  void conclude(std::string_view why) override;

 protected:
  void end_watch() noexcept override { listener_ = nullptr; }

 private:
  // One event of the log; false past response-max-bytes (the job then stops).
  bool append(std::string text);
  result<void> stopped_result();

  std::shared_ptr<jobs::response_record> rec_;
  std::optional<std::string> held_;  // a held head's event text
  http::peer_listener* listener_ = nullptr;
  std::int64_t next_seq_ = 0;
  bool gone_ = false;
  bool too_large_ = false;
  bool complete_ = false;  // the whole answer is in the log
  std::uint64_t bytes_ = 0;
};

}  // namespace sluice::proxy
