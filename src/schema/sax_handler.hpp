// Internal: adapts boost::json::basic_parser's SAX callbacks to evaluator events, so text is
// validated while it is parsed, token by token, without building a DOM. One per parser; the
// evaluator it drives must outlive it. Include only where basic_parser is instantiated.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/system/errc.hpp>

#include "schema/evaluator.hpp"

namespace sluice::schema::detail {

struct sax_handler {
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);

  evaluator* ev = nullptr;
  std::size_t max_key_bytes = 0;
  std::string key;  // a member name split across chunks, bounded by max_key_bytes
  bool in_string = false;
  bool in_number = false;

  void bind(evaluator& e, std::size_t max_key) {
    ev = &e;
    max_key_bytes = max_key;
    key.clear();
    in_string = in_number = false;
  }

  // The evaluator has a verdict: stop the parser (the code is ours, the verdict is in ev).
  static bool check(bool ok, boost::system::error_code& ec) {
    if (!ok) ec = boost::system::errc::make_error_code(boost::system::errc::operation_canceled);
    return ok;
  }

  bool on_document_begin(boost::system::error_code&) { return true; }
  bool on_document_end(boost::system::error_code&) { return true; }
  bool on_object_begin(boost::system::error_code& ec) { return check(ev->begin_value(json_kind::object), ec); }
  bool on_object_end(std::size_t, boost::system::error_code& ec) { return check(ev->end_container(), ec); }
  bool on_array_begin(boost::system::error_code& ec) { return check(ev->begin_value(json_kind::array), ec); }
  bool on_array_end(std::size_t, boost::system::error_code& ec) { return check(ev->end_container(), ec); }

  bool on_key_part(boost::json::string_view s, std::size_t, boost::system::error_code& ec) {
    if (key.size() + s.size() > max_key_bytes) {
      ev->fail_external(validation_error::kind::limit_exceeded,
                        "a member name is longer than " + std::to_string(max_key_bytes) + " bytes");
      return check(false, ec);
    }
    key.append(s.data(), s.size());
    return true;
  }
  bool on_key(boost::json::string_view s, std::size_t, boost::system::error_code& ec) {
    bool ok;
    if (key.empty()) {
      ok = ev->key(std::string_view(s.data(), s.size()));
    } else {
      if (!on_key_part(s, 0, ec)) return false;
      ok = ev->key(key);
      key.clear();
    }
    return check(ok, ec);
  }

  bool on_string_part(boost::json::string_view s, std::size_t, boost::system::error_code& ec) {
    if (!in_string) {
      in_string = true;
      if (!ev->string_begin()) return check(false, ec);
    }
    return check(ev->string_part(std::string_view(s.data(), s.size())), ec);
  }
  bool on_string(boost::json::string_view s, std::size_t n, boost::system::error_code& ec) {
    if (!in_string) return check(ev->string_whole(std::string_view(s.data(), s.size())), ec);  // the common case
    if (!on_string_part(s, n, ec)) return false;
    in_string = false;
    return check(ev->string_end(), ec);
  }

  bool on_number_part(boost::json::string_view, boost::system::error_code& ec) {
    if (in_number) return true;
    in_number = true;
    return check(ev->number_begin(), ec);
  }
  bool finish_number(number_value v, boost::system::error_code& ec) {
    if (!in_number) return check(ev->number_value_whole(v), ec);  // the common case: one piece
    in_number = false;
    return check(ev->number_end(v), ec);
  }
  bool on_int64(std::int64_t i, boost::json::string_view, boost::system::error_code& ec) {
    return finish_number({number_value::rep::i64, i, 0, 0}, ec);
  }
  bool on_uint64(std::uint64_t u, boost::json::string_view, boost::system::error_code& ec) {
    return finish_number({number_value::rep::u64, 0, u, 0}, ec);
  }
  bool on_double(double d, boost::json::string_view, boost::system::error_code& ec) {
    return finish_number({number_value::rep::f64, 0, 0, d}, ec);
  }
  bool on_bool(bool b, boost::system::error_code& ec) { return check(ev->bool_value(b), ec); }
  bool on_null(boost::system::error_code& ec) { return check(ev->null_value(), ec); }
  bool on_comment_part(boost::json::string_view, boost::system::error_code&) { return true; }
  bool on_comment(boost::json::string_view, boost::system::error_code&) { return true; }
};

// The verdict for text the parser rejected at byte `offset`.
validation_error malformed(const evaluator& ev, const boost::system::error_code& ec, std::size_t offset);

// Parser options for validation: depth is bounded by the evaluator (validate_limits::max_depth),
// which stops the parser first, so the parser's own limit only needs to sit above it.
inline boost::json::parse_options sax_parse_options(const validate_limits& lim) {
  boost::json::parse_options opt;
  opt.max_depth = lim.max_depth + 2;
  return opt;
}

}  // namespace sluice::schema::detail
