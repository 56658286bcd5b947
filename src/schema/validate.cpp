// compiled_schema's validation entry points: a DOM walk and a SAX parse, both feeding the shared
// evaluator. Scratch state (evaluator, parser) is per thread and reused, so steady-state
// validation does not allocate.
#include <optional>

#include "schema/evaluator.hpp"
#include "schema/program.hpp"
#include "schema/sax_handler.hpp"
#include "schema/schema.hpp"

namespace sluice::schema {

namespace json = boost::json;
using detail::evaluator;
using detail::json_kind;
using detail::number_value;

namespace {

// Depth is bounded: the evaluator refuses to open a frame past validate_limits::max_depth, and
// every recursive call below first opens one.
bool walk(evaluator& ev, const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return ev.null_value();
    case json::kind::bool_: return ev.bool_value(v.get_bool());
    case json::kind::int64:
      return ev.number_begin() && ev.number_end({number_value::rep::i64, v.get_int64(), 0, 0});
    case json::kind::uint64:
      return ev.number_begin() && ev.number_end({number_value::rep::u64, 0, v.get_uint64(), 0});
    case json::kind::double_:
      return ev.number_begin() && ev.number_end({number_value::rep::f64, 0, 0, v.get_double()});
    case json::kind::string: {
      const json::string& s = v.get_string();
      return ev.string_begin() && ev.string_part(std::string_view(s.data(), s.size())) && ev.string_end();
    }
    case json::kind::array:
      if (!ev.begin_value(json_kind::array)) return false;
      for (const auto& e : v.get_array())
        if (!walk(ev, e)) return false;
      return ev.end_container();
    case json::kind::object:
      if (!ev.begin_value(json_kind::object)) return false;
      for (const auto& kv : v.get_object()) {
        if (!ev.key(std::string_view(kv.key().data(), kv.key().size())) || !walk(ev, kv.value())) return false;
      }
      return ev.end_container();
  }
  return false;
}

struct text_scratch {
  evaluator ev;
  std::size_t parser_depth = 0;
  std::optional<json::basic_parser<detail::sax_handler>> parser;

  json::basic_parser<detail::sax_handler>& parser_for(const validate_limits& lim) {
    auto opt = detail::sax_parse_options(lim);
    if (!parser || parser_depth != opt.max_depth) {
      parser.emplace(opt);
      parser_depth = opt.max_depth;
    }
    parser->reset();
    return *parser;
  }
};

}  // namespace

namespace detail {

validation_error malformed(const evaluator& ev, const boost::system::error_code& ec, std::size_t offset) {
  return {validation_error::kind::malformed_json, ev.current_path(), "",
          "malformed JSON at byte " + std::to_string(offset) + ": " + ec.message()};
}

}  // namespace detail

compiled_schema::compiled_schema(std::unique_ptr<const detail::program> p) noexcept : prog_(std::move(p)) {}
compiled_schema::~compiled_schema() = default;

std::size_t compiled_schema::estimated_bytes() const noexcept { return prog_->estimated_bytes; }
std::size_t compiled_schema::node_count() const noexcept { return prog_->nodes.size(); }
compile_purpose compiled_schema::purpose() const noexcept {
  return prog_->check_only ? compile_purpose::check_only : compile_purpose::validate;
}
dialect compiled_schema::dialect() const noexcept { return prog_->dialect; }

verdict compiled_schema::validate(const json::value& instance, const validate_limits& limits) const {
  thread_local evaluator ev;
  ev.reset(*prog_, limits);
  if (!walk(ev, instance) && ev.failed()) return ev.error();
  if (ev.failed()) return ev.error();
  return std::nullopt;
}

verdict compiled_schema::validate_text(std::string_view text, const validate_limits& limits) const {
  thread_local text_scratch s;
  s.ev.reset(*prog_, limits);
  auto& parser = s.parser_for(limits);
  parser.handler().bind(s.ev, limits.max_string_bytes);
  boost::system::error_code ec;
  std::size_t n = parser.write_some(false, text.data(), text.size(), ec);
  if (s.ev.failed()) return s.ev.error();
  if (ec) return detail::malformed(s.ev, ec, n);
  if (!s.ev.complete())
    return validation_error{validation_error::kind::malformed_json, "", "", "malformed JSON: incomplete document"};
  // The parser stops after a complete document: only whitespace may follow it (as on the stream
  // path; `{"a":1} trailing` is not JSON).
  if (text.substr(n).find_first_not_of(" \t\r\n") != std::string_view::npos)
    return validation_error{validation_error::kind::malformed_json, "", "",
                            "malformed JSON: data after the end of the document"};
  return std::nullopt;
}

error to_error(const validation_error& e) {
  std::string where = e.instance_path.empty() ? "at the root" : "at " + e.instance_path;
  std::string msg;
  switch (e.what) {
    case validation_error::kind::violation:
      msg = "output does not match the response schema " + where + ": " + e.message;
      if (!e.schema_path.empty()) msg += " (schema " + e.schema_path + ")";
      break;
    case validation_error::kind::malformed_json:
      msg = "output is not valid JSON " + where + ": " + e.message;
      break;
    case validation_error::kind::limit_exceeded:
      msg = "output exceeds a validation limit " + where + ": " + e.message;
      break;
    case validation_error::kind::duplicate_member:
      msg = "output repeats a member name " + where + ": " + e.message;
      break;
  }
  error err = error::make(errc::upstream_protocol, std::move(msg), e.instance_path);
  err.retryable = true;
  return err;
}

}  // namespace sluice::schema
