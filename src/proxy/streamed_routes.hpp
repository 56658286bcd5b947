// The OpenAI routes whose bodies go through as they are (ADR 0027): audio, images, files, uploads,
// batches, vector stores, fine-tuning jobs and conversations. The gateway parses none of their
// bodies: an upload (multipart or binary) streams to the upstream as it arrives, and an answer
// streams back whatever its type (audio, file content, JSON, SSE), one bounded buffer each way.
// The table is pure data; upload_policy tells the connection which bodies to stream, and
// client_upload reads one such body for the upstream client. One thread (the request's), except
// the table and upload_policy (read-only).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "http/body_policy.hpp"
#include "http/connection.hpp"
#include "observability/metrics.hpp"
#include "upstream/client.hpp"

namespace sluice::proxy {

namespace bhttp = boost::beast::http;

struct streamed_route {
  bhttp::verb method;
  std::string_view pattern;  // "/v1/files/{id}/content": each {id} one path segment
  obs::route route;          // its metric label (and its name in the `routes:` allow-list)
  bool upload;               // the request body streams (multipart or binary); else whole JSON or none
  bool stores;               // it acts on objects stored in the upstream's account (the tenant rule)
};

// Every row of the table, for docs and tests.
std::span<const streamed_route> streamed_route_table() noexcept;

// The row for `method` and `path` (no query). `path_known`: some row has the path with another
// method (a 405 rather than a 404). Every {id} must be a plausible id: letters, digits, '_', '-',
// '.', at most 128 bytes, never "." or "..". Pure.
const streamed_route* find_streamed_route(bhttp::verb method, std::string_view path, bool& path_known) noexcept;

// DELETE /v1/models/{model}: a fine-tuned model of the upstream's account (a stored object). Its id
// is a model id (`ft:gpt-4o-mini:org::id`), checked by the model routes' own rule, not {id}'s.
const streamed_route& model_delete_route() noexcept;

// Idempotent methods may be retried and failed over after the request reached an upstream; a
// POST only when no byte of it did (ADR 0027).
bool may_replay(bhttp::verb method, bool reached_upstream) noexcept;

// The bodies the connection streams: an upload route's, under max-upload-bytes.
class upload_policy final : public http::body_policy {
 public:
  explicit upload_policy(std::uint64_t max_upload_bytes) noexcept : cap_(max_upload_bytes) {}
  std::uint64_t streamed_body_cap(const http::request& head) const noexcept override;

 private:
  std::uint64_t cap_;
};

// A client's streamed body as the upstream client's body source: what it read and how it failed.
class client_upload final : public upstream::body_source {
 public:
  explicit client_upload(http::connection& c) noexcept : conn_(c) {}
  task<result<std::size_t>> read_some(char* dst, std::size_t cap) override;
  std::optional<std::uint64_t> length() const noexcept override { return conn_.body_length(); }
  std::uint64_t bytes() const noexcept { return conn_.body_bytes_read(); }
  // The client's side failed (it left, stalled, sent too much or broken framing).
  const std::optional<error>& failure() const noexcept { return failure_; }

 private:
  http::connection& conn_;
  std::optional<error> failure_;
};

}  // namespace sluice::proxy
