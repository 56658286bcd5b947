// The validator as a differential target: input = schema, a NUL byte, instance. When the schema
// compiles, the DOM path (validate), the text path (validate_text) and the stream path
// (stream_validator, fed in pieces the instance's length picks) must give the same verdict and,
// for the DOM and text paths, the same first error (on documents without a repeated member name,
// which the text and stream paths refuse and a DOM cannot hold).
#include <boost/json/parse.hpp>

#include "fuzz_util.hpp"
#include "schema/schema.hpp"
#include "schema/stream_validator.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace sluice::schema;
  const std::string_view in = sluice::fuzz::as_text(data, size);
  const auto nul = in.find('\0');
  if (nul == std::string_view::npos) return 0;
  boost::system::error_code ec;
  boost::json::value sv = boost::json::parse(in.substr(0, nul), ec);
  if (ec) return 0;
  auto compiled = compile(sv);
  if (!compiled) return 0;
  const std::string_view instance = in.substr(nul + 1);

  const verdict text = (*compiled)->validate_text(instance);
  stream_validator stream(*compiled);
  const std::size_t piece = 1 + instance.size() % 7;
  bool stream_ok = true;
  for (std::size_t i = 0; i < instance.size() && stream_ok; i += piece)
    stream_ok = static_cast<bool>(stream.feed(instance.substr(i, piece)));
  if (stream_ok) stream_ok = static_cast<bool>(stream.finish());
  sluice::fuzz::require(text.has_value() == !stream_ok, "text and stream paths agree on validity");

  boost::json::value iv = boost::json::parse(instance, ec);
  if (ec) {
    // (The text path may report a violation it met before the syntax error: `2"a"` against an
    // array schema is a type error at the 2. Never valid, whichever it names.)
    sluice::fuzz::require(text.has_value(), "malformed JSON is never valid on the text path");
    return 0;
  }
  // A repeated member name (as the schema `true` finds it) is never valid on the text path, and the
  // DOM kept only one of the members: nothing to compare.
  static const auto any = *compile(boost::json::value(true));
  if (const verdict plain = any->validate_text(instance);
      plain && plain->what == validation_error::kind::duplicate_member) {
    sluice::fuzz::require(text.has_value(), "a repeated member name is never valid on the text path");
    return 0;
  }
  const verdict dom = (*compiled)->validate(iv);
  sluice::fuzz::require(dom.has_value() == text.has_value(), "DOM and text paths agree on validity");
  if (dom && text && text->what != validation_error::kind::limit_exceeded &&
      dom->what != validation_error::kind::limit_exceeded) {
    sluice::fuzz::require(dom->instance_path == text->instance_path, "DOM and text: same instance path");
    sluice::fuzz::require(dom->schema_path == text->schema_path, "DOM and text: same schema path");
  }
  return 0;
}
