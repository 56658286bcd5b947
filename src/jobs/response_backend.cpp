// The two response backends (response_backend.hpp).
#include "jobs/response_backend.hpp"

#include <utility>

namespace sluice::jobs {

namespace {

response_view view_of(const response_record& r) {
  return {r.owner(), r.background(), !r.wire().empty(), r.state(), r.object(), r.upstream_id()};
}

response_view view_of(stored_response&& r) {
  return {std::move(r.owner), r.background, !r.wire.empty(), r.state, std::move(r.object), std::move(r.upstream_id)};
}

// A memory record's events. The record is held while it is followed; one gone before the follow
// began (evicted) reads as missing.
class record_feed final : public event_feed {
 public:
  record_feed(std::shared_ptr<response_record> rec, net::any_io_executor ex, std::size_t batch_bytes,
              std::chrono::milliseconds recheck)
      : rec_(std::move(rec)), wake_(std::move(ex)), batch_bytes_(batch_bytes), recheck_(recheck) {
    if (rec_) rec_->follow(wake_.get_handle());
  }

  task<result<event_batch>> read_after(std::int64_t after) override {
    if (!rec_) {
      event_batch gone;
      gone.missing = true;
      gone.last_seq = after;
      co_return gone;
    }
    co_return rec_->read_after(after, batch_bytes_);
  }

  task<void> wait() override { (void)co_await wake_.wait(recheck_); }

 private:
  std::shared_ptr<response_record> rec_;
  wakeup wake_;
  std::size_t batch_bytes_;
  std::chrono::milliseconds recheck_;
};

}  // namespace

// --- memory_backend ------------------------------------------------------------------------------

task<result<std::optional<response_view>>> memory_backend::find(std::string_view id) {
  auto rec = store_.find(id);
  if (!rec) co_return std::optional<response_view>{};
  co_return std::optional<response_view>(view_of(*rec));
}

task<result<void>> memory_backend::cancel(std::string_view id, const response_view&, const object_edit& as_cancelled) {
  // The record's object at the moment it is cancelled (a running job may have changed it since).
  store_.cancel(id, [&](const response_record& r) { return as_cancelled(r.object()); });
  co_return ok;
}

task<std::unique_ptr<event_feed>> memory_backend::follow(std::string_view id) {
  auto ex = co_await net::this_coro::executor;
  co_return std::make_unique<record_feed>(store_.find(id), std::move(ex), batch_bytes_, recheck_);
}

// --- redis_backend -------------------------------------------------------------------------------

// A Redis-held response's events: the next batch is read only once the follower took the last one,
// so Redis, not this process, holds what the client has not read yet.
class redis_backend::feed final : public event_feed {
 public:
  feed(redis_backend& b, std::string id, net::any_io_executor ex) : b_(b), id_(std::move(id)), pause_(std::move(ex)) {}

  task<result<event_batch>> read_after(std::int64_t after) override {
    auto* c = b_.redis_();
    if (!c) co_return b_.failed(metrics::redis_op::read);
    auto read = co_await b_.queue_.read_after(*c, id_, after, b_.batch_events_);
    if (!read) co_return b_.failed(metrics::redis_op::read);
    co_return read;
  }

  task<void> wait() override {
    pause_.expires_after(b_.poll_);
    error_code ec;
    co_await pause_.async_wait(ec_out(ec));
  }

 private:
  redis_backend& b_;
  std::string id_;
  net::steady_timer pause_;
};

error redis_backend::failed(metrics::redis_op op) const {
  if (counts_) counts_->redis_error(op);
  return redis_unavailable();
}

task<result<std::optional<response_view>>> redis_backend::find(std::string_view id) {
  auto* c = redis_();
  if (!c) co_return failed(metrics::redis_op::read);
  auto read = co_await queue_.find(*c, id);
  if (!read) co_return failed(metrics::redis_op::read);
  if (!*read) co_return std::optional<response_view>{};
  co_return std::optional<response_view>(view_of(std::move(**read)));
}

task<result<void>> redis_backend::cancel(std::string_view id, const response_view& found, const object_edit& as_cancelled) {
  auto* c = redis_();
  if (!c) co_return failed(metrics::redis_op::cancel);
  auto done = co_await queue_.cancel(*c, id, as_cancelled(found.object));
  if (!done) co_return failed(metrics::redis_op::cancel);
  co_return ok;
}

task<std::unique_ptr<event_feed>> redis_backend::follow(std::string_view id) {
  auto ex = co_await net::this_coro::executor;
  co_return std::make_unique<feed>(*this, std::string(id), std::move(ex));
}

}  // namespace sluice::jobs
