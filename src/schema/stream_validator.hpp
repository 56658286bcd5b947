// Incremental validation of a JSON document that arrives in pieces (a model's streamed output):
// each feed() parses and checks only the new bytes, so a violation is reported by the first
// delta that contains the offending token. Memory is bounded by the schema and nesting depth
// (validate_limits), not by the output size. One instance per stream; not thread-safe. It holds
// the compiled schema by shared_ptr, so cache eviction cannot invalidate it mid-stream.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "core/error.hpp"
#include "schema/schema.hpp"

namespace sluice::schema {

class stream_validator {
 public:
  explicit stream_validator(std::shared_ptr<const compiled_schema> schema, const validate_limits& limits = {});
  ~stream_validator();
  stream_validator(stream_validator&&) noexcept;
  stream_validator& operator=(stream_validator&&) noexcept;

  // Parses and checks `delta`. An error (see to_error) is final: the same error is returned by
  // every later call, and violation() describes it.
  result<void> feed(std::string_view delta);
  // The output has ended: an incomplete document is an error.
  result<void> finish();

  // Bytes accepted by the parser so far.
  std::size_t bytes_seen() const noexcept;
  // The structured verdict once feed()/finish() failed; nullptr while everything is valid.
  const validation_error* violation() const noexcept;
  // Starts a new document against the same schema, keeping buffers.
  void reset();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace sluice::schema
