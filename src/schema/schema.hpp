// JSON Schema (drafts 2020-12, 2019-09 and 07, the subset used for structured outputs; the root
// `$schema` picks the dialect, 2020-12 without one): compile once under hard
// limits, then validate many instances. A compiled_schema is immutable and safe to share across
// threads; validate()/validate_text() are const and reentrant (per-thread scratch buffers).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "core/error.hpp"

namespace sluice::schema {

namespace detail {
struct program;
}

// Bounds on what compile() accepts. Anything past a bound is refused with errc::bad_request and
// `param` set to the JSON pointer of the offending place in the schema, so hostile schemas cost
// bounded time and memory. The first four are the limits OpenAI documents for strict schemas.
struct compile_limits {
  std::size_t max_depth = 10;             // nested value levels (properties/items/... inside each other),
                                          // counted through $ref targets (docs/schema.md, "Limits")
  std::size_t max_properties = 5000;      // distinct member names each object schema mentions
                                          // (properties, required, dependentRequired), in total
  std::size_t max_enum_values = 1000;     // values under `enum`, in total
  std::size_t max_total_chars = 120000;   // characters (code points) of property names, $defs names and
                                          // the strings of enum and const values, in total
  std::size_t max_nodes = 10000;          // compiled subschemas
  std::size_t max_expansion = 1000;       // subschemas one value can activate in place (allOf/$ref fan-out)
  std::size_t max_json_depth = 64;        // raw JSON nesting of the schema document
  std::size_t max_json_values = 200000;   // JSON values in the schema document
  std::size_t max_pattern_bytes = 4096;   // length of one `pattern`/`patternProperties` regex
  std::size_t max_pattern_program = 4000; // RE2 program size of one regex (instructions)
  std::size_t max_pattern_memory = 1 << 20;  // RE2 max_mem of one regex (bounds its DFA cache)
};

// What a schema is compiled for. `validate`: output is checked against it, so every keyword must
// be one sluice asserts; anything else is refused, never silently ignored. `check_only`: nothing is
// ever validated against it (a tool's parameter schema, forwarded to the model): its structure,
// local $refs and the compile_limits are checked, while keywords and `format` values sluice does
// not know are annotations and regexes are not compiled (docs/schema.md). A check_only schema
// validates less than it says and must not be used for validation.
enum class compile_purpose : unsigned char { validate, check_only };

// The JSON Schema dialect a document is read in, chosen by its root `$schema` (none: 2020-12).
// Where the drafts give a keyword different meanings (array-form `items`, `$ref` siblings), the
// compiled schema follows its own draft (docs/schema.md, "Dialects").
enum class dialect : unsigned char { draft7, draft2019_09, draft2020_12 };

// Bounds on one validation (a document or a stream). Past a bound the verdict is an error of
// kind limit_exceeded, never unbounded work or memory.
struct validate_limits {
  std::size_t max_depth = 128;                  // instance nesting
  std::size_t max_string_bytes = 64 * 1024;     // a string buffered for `pattern`/`format`, or a key
  std::size_t max_active_evaluations = 8192;    // subschema evaluations alive at once
  std::size_t max_unique_items = 100000;        // items remembered for one `uniqueItems` array, or
                                                // member names for one object (duplicates)
};

struct validation_error {
  // duplicate_member: an object names the same member twice. JSON parsers disagree on what that
  // means (one keeps the first, JavaScript's JSON.parse the last, the text path would see both), so
  // the text and stream paths refuse it outright (RFC 7493, I-JSON); a DOM has already lost it.
  enum class kind { violation, malformed_json, limit_exceeded, duplicate_member };
  kind what = kind::violation;
  std::string instance_path;  // JSON pointer into the instance ("" is the root)
  std::string schema_path;    // JSON pointer of the failing keyword in the schema document
  std::string message;
};

// Maps a verdict to the gateway's error vocabulary: the model's output broke its contract, which a
// retry may fix (errc::upstream_protocol, retryable). `param` carries the instance path.
error to_error(const validation_error& e);

// Empty when the instance is valid; otherwise the first error found.
using verdict = std::optional<validation_error>;

class compiled_schema {
 public:
  explicit compiled_schema(std::unique_ptr<const detail::program> p) noexcept;
  ~compiled_schema();
  compiled_schema(const compiled_schema&) = delete;
  compiled_schema& operator=(const compiled_schema&) = delete;

  verdict validate(const boost::json::value& instance, const validate_limits& limits = {}) const;
  // Parses (SAX, no DOM is built) and validates in one pass; malformed JSON is an error too.
  verdict validate_text(std::string_view json_text, const validate_limits& limits = {}) const;

  // Estimated heap footprint, used by schema_cache's byte bound.
  std::size_t estimated_bytes() const noexcept;
  std::size_t node_count() const noexcept;
  compile_purpose purpose() const noexcept;
  schema::dialect dialect() const noexcept;
  const detail::program& program() const noexcept { return *prog_; }

 private:
  std::unique_ptr<const detail::program> prog_;
};

// Compiles `schema` or explains (with a JSON pointer in error::param) why it is refused:
// malformed, unsupported keyword, or over a compile_limits bound. Bounded time and memory.
result<std::shared_ptr<const compiled_schema>> compile(const boost::json::value& schema,
                                                       const compile_limits& limits = {},
                                                       compile_purpose purpose = compile_purpose::validate);

// The canonical text of a JSON value: object keys sorted by their UTF-8 bytes, no whitespace,
// numbers spelled one way (1, 1.0 and 1e0 all become "1"). Equal schemas give equal text.
std::string canonical_json(const boost::json::value& v);

}  // namespace sluice::schema
