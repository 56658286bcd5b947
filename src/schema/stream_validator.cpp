#include "schema/stream_validator.hpp"

#include <optional>

#include "schema/evaluator.hpp"
#include "schema/sax_handler.hpp"

namespace sluice::schema {

struct stream_validator::impl {
  std::shared_ptr<const compiled_schema> schema;
  validate_limits limits;
  detail::evaluator ev;
  boost::json::basic_parser<detail::sax_handler> parser;
  std::size_t bytes = 0;
  bool finished = false;
  std::optional<validation_error> verdict;

  impl(std::shared_ptr<const compiled_schema> s, const validate_limits& lim)
      : schema(std::move(s)), limits(lim), parser(detail::sax_parse_options(lim)) {
    start();
  }

  void start() {
    ev.reset(schema->program(), limits);
    parser.reset();
    parser.handler().bind(ev, limits.max_string_bytes);
    bytes = 0;
    finished = false;
    verdict.reset();
  }

  result<void> write(std::string_view data, bool more) {
    if (verdict) return to_error(*verdict);
    if (finished) {
      verdict = validation_error{validation_error::kind::malformed_json, "", "", "data after the end of the stream"};
      return to_error(*verdict);
    }
    boost::system::error_code ec;
    static constexpr char empty[1] = {0};
    std::size_t n = 0;
    if (!ev.complete()) n = parser.write_some(more, data.empty() ? empty : data.data(), data.size(), ec);
    // Once the document is complete the parser takes nothing more; only whitespace may follow.
    if (!ec && ev.complete()) {
      auto rest = data.substr(n);
      if (rest.find_first_not_of(" \t\r\n") != std::string_view::npos) {
        verdict = validation_error{validation_error::kind::malformed_json, "", "",
                                   "malformed JSON: data after the end of the document"};
        return to_error(*verdict);
      }
      n = data.size();
    }
    bytes += n;
    if (ev.failed()) verdict = ev.error();
    else if (ec) verdict = detail::malformed(ev, ec, bytes);
    else if (!more && !ev.complete())
      verdict = validation_error{validation_error::kind::malformed_json, ev.current_path(), "",
                                 "malformed JSON: incomplete document"};
    if (!more) finished = true;
    if (verdict) return to_error(*verdict);
    return ok;
  }
};

stream_validator::stream_validator(std::shared_ptr<const compiled_schema> schema, const validate_limits& limits)
    : impl_(std::make_unique<impl>(std::move(schema), limits)) {}
stream_validator::~stream_validator() = default;
stream_validator::stream_validator(stream_validator&&) noexcept = default;
stream_validator& stream_validator::operator=(stream_validator&&) noexcept = default;

result<void> stream_validator::feed(std::string_view delta) { return impl_->write(delta, true); }
result<void> stream_validator::finish() { return impl_->write({}, false); }
std::size_t stream_validator::bytes_seen() const noexcept { return impl_->bytes; }
const validation_error* stream_validator::violation() const noexcept {
  return impl_->verdict ? &*impl_->verdict : nullptr;
}
void stream_validator::reset() { impl_->start(); }

}  // namespace sluice::schema
