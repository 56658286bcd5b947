#include "proxy/wire_job.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "proxy/job_sink.hpp"
#include "proxy/pipeline.hpp"
#include "proxy/request_id.hpp"

namespace sluice::proxy {

namespace json = boost::json;

namespace {

// Fields that frame one message on one connection: the front frames its own.
bool hop_by_hop(bhttp::field f) noexcept {
  switch (f) {
    case bhttp::field::connection:
    case bhttp::field::keep_alive:
    case bhttp::field::transfer_encoding:
    case bhttp::field::content_length:
    case bhttp::field::te:
    case bhttp::field::trailer:
    case bhttp::field::upgrade:
    case bhttp::field::proxy_connection: return true;
    default: return false;
  }
}

}  // namespace

std::string wire_head_text(const bhttp::fields& fields, unsigned status, bool stream) {
  json::array h;
  for (const auto& f : fields)
    if (!hop_by_hop(f.name())) h.push_back(json::array{json::string(f.name_string()), json::string(f.value())});
  json::object o;
  o["status"] = status;
  o["stream"] = stream;
  o["headers"] = std::move(h);
  return json::serialize(o);
}

std::optional<wire_head> parse_wire_head(std::string_view text) {
  error_code ec;
  auto v = json::parse(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto& o = v.as_object();
  const auto* s = o.if_contains("status");
  const auto* st = o.if_contains("stream");
  const auto* h = o.if_contains("headers");
  if (!s || !s->is_int64() || s->as_int64() < 100 || s->as_int64() > 599 || !st || !st->is_bool() || !h || !h->is_array())
    return std::nullopt;
  wire_head out;
  out.status = static_cast<unsigned>(s->as_int64());
  out.stream = st->as_bool();
  for (const auto& pair : h->as_array()) {
    if (!pair.is_array() || pair.as_array().size() != 2 || !pair.as_array()[0].is_string() || !pair.as_array()[1].is_string())
      return std::nullopt;
    out.headers.emplace_back(std::string(pair.as_array()[0].as_string()), std::string(pair.as_array()[1].as_string()));
  }
  return out;
}

std::string wire_target(bhttp::verb method, std::string_view path) {
  return std::string(bhttp::to_string(method)) + " " + std::string(path);
}

std::optional<std::pair<bhttp::verb, std::string>> parse_wire_target(std::string_view wire) {
  const auto sp = wire.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  const auto verb = bhttp::string_to_verb(wire.substr(0, sp));
  if (verb != bhttp::verb::post && verb != bhttp::verb::get) return std::nullopt;
  const auto path = wire.substr(sp + 1);
  if (!path.starts_with("/v1/")) return std::nullopt;
  return std::pair{verb, std::string(path)};
}

std::string new_job_id() { return new_random_id("job_"); }

bool wire_sink::append(std::string text) {
  bytes_ += text.size();
  if (!rec_->append(next_seq_, std::move(text))) {
    too_large_ = gone_ = true;  // the relay stops and closes the upstream
    return false;
  }
  ++next_seq_;
  return true;
}

result<void> wire_sink::stopped_result() { return error::make(errc::cancelled, "job stopped"); }

task<result<void>> wire_sink::write(http::response& res) {
  if (gone_) co_return stopped_result();
  if (!append(wire_head_text(res.base(), res.result_int(), false)) || !append(std::move(res.body())))
    co_return stopped_result();
  complete_ = true;
  co_return ok;
}

task<result<void>> wire_sink::write_head(bhttp::response<bhttp::empty_body>& head) {
  if (gone_ || !append(wire_head_text(head.base(), head.result_int(), true))) co_return stopped_result();
  co_return ok;
}

void wire_sink::hold_head(bhttp::response<bhttp::empty_body>& head) {
  held_ = wire_head_text(head.base(), head.result_int(), true);
}

task<result<void>> wire_sink::flush_head() {
  if (!held_) co_return ok;
  std::string h = std::move(*held_);
  held_.reset();
  if (gone_ || !append(std::move(h))) co_return stopped_result();
  co_return ok;
}

task<result<void>> wire_sink::write_chunk(std::string_view data) {
  if (held_) {
    std::string h = std::move(*held_);
    held_.reset();
    if (!append(std::move(h))) co_return stopped_result();
  }
  if (gone_ || !append(std::string(data))) co_return stopped_result();
  co_return ok;
}

task<result<void>> wire_sink::finish_chunks() {
  if (gone_) co_return stopped_result();
  complete_ = true;
  co_return ok;
}

task<result<void>> wire_sink::write_last_chunk(std::string_view data) {
  auto w = co_await write_chunk(data);
  if (!w) co_return w;
  co_return co_await finish_chunks();
}

http::downstream::peer_watch wire_sink::watch_peer(http::peer_listener& l) {
  listener_ = &l;
  return peer_watch(*this);
}

void wire_sink::cancel() noexcept {
  gone_ = true;
  if (auto* l = std::exchange(listener_, nullptr)) l->on_peer_gone();
}

void wire_sink::conclude(std::string_view why) {
  if (jobs::is_final(rec_->state())) return;
  const std::string object = rec_->object();
  if (complete_) return rec_->finish(jobs::status::completed, response_object_with(object, jobs::status::completed));
  if (rec_->cancel_requested()) return rec_->finish(jobs::status::cancelled, response_object_with(object, jobs::status::cancelled));
  if (too_large_)
    return rec_->finish(jobs::status::failed, response_object_with(object, jobs::status::failed, "response_too_large",
                                                                   "The answer passed response-max-bytes."));
  rec_->finish(jobs::status::failed, response_object_with(object, jobs::status::failed, why.empty() ? "stream_ended" : why,
                                                          "The answer ended before it was complete."));
}

task<void> pipeline::run_wire_job(std::shared_ptr<jobs::response_record> rec) {
  wire_sink sink(rec);
  const auto target = parse_wire_target(rec->wire());
  http::request req{target ? target->first : bhttp::verb::post, target ? target->second : std::string("/"), 11};
  for (const auto& [k, v] : rec->headers()) req.insert(k, v);
  if (target && target->first == bhttp::verb::post) {
    req.body() = rec->body();
    req.prepare_payload();
  }
  co_await run_job_in(sink, rec, req, request_id_of(req));
}

}  // namespace sluice::proxy
