// job_sink: the downstream of a background job. The relay writes the upstream's Responses API
// stream into it as it would to a client; it cuts the bytes into events and appends each to the
// response's record (jobs::response_record) by sequence number, keeping the stored response object
// in step with the lifecycle events (response.created ... response.completed), whose `id` becomes
// the gateway's own. A whole answer (an upstream or gateway error) fails the response. One thread:
// the job's; the record is what other threads read.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "http/downstream.hpp"
#include "jobs/response_store.hpp"
#include "sse/parser.hpp"

namespace sluice::proxy {

namespace bhttp = boost::beast::http;

class job_sink final : public http::downstream {
 public:
  explicit job_sink(std::shared_ptr<jobs::response_record> rec);

  task<result<void>> write(http::response& res) override;
  task<result<void>> write_head(bhttp::response<bhttp::empty_body>& head) override;
  void hold_head(bhttp::response<bhttp::empty_body>& head) override;
  bool holds_head() const noexcept override { return false; }
  task<result<void>> flush_head() override;
  task<result<void>> write_chunk(std::string_view data) override;
  task<result<void>> finish_chunks() override;
  task<result<void>> write_last_chunk(std::string_view data) override;
  [[nodiscard]] peer_watch watch_peer(http::peer_listener& l) override;
  bool peer_gone() const noexcept override { return gone_; }
  void close() noexcept override { gone_ = true; }
  bool stalled() const noexcept override { return false; }
  std::uint64_t bytes_written() const noexcept override { return bytes_; }

  // The job was cancelled (on the job's thread): the request's listener is told, as when a
  // client leaves.
  void cancel() noexcept;
  // After the request ended: the record's final status. `why` names a failure when the stream
  // did not reach its own end (a gateway refusal, the drain, ...).
  void conclude(std::string_view why);

 private:
  bool on_event(const sse::event_view& ev);
  // The record ends `failed` with this error, an error event appended for its followers.
  void fail(std::string_view code, std::string_view message);

  std::shared_ptr<jobs::response_record> rec_;
  sse::parser parser_;
  http::peer_listener* listener_ = nullptr;
  bool gone_ = false;
  bool too_large_ = false;
  bool malformed_ = false;
  std::optional<jobs::status> final_;  // from the stream's terminal event
  std::string object_;                  // the latest response object
  std::string error_code_, error_message_;  // a terminal error event's
  std::uint64_t bytes_ = 0;
  std::optional<std::int64_t> created_at_;  // the gateway's, from the queued object

 protected:
  void end_watch() noexcept override { listener_ = nullptr; }
};

// The response object of a new response (status queued): `id`, `model`, the request's metadata.
std::string queued_response_object(std::string_view id, std::string_view model, bool background,
                                   std::string_view request_body);
// `object` with another status (and, when given, its error {code, message}); `object` unchanged if
// it is not a JSON object.
std::string response_object_with(std::string_view object, jobs::status s, std::string_view error_code = {},
                                  std::string_view error_message = {});
// A new response id: "resp_" and 32 hex digits from the system's CSPRNG (an id is the only key
// to a response when no client keys are configured).
std::string new_response_id();

}  // namespace sluice::proxy
