#include "proxy/responses/wire_job.hpp"

#include "proxy/responses/job_sink.hpp"
#include "proxy/responses/job_runner.hpp"
#include "proxy/request_id.hpp"

namespace sluice::proxy {

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

task<void> run_wire_job(job_runner& runner, std::shared_ptr<jobs::response_record> rec) {
  wire_sink sink(rec);
  const auto target = parse_wire_target(rec->wire());
  http::request req{target ? target->first : bhttp::verb::post, target ? target->second : std::string("/"), 11};
  for (const auto& [k, v] : rec->headers()) req.insert(k, v);
  if (target && target->first == bhttp::verb::post) {
    req.body() = rec->body();
    req.prepare_payload();
  }
  co_await runner.run_job_in(sink, rec, req, request_id_of(req));
}

}  // namespace sluice::proxy
