// Storing a Responses API stream as the relay writes it (docs/queue.md, ADR 0009):
// - response_recorder cuts the relayed bytes into events and appends each to a response's record
//   (jobs::response_record) by sequence number, keeping the stored response object in step with
//   the lifecycle events (response.created ... response.completed);
// - job_sink is the downstream of a background job: only the record; the lifecycle events' `id`
//   becomes the gateway's, and a whole answer (an error) fails the response;
// - recording_downstream is the downstream of a client's own `stream: true` Responses request:
//   every write goes to the client and is recorded too, under a response id of the gateway's (128
//   random bits; the lifecycle events' response id is rewritten to it for the client as for the
//   record), so the client can resume it (`starting_after`) after losing its connection; a client that
//   leaves no longer cancels the stream while it is recorded, until no one has followed it for
//   orphan-timeout.
// One thread: the request's or the job's; the record is what other threads read.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "http/downstream.hpp"
#include "http/types.hpp"
#include "jobs/options.hpp"
#include "jobs/response_store.hpp"
#include "proxy/relay/event_scan.hpp"
#include "proxy/request_id.hpp"
#include "runtime/watchdog.hpp"
#include "sse/parser.hpp"

namespace sluice::proxy {

namespace bhttp = boost::beast::http;

class response_recorder {
 public:
  // A background job's: the record exists; ids become the gateway's.
  explicit response_recorder(std::shared_ptr<jobs::response_record> rec);
  // A client's stream: the record is made in `store` at the first lifecycle event, under a new
  // id of the gateway's, owned by `owner` (set_owner: the tenant, once the client is known).
  explicit response_recorder(jobs::memory_store& store);

  void set_owner(std::string_view owner) { owner_ = owner; }
  // Told of a client's stream's record once it is made (--queue redis: mirrored into Redis).
  void on_open(std::function<void(const std::shared_ptr<jobs::response_record>&)> f) { on_open_ = std::move(f); }
  // The relayed bytes of whole events. Returns what the client is sent: `data` itself, or (a
  // client's stream, in a write with a lifecycle event) the same events with the gateway's response
  // id, valid until the next feed.
  std::string_view feed(std::string_view data);
  // Past response-max-bytes, or the events could not be read: nothing more is stored.
  bool stopped() const noexcept { return too_large_ || malformed_; }
  // A record is being written (a client's stream: once its first lifecycle event came).
  bool recording() const noexcept { return rec_ != nullptr && !stopped(); }
  const std::shared_ptr<jobs::response_record>& record() const noexcept { return rec_; }
  // The record ends `failed` with this error, an error event appended for its followers.
  void fail(std::string_view code, std::string_view message);
  // After the request ended: the record's final status. `why` names a failure when the stream did
  // not reach its own end; `abandoned`: no one followed it for orphan-timeout (cancelled).
  void conclude(std::string_view why, bool abandoned = false);

 private:
  // Records one event; returns the client's text for it when that differs from the relayed bytes.
  std::string on_event(const sse::event_view& ev, std::string_view raw);
  // The event with the gateway's sequence number (`seq`, a job's) and, in a lifecycle event, the
  // gateway's response id (a client's stream: spliced into the upstream's bytes where it can be);
  // keeps the response object (opening a client's record). "" when the payload is not a JSON object.
  std::string rewrite(const sse::event_view& ev, std::string_view raw, const event_facts& facts,
                      std::optional<std::int64_t> seq);
  // A client's lifecycle event as the upstream wrote it, but for its response id, which becomes the
  // gateway's ("" when the id cannot be replaced in place: the event is re-serialized instead).
  std::string with_id(const sse::event_view& ev, std::string_view raw, const event_facts& facts) const;
  // The final status a terminal event says (response.completed, ..., error).
  void note_terminal(const event_facts& facts, std::string_view data);
  // The record of a client's stream, made from its first lifecycle event's response object.
  bool open(const std::string& object);

  std::shared_ptr<jobs::response_record> rec_;
  jobs::memory_store* store_ = nullptr;  // a client's stream: where its record is made
  const bool rewrite_ = false;           // a background job: the gateway's id in lifecycle events
  std::string owner_;
  std::string id_;  // a client's stream: the gateway's id for it, from its first lifecycle event
  std::string upstream_id_;  // the upstream's id for it, from the same event
  std::string client_out_;         // feed's rewritten bytes for the client
  bool client_rewritten_ = false;  // in the current feed
  sse::parser parser_;
  bool too_large_ = false;
  bool malformed_ = false;
  std::optional<jobs::status> final_;  // from the stream's terminal event
  std::string object_;                  // the latest response object
  std::string error_code_, error_message_;  // a terminal error event's
  std::optional<std::int64_t> created_at_;  // the gateway's, from the queued object
  std::function<void(const std::shared_ptr<jobs::response_record>&)> on_open_;
};

// The downstream of a job a worker runs (job_sink, wire_sink): stopped by a cancel, concluded
// into its record's final status once the request ended.
class job_downstream : public http::downstream {
 public:
  // The job was cancelled (on the job's thread): the request's listener is told, as when a
  // client leaves.
  virtual void cancel() noexcept = 0;
  // After the request ended: the record's final status; `why` names a failure.
  virtual void conclude(std::string_view why) = 0;

 protected:
  ~job_downstream() = default;
};

class job_sink final : public job_downstream {
 public:
  explicit job_sink(std::shared_ptr<jobs::response_record> rec) : rec_(std::move(rec)) {}

  task<result<void>> write(http::response& res) override;
  task<result<void>> write_head(bhttp::response<bhttp::empty_body>&) override { co_return ok; }
  void hold_head(bhttp::response<bhttp::empty_body>&) override {}
  bool holds_head() const noexcept override { return false; }
  task<result<void>> flush_head() override { co_return ok; }
  task<result<void>> write_chunk(std::string_view data) override;
  task<result<void>> finish_chunks() override { co_return ok; }
  task<result<void>> write_last_chunk(std::string_view data) override { co_return co_await write_chunk(data); }
  [[nodiscard]] peer_watch watch_peer(http::peer_listener& l) override;
  bool peer_gone() const noexcept override { return gone_; }
  void close() noexcept override { gone_ = true; }
  bool stalled() const noexcept override { return false; }
  std::uint64_t bytes_written() const noexcept override { return bytes_; }

  void cancel() noexcept override;
  void conclude(std::string_view why) override { rec_.conclude(why); }

 protected:
  void end_watch() noexcept override { listener_ = nullptr; }

 private:
  response_recorder rec_;
  http::peer_listener* listener_ = nullptr;
  bool gone_ = false;
  std::uint64_t bytes_ = 0;
};

class recording_downstream final : public http::downstream, public http::peer_listener {
 public:
  recording_downstream(http::downstream& client, jobs::memory_store& store, duration orphan_timeout)
      : client_(client), rec_(store), orphan_timeout_(orphan_timeout) {}

  task<result<void>> write(http::response& res) override { co_return co_await client_.write(res); }
  task<result<void>> write_head(bhttp::response<bhttp::empty_body>& head) override;
  void hold_head(bhttp::response<bhttp::empty_body>& head) override { client_.hold_head(head); }
  bool holds_head() const noexcept override { return !client_gone_ && client_.holds_head(); }
  task<result<void>> flush_head() override;
  task<result<void>> write_chunk(std::string_view data) override;
  task<result<void>> finish_chunks() override;
  task<result<void>> write_last_chunk(std::string_view data) override;
  [[nodiscard]] peer_watch watch_peer(http::peer_listener& l) override;
  // While the stream is recorded a client that left does not end it (orphan-timeout does).
  bool peer_gone() const noexcept override { return client_gone_ && !rec_.recording(); }
  void close() noexcept override { client_.close(); }
  bool stalled() const noexcept override { return client_.stalled(); }
  std::uint64_t bytes_written() const noexcept override { return client_.bytes_written(); }

  void on_peer_gone() noexcept override;
  response_recorder& recorder() noexcept { return rec_; }
  // After the request ended.
  void conclude(std::string_view why) { rec_.conclude(why, abandoned_); }

 protected:
  void end_watch() noexcept override;

 private:
  // The client is gone: false when the stream should stop now (not recorded, or orphaned).
  bool keep_going();
  void client_left() noexcept;

  http::downstream& client_;
  response_recorder rec_;
  const duration orphan_timeout_;
  http::peer_listener* listener_ = nullptr;
  std::optional<peer_watch> client_watch_;
  bool client_gone_ = false;
  bool abandoned_ = false;
  runtime::steady::time_point unfollowed_since_{};
};

// The response object of a new response (status queued): `id`, `model`, the request's metadata.
std::string queued_response_object(std::string_view id, std::string_view model, bool background,
                                   std::string_view request_body);
// `object` with another status (and, when given, its error {code, message}); `object` unchanged if
// it is not a JSON object.
std::string response_object_with(std::string_view object, jobs::status s, std::string_view error_code = {},
                                  std::string_view error_message = {});
// (new_response_id, is_gateway_response_id and new_random_id are request_id.hpp's.)

// The client's headers as a job replays them: all but the ones that frame this one message, and
// never a credential or cookie (Authorization, Proxy-Authorization, Cookie, X-Api-Key, Api-Key).
std::vector<std::pair<std::string, std::string>> job_headers(const http::request& req);
// Retry-After for a full job queue: the rounds of job slots ahead of a new job (the slots of
// one worker: a fleet's are not known here), 1-60 s.
std::uint64_t queue_retry_after(std::uint64_t waiting, const jobs::options& o);
// --queue redis: Redis did not answer a queue operation (503).
error queue_unavailable_error();

}  // namespace sluice::proxy
