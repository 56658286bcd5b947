// The Anthropic Messages API (POST /v1/messages) served beside the OpenAI pipeline, not inside it
// (ADR 0019, docs/dialects.md). Two seams carry it:
// - adopt_messages_request rewrites the client's request into the chat-completions request the
//   pipeline already serves (the body translated, x-api-key taken as the credential), so parse,
//   authentication, admission, the attempt loop, the relay and a fleet's queue see nothing new;
// - messages_downstream is the request's downstream: what the pipeline writes in OpenAI's shapes
//   (a whole completion, an error body, a chat stream, an in-band error event) reaches the client
//   in the Messages API's, translated as it is written (a stream event by event, in bounded memory).
// One thread: the request's.
#pragma once

#include <optional>
#include <string>

#include "core/error.hpp"
#include "dialects/anthropic_stream.hpp"
#include "http/downstream.hpp"
#include "http/types.hpp"
#include "proxy/request_context.hpp"
#include "sse/parser.hpp"

namespace sluice::proxy {

namespace bhttp = boost::beast::http;

// The request is for the Messages API (its path is /v1/messages or below it).
bool is_messages_request(const http::request& req) noexcept;

// `req` becomes the equivalent POST /v1/chat/completions; or the error to answer (a wrong method
// or path, a body that is not a Messages request: each names what is wrong).
std::optional<error> adopt_messages_request(http::request& req);

class messages_downstream final : public http::downstream {
 public:
  // `ctx` names the model and the prompt estimate the stream's message_start carries.
  messages_downstream(http::downstream& client, const request_context& ctx) : client_(client), ctx_(ctx) {}

  task<result<void>> write(http::response& res) override;
  task<result<void>> write_head(bhttp::response<bhttp::empty_body>& head) override { return client_.write_head(head); }
  void hold_head(bhttp::response<bhttp::empty_body>& head) override { client_.hold_head(head); }
  bool holds_head() const noexcept override { return client_.holds_head(); }
  task<result<void>> flush_head() override { return client_.flush_head(); }
  task<result<void>> write_chunk(std::string_view data) override;
  task<result<void>> finish_chunks() override;
  task<result<void>> write_last_chunk(std::string_view data) override;
  [[nodiscard]] peer_watch watch_peer(http::peer_listener& l) override { return client_.watch_peer(l); }
  bool peer_gone() const noexcept override { return client_.peer_gone(); }
  void close() noexcept override { client_.close(); }
  bool stalled() const noexcept override { return client_.stalled(); }
  std::uint64_t bytes_written() const noexcept override { return client_.bytes_written(); }

 protected:
  // watch_peer's guard names the client's connection, which ends the watch itself.
  void end_watch() noexcept override {}

 private:
  // A whole answer in the Messages API's shape: a completion as a message, an error as its error.
  void translate_whole(http::response& res) const;
  // The chat stream's bytes `data` (whole or partial events) translated into out_.
  void translate(std::string_view data);
  // The stream's translator, made at its first event.
  dialects::chat_to_messages_stream& stream();
  dialects::message_start_info start_info() const;

  http::downstream& client_;
  const request_context& ctx_;
  std::optional<dialects::chat_to_messages_stream> stream_;
  sse::parser parser_;
  std::string out_;  // the translated bytes of the write in progress
};

}  // namespace sluice::proxy
