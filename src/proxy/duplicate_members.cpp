#include "proxy/duplicate_members.hpp"

#include <set>
#include <vector>

#include <boost/json/basic_parser_impl.hpp>

#include "core/json_text.hpp"

namespace sluice::proxy {

namespace {

using boost::json::string_view;
using boost::system::error_code;

// A SAX handler that keeps, for each open container, the names seen so far (objects) or the index
// of the next element (arrays), and stops at the first name an object already has.
class duplicate_handler {
 public:
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) { return open(true); }
  bool on_object_end(std::size_t, error_code&) { return close(); }
  bool on_array_begin(error_code&) { return open(false); }
  bool on_array_end(std::size_t, error_code&) { return close(); }
  bool on_key_part(string_view s, std::size_t, error_code&) {
    key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(string_view s, std::size_t, error_code& ec) {
    key_.append(s.data(), s.size());
    auto& top = stack_.back();
    top.name = key_;
    key_.clear();
    if (top.names.insert(top.name).second) return true;
    found_ = path();
    ec = boost::system::errc::make_error_code(boost::system::errc::file_exists);
    return false;
  }
  bool on_string_part(string_view, std::size_t, error_code&) { return true; }
  bool on_string(string_view, std::size_t, error_code&) { return value(); }
  bool on_number_part(string_view, error_code&) { return true; }
  bool on_int64(std::int64_t, string_view, error_code&) { return value(); }
  bool on_uint64(std::uint64_t, string_view, error_code&) { return value(); }
  bool on_double(double, string_view, error_code&) { return value(); }
  bool on_bool(bool, error_code&) { return value(); }
  bool on_null(error_code&) { return value(); }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }

  std::optional<std::string> found() && { return std::move(found_); }

 private:
  struct level {
    bool object;
    std::set<std::string> names;  // an object's names so far
    std::string name;             // the member being read
    std::size_t index = 0;        // an array's next element
  };
  bool open(bool object) {
    value();
    stack_.push_back(level{object, {}, {}, 0});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  // A value begins: it is the next element of an enclosing array.
  bool value() {
    if (!stack_.empty() && !stack_.back().object) ++stack_.back().index;
    return true;
  }
  // `a.b[2].c`, as OpenAI's `param` names a place.
  std::string path() const {
    std::string out;
    for (const auto& l : stack_) {
      if (l.object) {
        if (!out.empty()) out += '.';
        out += l.name;
      } else {
        // (Appended piece by piece: GCC 12 at -O3 warns falsely on "[" + std::to_string(...).)
        out += '[';
        out += std::to_string(l.index - 1);
        out += ']';
      }
    }
    return out;
  }

  std::vector<level> stack_;
  std::string key_;
  std::optional<std::string> found_;
};

}  // namespace

std::size_t parsed_members(const boost::json::value& v) noexcept {
  switch (v.kind()) {
    case boost::json::kind::array: {
      std::size_t n = 0;
      for (const auto& e : v.get_array()) n += parsed_members(e);
      return n;
    }
    case boost::json::kind::object: {
      std::size_t n = v.get_object().size();
      for (const auto& kv : v.get_object()) n += parsed_members(kv.value());
      return n;
    }
    default: return 0;
  }
}

std::size_t written_members(std::string_view text) noexcept {
  std::size_t n = 0;
  for_each_json_byte(text, [&n](char c, bool structural) { n += structural && c == ':'; });
  return n;
}

std::optional<std::string> duplicate_member(std::string_view text) {
  boost::json::parse_options po;
  po.max_depth = 64;
  boost::json::basic_parser<duplicate_handler> p(po);
  error_code ec;
  p.write_some(false, text.data(), text.size(), ec);
  return std::move(p.handler()).found();
}

}  // namespace sluice::proxy
