#include "proxy/relay/event_scan.hpp"

#include <cstring>

#include <boost/json/basic_parser_impl.hpp>

#include "proxy/relay/event_names.hpp"

namespace sluice::proxy {

namespace {

using boost::json::string_view;
using boost::system::error_code;

// Names are compared only when complete; a name longer than any we look for is simply not ours.
constexpr std::size_t name_cap = 40;

using namespace event_names;

class scan_handler {
 public:
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);

  scan_handler(event_facts& f, std::string_view payload) : f_(f), payload_(payload) {}

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }

  bool on_object_begin(error_code&) {
    if (depth_ == 0) top_object_ = true;
    else if (depth_ == 1) open_top_object();
    else if (depth_ == 2 && open_ == top_key::response && response_usage_) response_usage_object_ = response_usage_open_ = true;
    enter(false);
    return true;
  }
  bool on_object_end(std::size_t, error_code&) { return leave(); }
  bool on_array_begin(error_code& ec) {
    if (depth_ == 0) return fail(ec);  // the payload must be an object
    const bool choices = depth_ == 1 && top_ == top_key::choices;
    if (choices) f_.choices_array = true;
    enter(choices);
    return true;
  }
  bool on_array_end(std::size_t, error_code&) { return leave(); }

  bool on_key_part(string_view s, std::size_t, error_code&) {
    if (names_wanted()) append(s);
    return true;
  }
  bool on_key(string_view s, std::size_t, error_code&) {
    if (!names_wanted()) return true;  // a name below the levels read: nothing to compare
    std::string_view name(s.data(), s.size());
    if (name_len_ > 0) {  // the name came in parts (not with whole payloads, but allowed)
      append(s);
      name = std::string_view(name_, name_len_ <= name_cap ? name_len_ : 0);
      name_len_ = 0;
    }
    if (depth_ == 1) top_ = classify_top(name);
    else if (depth_ == 2 && open_ == top_key::response) {
      response_usage_ = name == "usage";
      response_id_ = name == "id";
    }
    else usage_ = classify_usage(name);
    return true;
  }
  bool on_string_part(string_view s, std::size_t, error_code&) {
    if (depth_ == 1 && top_ == top_key::type) append(s);
    else if (depth_ == 2) response_id_ = false;  // an id in parts (escapes) is not spliced in place
    return true;
  }
  bool on_string(string_view s, std::size_t, error_code& ec) {
    // Kept small so that the parser inlines it: only a top-level "type" is read (rare on chat).
    if (depth_ == 1 && top_ == top_key::type) [[unlikely]] read_type(s);
    else if (depth_ == 2 && response_id_ && open_ == top_key::response) [[unlikely]] note_response_id(s);
    name_len_ = 0;
    return scalar(ec);
  }
  bool on_number_part(string_view, error_code&) { return true; }
  bool on_int64(std::int64_t i, string_view, error_code& ec) {
    integer(i);
    return scalar(ec);
  }
  bool on_uint64(std::uint64_t u, string_view, error_code& ec) {
    if (u <= static_cast<std::uint64_t>(INT64_MAX)) integer(static_cast<std::int64_t>(u));
    return scalar(ec);
  }
  bool on_double(double, string_view, error_code& ec) { return scalar(ec); }
  bool on_bool(bool, error_code& ec) { return scalar(ec); }
  bool on_null(error_code& ec) { return scalar(ec); }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }

  bool top_object() const noexcept { return top_object_; }

  // Called once the document is complete: without a top-level usage object, the response's is it.
  void finish() noexcept {
    f_.response_object = response_object_;
    finish_usage(f_, top_counts_, nested_, response_usage_object_);
  }

 private:
  // The response's id, when the parser hands it over in place (a string without escapes lies in
  // the payload itself; one with escapes was unescaped into the parser's own buffer).
  [[gnu::noinline]] void note_response_id(string_view s) noexcept {
    response_id_ = false;
    const char* begin = payload_.data();
    if (s.data() < begin || s.data() + s.size() > begin + payload_.size()) return;
    const auto at = static_cast<std::size_t>(s.data() - begin);
    if (at == 0 || payload_[at - 1] != '"' || at + s.size() >= payload_.size() || payload_[at + s.size()] != '"') return;
    f_.response_id = {true, at, s.size()};
  }
  [[gnu::noinline]] void read_type(string_view s) noexcept {
    append(s);
    const auto t = classify_type(std::string_view(name_, name_len_ <= name_cap ? name_len_ : 0));
    if (t != event_facts::type_kind::none) f_.type = t;
  }
  // An integer value: a usage count (top-level usage or response.usage) or the sequence number.
  void integer(std::int64_t v) noexcept {
    if (depth_ == 1 && top_ == top_key::sequence_number) f_.sequence_number = v;
    else if (depth_ == 2 && open_ == top_key::usage) set_usage(v, top_counts_);
    else if (depth_ == 3 && response_usage_open_) set_usage(v, nested_);
  }
  void set_usage(std::int64_t v, std::int64_t* counts) const noexcept {
    if (std::int64_t* slot = usage_slot(usage_, counts)) *slot = v;
  }
  // An object as the value of a top-level member: the usage or the response object is open.
  void open_top_object() noexcept {
    if (top_ == top_key::usage) f_.usage_object = true;
    else if (top_ == top_key::response) response_object_ = true;
    else return;
    open_ = top_;
  }
  // Member names are read at the top level, directly inside the top-level usage object, directly
  // inside the top-level response object, and directly inside its usage object: in the objects
  // open now, not in others after them under the same (duplicate) name.
  bool names_wanted() const noexcept {
    return depth_ == 1 || (depth_ == 2 && open_ != top_key::other) || (depth_ == 3 && response_usage_open_);
  }
  void append(string_view s) noexcept {
    if (name_len_ + s.size() <= name_cap) std::memcpy(name_ + name_len_, s.data(), s.size());
    name_len_ += s.size();
  }
  // Called for every value: counts the elements of the top-level choices array and notes an
  // "error" member whatever its value.
  void value() noexcept {
    if (depth_ == 1 && top_ == top_key::error) f_.has_error = true;
    if (depth_ == 2 && in_choices_) ++f_.choices;
  }
  bool scalar(error_code& ec) {
    if (depth_ == 0) return fail(ec);  // a bare scalar document: not an object
    value();
    return true;
  }
  // `choices`: the container entered is the top-level choices array. Only depth 2's parent
  // matters, so the flag is kept for the container at depth 1.
  void enter(bool choices) noexcept {
    value();
    if (depth_ == 1) in_choices_ = choices;
    ++depth_;
  }
  bool leave() noexcept {
    --depth_;
    if (depth_ == 1) {
      in_choices_ = false;
      open_ = top_key::other;
    } else if (depth_ == 2) {
      response_usage_open_ = false;
    }
    return true;
  }
  static bool fail(error_code& ec) {
    ec = boost::system::errc::make_error_code(boost::system::errc::invalid_argument);
    return false;
  }

  event_facts& f_;
  std::string_view payload_;
  std::size_t depth_ = 0;
  bool top_object_ = false;
  top_key top_ = top_key::other;
  usage_key usage_ = usage_key::other;
  bool in_choices_ = false;  // the container at depth 1 is the top-level choices array
  bool response_object_ = false;        // the top-level "response" is an object
  bool response_usage_ = false;         // the last name read inside it was "usage"
  bool response_id_ = false;            // the last name read inside it was "id"
  bool response_usage_object_ = false;  // and its value is an object
  top_key open_ = top_key::other;       // the usage or the response object while it is open
  bool response_usage_open_ = false;    // response.usage while it is open
  std::int64_t top_counts_[4] = {-1, -1, -1, -1};  // usage: completion, prompt, output, input
  std::int64_t nested_[4] = {-1, -1, -1, -1};      // response.usage: the same
  char name_[name_cap];
  std::size_t name_len_ = 0;
};

}  // namespace

bool detail::scan_event_sax(std::string_view payload, event_facts& out) {
  out = event_facts{};
  boost::json::basic_parser<scan_handler> p(boost::json::parse_options{}, out, payload);
  error_code ec;
  const std::size_t n = p.write_some(false, payload.data(), payload.size(), ec);
  if (ec || n != payload.size() || !p.done() || !p.handler().top_object()) return false;
  p.handler().finish();
  return true;
}

bool scan_event(std::string_view payload, event_facts& out) {
  if (detail::skim_event(payload, out) == detail::skim_verdict::object) [[likely]]
    return true;
  return detail::scan_event_sax(payload, out);
}

}  // namespace sluice::proxy
