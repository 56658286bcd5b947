#include "jobs/response_store.hpp"

#include <algorithm>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

namespace sluice::jobs {

std::string error_event_text(std::int64_t seq, std::string_view code, std::string_view message) {
  boost::json::object e;
  e["type"] = "error";
  e["sequence_number"] = seq;
  e["code"] = code;
  e["message"] = message;
  e["param"] = nullptr;
  return "event: error\ndata: " + boost::json::serialize(e) + "\n\n";
}

std::string_view to_string(status s) noexcept {
  switch (s) {
    case status::queued: return "queued";
    case status::in_progress: return "in_progress";
    case status::completed: return "completed";
    case status::failed: return "failed";
    case status::cancelled: return "cancelled";
    case status::incomplete: return "incomplete";
  }
  return "failed";
}

namespace {
// What one record costs beyond its strings (map node, control block, deque blocks): a fixed guess
// so that many tiny records still count.
constexpr std::uint64_t record_overhead = 512;
}  // namespace

response_record::response_record(new_response r, std::uint64_t max_bytes)
    : id_(std::move(r.id)),
      background_(r.background),
      headers_(std::move(r.headers)),
      body_(std::move(r.body)),
      owner_(std::move(r.owner)),
      wire_(std::move(r.wire)),
      max_bytes_(max_bytes),
      object_(std::move(r.object)),
      upstream_id_(std::move(r.upstream_id)) {}

status response_record::state() const {
  std::lock_guard l(mu_);
  return status_;
}

std::string response_record::object() const {
  std::lock_guard l(mu_);
  return object_;
}

std::string response_record::upstream_id() const {
  std::lock_guard l(mu_);
  return upstream_id_;
}

void response_record::set_upstream_id(std::string_view id) {
  std::lock_guard l(mu_);
  if (upstream_id_.empty()) upstream_id_ = id;
}

event_batch response_record::read_after(std::int64_t after, std::size_t max_bytes) const {
  event_batch out;
  out.last_seq = after;
  std::lock_guard l(mu_);
  auto it = std::upper_bound(events_.begin(), events_.end(), after,
                             [](std::int64_t v, const stored_event& e) { return v < e.seq; });
  std::size_t taken = 0;
  for (; it != events_.end(); ++it) {
    if (!out.events.empty() && taken + it->text.size() > max_bytes) break;
    taken += it->text.size();
    out.events.push_back(it->text);
    out.seqs.push_back(it->seq);
    out.last_seq = it->seq;
  }
  out.finished = is_final(status_) && it == events_.end();
  return out;
}

void response_record::follow(wakeup::handle h) {
  std::lock_guard l(mu_);
  std::erase_if(followers_, [](const wakeup::handle& f) { return f.expired(); });
  followers_.push_back(std::move(h));
}

void response_record::watch(wakeup::handle h) {
  std::lock_guard l(mu_);
  std::erase_if(watchers_, [](const wakeup::handle& f) { return f.expired(); });
  watchers_.push_back(std::move(h));
}

std::size_t response_record::followers() const {
  std::lock_guard l(mu_);
  return static_cast<std::size_t>(std::count_if(followers_.begin(), followers_.end(),
                                                 [](const wakeup::handle& f) { return !f.expired(); }));
}

std::uint64_t response_record::bytes() const {
  std::uint64_t head = 0;
  for (const auto& [k, v] : headers_) head += k.size() + v.size();
  std::lock_guard l(mu_);
  return record_overhead + head + id_.size() + body_.size() + owner_.size() + object_.size() + event_bytes_;
}

bool response_record::start(std::string object) {
  std::lock_guard l(mu_);
  if (status_ != status::queued || cancel_requested_) return false;
  status_ = status::in_progress;
  const auto delta = static_cast<std::int64_t>(object.size()) - static_cast<std::int64_t>(object_.size());
  object_ = std::move(object);
  account(delta);
  return true;
}

bool response_record::append(std::int64_t seq, std::string text) {
  std::lock_guard l(mu_);
  if (event_bytes_ + text.size() > max_bytes_) return false;
  event_bytes_ += text.size();
  account(static_cast<std::int64_t>(text.size()));
  events_.push_back({seq, std::move(text)});
  notify_followers_locked();
  return true;
}

std::int64_t response_record::last_seq() const {
  std::lock_guard l(mu_);
  return events_.empty() ? -1 : events_.back().seq;
}

void response_record::set_object(std::string object, std::optional<status> s) {
  std::lock_guard l(mu_);
  if (is_final(status_)) return;
  const auto delta = static_cast<std::int64_t>(object.size()) - static_cast<std::int64_t>(object_.size());
  object_ = std::move(object);
  account(delta);
  if (s && !is_final(*s)) status_ = *s;
}

void response_record::finish(status s, std::string object) {
  std::lock_guard l(mu_);
  if (is_final(status_)) return;
  status_ = cancel_requested_ ? status::cancelled : s;
  const auto delta = static_cast<std::int64_t>(object.size()) - static_cast<std::int64_t>(object_.size());
  object_ = std::move(object);
  account(delta);
  finished_at_ = runtime::steady::now();
  stop_ = nullptr;
  notify_followers_locked();
}

void response_record::on_cancel(std::function<void()> stop) {
  std::function<void()> now;
  {
    std::lock_guard l(mu_);
    if (cancel_requested_ && stop) now = stop;  // cancelled between start() and here
    stop_ = std::move(stop);
  }
  if (now) now();
}

bool response_record::cancel(std::string cancelled_object) {
  std::function<void()> stop;
  {
    std::lock_guard l(mu_);
    if (is_final(status_)) return false;
    cancel_requested_ = true;
    if (status_ == status::queued) {
      status_ = status::cancelled;
      const auto delta =
          static_cast<std::int64_t>(cancelled_object.size()) - static_cast<std::int64_t>(object_.size());
      object_ = std::move(cancelled_object);
      account(delta);
      finished_at_ = runtime::steady::now();
      notify_followers_locked();
      return true;
    }
    stop = stop_;
  }
  if (stop) stop();  // outside the lock: it posts to the job's thread
  return true;
}

bool response_record::cancel_requested() const {
  std::lock_guard l(mu_);
  return cancel_requested_;
}

runtime::steady::time_point response_record::finished_at() const {
  std::lock_guard l(mu_);
  return finished_at_;
}

void response_record::followed_elsewhere(runtime::steady::time_point at) noexcept {
  auto seen = followed_elsewhere_.load(std::memory_order_relaxed);
  const auto t = at.time_since_epoch().count();
  while (t > seen && !followed_elsewhere_.compare_exchange_weak(seen, t, std::memory_order_relaxed)) {
  }
}

runtime::steady::time_point response_record::followed_elsewhere_at() const noexcept {
  return runtime::steady::time_point(runtime::steady::duration(followed_elsewhere_.load(std::memory_order_relaxed)));
}

void response_record::notify_followers_locked() {
  for (const auto& f : followers_) f.notify();
  for (const auto& w : watchers_) w.notify();
}

void response_record::account(std::int64_t delta) {
  if (!store_ || delta == 0) return;
  store_->bytes_.fetch_add(static_cast<std::uint64_t>(delta), std::memory_order_relaxed);  // wraps for a negative
}

memory_store::memory_store(const options& opts) : opts_(opts) {}

std::variant<std::shared_ptr<response_record>, store_refusal> memory_store::create(new_response r, bool queue) {
  auto rec = std::make_shared<response_record>(std::move(r), opts_.response_max_bytes);
  const std::uint64_t need = rec->bytes();
  std::vector<wakeup::handle> wake;
  {
    std::lock_guard l(mu_);
    if (records_.count(rec->id())) return store_refusal::duplicate;
    if (queue && queue_.size() >= opts_.jobs_max_waiting) return store_refusal::queue_full;
    if (!make_room_locked(need)) return store_refusal::store_full;
    rec->store_ = this;
    bytes_.fetch_add(need, std::memory_order_relaxed);
    records_.emplace(rec->id(), rec);
    if (index_) index_(rec->id(), true);
    if (queue) {
      queue_.push_back(rec);
      // Wake one idle runner (a stale handle, from a runner that left, is skipped).
      while (!idle_runners_.empty()) {
        auto h = std::move(idle_runners_.back());
        idle_runners_.pop_back();
        if (!h.expired()) {
          wake.push_back(std::move(h));
          break;
        }
      }
    }
  }
  for (const auto& h : wake) h.notify();
  return rec;
}

std::shared_ptr<response_record> memory_store::find(std::string_view id) const {
  std::lock_guard l(mu_);
  auto it = records_.find(std::string(id));
  return it == records_.end() ? nullptr : it->second;
}

std::shared_ptr<response_record> memory_store::take_job() {
  std::lock_guard l(mu_);
  while (!queue_.empty()) {
    auto rec = std::move(queue_.front());
    queue_.pop_front();
    if (rec->state() == status::queued) return rec;
  }
  return nullptr;
}

void memory_store::wait_for_job(wakeup::handle h) {
  bool now = false;
  {
    std::lock_guard l(mu_);
    if (queue_.empty()) {
      // A runner re-registers after every idle wait: one entry per live runner, never more.
      std::erase_if(idle_runners_, [&](const wakeup::handle& r) { return r.expired() || r.same_as(h); });
      idle_runners_.push_back(std::move(h));
    } else {
      now = true;
    }
  }
  if (now) h.notify();
}

std::shared_ptr<response_record> memory_store::cancel(
    std::string_view id, const std::function<std::string(const response_record&)>& cancelled_object) {
  std::shared_ptr<response_record> rec;
  {
    std::lock_guard l(mu_);
    auto it = records_.find(std::string(id));
    if (it == records_.end()) return nullptr;
    rec = it->second;
    if (rec->state() == status::queued) std::erase(queue_, rec);
  }
  rec->cancel(cancelled_object(*rec));
  return rec;
}

std::size_t memory_store::sweep(runtime::steady::time_point now) {
  std::lock_guard l(mu_);
  std::size_t dropped = 0;
  for (auto it = records_.begin(); it != records_.end();) {
    const auto& r = *it->second;
    const auto at = r.finished_at();
    if (is_final(r.state()) && at != runtime::steady::time_point{} && now - at >= opts_.response_retention) {
      auto next = std::next(it);
      erase_locked(it);
      it = next;
      ++dropped;
    } else {
      ++it;
    }
  }
  return dropped;
}

bool memory_store::make_room_locked(std::uint64_t need) {
  auto fits = [&] {
    return records_.size() + 1 <= opts_.memory_responses &&
           bytes_.load(std::memory_order_relaxed) + need <= opts_.memory_response_bytes;
  };
  if (fits()) return true;
  // Finished records, oldest first.
  std::vector<std::pair<runtime::steady::time_point, std::string>> done;
  for (const auto& [id, r] : records_)
    if (is_final(r->state())) done.emplace_back(r->finished_at(), id);
  std::sort(done.begin(), done.end());
  for (const auto& d : done) {
    if (fits()) break;
    auto it = records_.find(d.second);
    erase_locked(it);
    evicted_.fetch_add(1, std::memory_order_relaxed);
  }
  return fits();
}

void memory_store::erase_locked(std::unordered_map<std::string, std::shared_ptr<response_record>>::iterator it) {
  auto& rec = it->second;
  bytes_.fetch_sub(rec->bytes(), std::memory_order_relaxed);
  {
    std::lock_guard l(rec->mu_);
    rec->store_ = nullptr;  // a follower still holding it no longer counts against the store
  }
  if (index_) index_(it->first, false);
  records_.erase(it);
}

std::size_t memory_store::stored() const {
  std::lock_guard l(mu_);
  return records_.size();
}

std::size_t memory_store::idle_runners() const {
  std::lock_guard l(mu_);
  return idle_runners_.size();
}

std::size_t memory_store::waiting() const {
  std::lock_guard l(mu_);
  return queue_.size();
}

}  // namespace sluice::jobs
