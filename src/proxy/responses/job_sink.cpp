#include "proxy/responses/job_sink.hpp"


#include <algorithm>
#include <chrono>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "proxy/relay/event_scan.hpp"

namespace sluice::proxy {

namespace json = boost::json;

namespace {

std::string sse_text(std::string_view type, std::string_view data) {
  std::string out;
  out.reserve(type.size() + data.size() + 16);
  if (!type.empty()) out.append("event: ").append(type).append("\n");
  out.append("data: ").append(data).append("\n\n");
  return out;
}

std::optional<jobs::status> status_of(std::string_view s) {
  if (s == "queued") return jobs::status::queued;
  if (s == "in_progress") return jobs::status::in_progress;
  if (s == "completed") return jobs::status::completed;
  if (s == "failed") return jobs::status::failed;
  if (s == "cancelled") return jobs::status::cancelled;
  if (s == "incomplete") return jobs::status::incomplete;
  return std::nullopt;
}

// The message and code of an OpenAI-shaped error body; defaults when it is not one.
std::pair<std::string, std::string> error_of(std::string_view body, unsigned status) {
  std::string code = "upstream_error", message = "The upstream answered " + std::to_string(status) + ".";
  error_code ec;
  auto v = json::parse(body, ec);
  if (ec || !v.is_object()) return {code, message};
  const auto* e = v.as_object().if_contains("error");
  if (!e || !e->is_object()) return {code, message};
  if (const auto* m = e->as_object().if_contains("message"); m && m->is_string()) message = std::string(m->as_string());
  if (const auto* c = e->as_object().if_contains("code"); c && c->is_string()) code = std::string(c->as_string());
  else if (const auto* t = e->as_object().if_contains("type"); t && t->is_string()) code = std::string(t->as_string());
  return {code, message};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> job_headers(const http::request& req) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& f : req) {
    // Client credentials and cookies are never stored with a job (the client's own upstream key
    // travels apart, sealed, where it is needed: pipeline::sealed_credential).
    if (boost::beast::iequals(f.name_string(), "x-api-key") || boost::beast::iequals(f.name_string(), "api-key")) continue;
    switch (f.name()) {
      case bhttp::field::authorization:
      case bhttp::field::proxy_authorization:
      case bhttp::field::cookie:
      case bhttp::field::content_length:
      case bhttp::field::transfer_encoding:
      case bhttp::field::connection:
      case bhttp::field::keep_alive:
      case bhttp::field::host:
      case bhttp::field::expect:
      case bhttp::field::te:
      case bhttp::field::upgrade: continue;
      default: out.emplace_back(std::string(f.name_string()), std::string(f.value()));
    }
  }
  return out;
}

std::uint64_t queue_retry_after(std::uint64_t waiting, const jobs::options& o) {
  const auto slots = std::max<std::uint64_t>(1, o.worker_max_jobs);
  return std::clamp<std::uint64_t>(waiting / slots, 1, 60);
}

error queue_unavailable_error() { return error::make(errc::overloaded, "The job queue is unavailable; retry later."); }

std::string queued_response_object(std::string_view id, std::string_view model, bool background,
                                   std::string_view request_body) {
  json::object o;
  o["id"] = id;
  o["object"] = "response";
  o["created_at"] = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  o["status"] = "queued";
  o["background"] = background;
  o["model"] = model;
  o["output"] = json::array();
  o["error"] = nullptr;
  o["incomplete_details"] = nullptr;
  o["usage"] = nullptr;
  error_code ec;
  auto req = json::parse(request_body, ec);
  if (!ec && req.is_object()) {
    for (const char* k : {"instructions", "metadata", "max_output_tokens", "temperature", "top_p", "previous_response_id",
                          "tools", "tool_choice", "text", "reasoning"})
      if (const auto* v = req.as_object().if_contains(k)) o[k] = *v;
  }
  return json::serialize(o);
}

std::string response_object_with(std::string_view object, jobs::status s, std::string_view err_code,
                                  std::string_view err_message) {
  error_code ec;
  auto v = json::parse(object, ec);
  if (ec || !v.is_object()) return std::string(object);
  auto& o = v.as_object();
  o["status"] = jobs::to_string(s);
  if (!err_code.empty()) {
    json::object e;
    e["code"] = err_code;
    e["message"] = err_message;
    o["error"] = std::move(e);
  }
  return json::serialize(o);
}

response_recorder::response_recorder(std::shared_ptr<jobs::response_record> rec)
    : rec_(std::move(rec)), rewrite_(true), object_(rec_->object()) {
  error_code ec;
  auto v = json::parse(object_, ec);
  if (!ec && v.is_object())
    if (const auto* c = v.as_object().if_contains("created_at"); c && c->is_int64()) created_at_ = c->as_int64();
}

response_recorder::response_recorder(jobs::memory_store& store) : store_(&store) {}

std::string_view response_recorder::feed(std::string_view data) {
  if (malformed_) return data;
  // The relay writes whole events, so each event's own bytes are `data[from, ev.end)`; an event
  // begun in an earlier write (not expected) is stored re-serialized instead.
  const bool continued = parser_.pending_bytes() != 0;
  std::size_t from = 0;
  bool first = true;
  client_out_.clear();
  client_rewritten_ = false;
  auto fed = parser_.feed(data, [&](const sse::event_view& ev) {
    const bool whole = !(first && continued) && ev.end >= from;
    std::string_view raw = whole ? data.substr(from, ev.end - from) : std::string_view{};
    first = false;
    const std::string client_text = on_event(ev, raw);
    // The client's bytes: the relayed ones, but for an event whose response id became the gateway's.
    if (!client_text.empty() && whole) {
      if (!client_rewritten_) client_out_.assign(data.substr(0, from));
      client_rewritten_ = true;
      client_out_ += client_text;
    } else if (client_rewritten_) {
      client_out_.append(data.substr(from, ev.end - from));
    }
    from = ev.end;
    return true;
  });
  if (!fed) malformed_ = true;
  if (!client_rewritten_) return data;
  client_out_.append(data.substr(std::min(from, data.size())));
  return client_out_;
}

bool response_recorder::open(const std::string& object) {
  jobs::new_response r{id_, false, object, {}, {}, owner_, {}, upstream_id_};
  auto made = store_->create(std::move(r), false);
  auto* rec = std::get_if<std::shared_ptr<jobs::response_record>>(&made);
  store_ = nullptr;  // one try: a stream the store cannot take goes on unrecorded
  if (!rec) return false;
  if (!(*rec)->start(object)) return false;
  rec_ = std::move(*rec);
  if (on_open_) on_open_(rec_);
  return true;
}

std::string response_recorder::on_event(const sse::event_view& ev, std::string_view raw) {
  event_facts facts;
  if (!scan_event(ev.data, facts)) return {};  // not a JSON object ([DONE]): not stored
  const bool lifecycle = facts.response_object;
  if (!rec_ && !lifecycle) return {};  // a client's stream is recorded from its first lifecycle event
  std::int64_t seq = facts.sequence_number;
  const std::int64_t last = rec_ ? rec_->last_seq() : -1;
  const bool renumber = seq < 0 || seq <= last;
  if (renumber) seq = last + 1;
  std::string text;
  if (lifecycle || (renumber && rewrite_)) {
    text = rewrite(ev, raw, facts, renumber ? std::optional<std::int64_t>(seq) : std::nullopt);
    if (text.empty()) return {};
  }
  // A client's stream: its lifecycle events name the gateway's id, for the client as for the record.
  std::string client_text = lifecycle && !rewrite_ && !id_.empty() ? text : std::string{};
  if (!rec_ || too_large_) return client_text;
  if (text.empty()) text = raw.empty() ? sse_text(ev.type, ev.data) : std::string(raw);
  if (!rec_->append(seq, std::move(text))) {
    too_large_ = true;  // the client's stream goes on; its ids stay the gateway's
    return client_text;
  }
  note_terminal(facts, ev.data);
  return client_text;
}

std::string response_recorder::rewrite(const sse::event_view& ev, std::string_view raw, const event_facts& facts,
                                       std::optional<std::int64_t> seq) {
  const bool lifecycle = facts.response_object;
  error_code ec;
  auto v = json::parse(ev.data, ec);
  if (ec || !v.is_object()) return {};
  auto& o = v.as_object();
  if (seq && rewrite_) o["sequence_number"] = *seq;
  auto* r = o.if_contains("response");
  if (!lifecycle || !r || !r->is_object()) return sse_text(ev.type, json::serialize(o));
  auto& ro = r->as_object();
  // The upstream's own id, before it becomes the gateway's: a later previous_response_id naming
  // this response is mapped back to it (background.cpp).
  if (const auto* up = ro.if_contains("id"); up && up->is_string() && upstream_id_.empty()) {
    upstream_id_ = std::string(up->get_string());
    if (rec_) rec_->set_upstream_id(upstream_id_);
  }
  if (rewrite_) {
    // The response is the gateway's: its id, its creation time, stored, run in the background.
    ro["id"] = rec_->id();
    if (created_at_) ro["created_at"] = *created_at_;
    ro["store"] = true;
    ro["background"] = true;
  } else {
    // A client's stream is stored and resumed under an id of the gateway's (128 random bits),
    // never the upstream's, which may be short or sequential (docs/security.md).
    if (id_.empty()) id_ = new_response_id();
    ro["id"] = id_;
  }
  std::optional<jobs::status> s;
  if (const auto* st = ro.if_contains("status"); st && st->is_string()) s = status_of(st->as_string());
  object_ = json::serialize(ro);
  // The first lifecycle event of a client's stream opens its record: when the store cannot take
  // it, the stream goes on unrecorded (still under the gateway's id, which then finds nothing).
  if (!rec_ && store_) open(object_);
  else if (rec_ && !too_large_) rec_->set_object(object_, s);
  if (!rewrite_)
    if (std::string spliced = with_id(ev, raw, facts); !spliced.empty()) return spliced;
  return sse_text(ev.type, json::serialize(o));
}

std::string response_recorder::with_id(const sse::event_view& ev, std::string_view raw, const event_facts& facts) const {
  // The event's payload must lie in its raw bytes (one data line) and the id be written there as
  // it is; then only the id's characters change and every other byte stays the upstream's.
  const bool inside = !raw.empty() && ev.data.data() >= raw.data() && ev.data.data() + ev.data.size() <= raw.data() + raw.size();
  if (!facts.response_id.found || !inside) return {};
  const std::size_t at = static_cast<std::size_t>(ev.data.data() - raw.data()) + facts.response_id.at;
  std::string out;
  out.reserve(raw.size() + id_.size());
  out.append(raw.substr(0, at)).append(id_).append(raw.substr(at + facts.response_id.size));
  return out;
}

void response_recorder::note_terminal(const event_facts& facts, std::string_view data) {
  using tk = event_facts::type_kind;
  switch (facts.type) {
    case tk::completed: final_ = jobs::status::completed; break;
    case tk::incomplete: final_ = jobs::status::incomplete; break;
    case tk::failed: final_ = jobs::status::failed; break;
    case tk::error: {
      final_ = jobs::status::failed;
      auto [code, message] = error_of("{\"error\":" + std::string(data) + "}", 502);
      error_code_ = code;
      error_message_ = message;
      break;
    }
    default: break;
  }
}

void response_recorder::fail(std::string_view code, std::string_view message) {
  if (!rec_ || rec_->state() != jobs::status::in_progress) return;
  const std::int64_t seq = rec_->last_seq() + 1;
  rec_->append(seq, jobs::error_event_text(seq, code, message));  // may not fit: the record still ends failed
  rec_->finish(jobs::status::failed, response_object_with(object_, jobs::status::failed, code, message));
}

void response_recorder::conclude(std::string_view why, bool abandoned) {
  if (!rec_ || jobs::is_final(rec_->state())) return;
  if (rec_->cancel_requested() || abandoned) {
    rec_->finish(jobs::status::cancelled, response_object_with(object_, jobs::status::cancelled));
    return;
  }
  if (too_large_) return fail("response_too_large", "The response's events passed response-max-bytes.");
  if (malformed_) return fail("upstream_malformed", "The upstream sent a malformed event stream.");
  if (final_) {
    // The terminal event's response object is the final one; a bare error event fails it.
    if (*final_ == jobs::status::failed) {
      rec_->finish(jobs::status::failed,
                   response_object_with(object_, jobs::status::failed, error_code_.empty() ? "upstream_error" : error_code_,
                                        error_message_.empty() ? "The stream ended with an error." : error_message_));
      return;
    }
    rec_->finish(*final_, response_object_with(object_, *final_));
    return;
  }
  fail(why.empty() ? "stream_ended" : why, "The response ended before its final event.");
}

task<result<void>> job_sink::write(http::response& res) {
  // A whole answer to a streamed request: an error (the upstream's, or the gateway's own).
  bytes_ += res.body().size();
  const unsigned status = res.result_int();
  if (status / 100 == 2) {
    rec_.fail("unexpected_response", "The upstream answered without a stream.");
  } else {
    auto [code, message] = error_of(res.body(), status);
    rec_.fail(code, message);
  }
  co_return ok;
}

task<result<void>> job_sink::write_chunk(std::string_view data) {
  bytes_ += data.size();
  rec_.feed(data);
  if (rec_.stopped() || gone_) {
    gone_ = true;  // the relay stops and closes the upstream, as for a client that left
    co_return error::make(errc::cancelled, "job stopped");
  }
  co_return ok;
}

http::downstream::peer_watch job_sink::watch_peer(http::peer_listener& l) {
  listener_ = &l;
  return peer_watch(*this);
}

void job_sink::cancel() noexcept {
  gone_ = true;
  if (auto* l = std::exchange(listener_, nullptr)) l->on_peer_gone();
}

task<result<void>> recording_downstream::write_head(bhttp::response<bhttp::empty_body>& head) {
  if (client_gone_) co_return ok;
  auto w = co_await client_.write_head(head);
  if (!w) client_left();
  co_return keep_going() ? result<void>(ok) : w;
}

task<result<void>> recording_downstream::flush_head() {
  if (client_gone_) co_return ok;
  auto w = co_await client_.flush_head();
  if (!w) client_left();
  co_return keep_going() ? result<void>(ok) : w;
}

task<result<void>> recording_downstream::write_chunk(std::string_view data) {
  const std::string_view out = rec_.feed(data);
  if (!client_gone_) {
    auto w = co_await client_.write_chunk(out);
    if (!w) client_left();
  }
  if (!keep_going()) co_return error::make(errc::cancelled, "client gone");
  co_return ok;
}

task<result<void>> recording_downstream::finish_chunks() {
  if (client_gone_) co_return ok;
  auto w = co_await client_.finish_chunks();
  if (!w) client_left();
  co_return w;
}

task<result<void>> recording_downstream::write_last_chunk(std::string_view data) {
  const std::string_view out = rec_.feed(data);
  if (client_gone_) co_return ok;
  auto w = co_await client_.write_last_chunk(out);
  if (!w) client_left();
  co_return w;
}

http::downstream::peer_watch recording_downstream::watch_peer(http::peer_listener& l) {
  listener_ = &l;
  client_watch_.emplace(client_.watch_peer(*this));
  return peer_watch(*this);
}

void recording_downstream::end_watch() noexcept {
  listener_ = nullptr;
  client_watch_.reset();
}

void recording_downstream::on_peer_gone() noexcept {
  client_left();
  // Not (yet) recorded: the request ends as for any client that leaves.
  if (!rec_.recording())
    if (auto* l = std::exchange(listener_, nullptr)) l->on_peer_gone();
}

void recording_downstream::client_left() noexcept {
  if (client_gone_) return;
  client_gone_ = true;
  unfollowed_since_ = runtime::steady::now();
}

bool recording_downstream::keep_going() {
  if (!client_gone_) return true;
  if (!rec_.recording()) return false;
  if (rec_.record()->followers() != 0) {
    unfollowed_since_ = runtime::steady::now();
    return true;
  }
  // Followed through another front (--queue redis: the mirror hears of it on each append).
  unfollowed_since_ = std::max(unfollowed_since_, rec_.record()->followed_elsewhere_at());
  if (runtime::steady::now() - unfollowed_since_ < orphan_timeout_) return true;
  abandoned_ = true;  // no one came back for it
  return false;
}

}  // namespace sluice::proxy
