// The form of a multipart upload route, gathered from the parser's events in bounded memory: the
// small fields (purpose, model, prompt, n, ...) kept as text, the file parts only digested and
// counted, their bytes handed to an optional sink (the file store keeps them while its budget
// allows). Pure; one collector per request, not thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "sim/bytes.hpp"
#include "sim/multipart.hpp"

namespace sluice::sim {

// The most a field that is not a file may hold, and the most parts one form may have.
inline constexpr std::size_t max_form_field_bytes = 4 * 1024;
inline constexpr std::size_t max_form_parts = 64;

struct form_field {
  std::string name, value;
};

// A file part: what it was called and what its bytes came to.
struct form_file {
  std::string field, filename, content_type;
  fnv1a_hasher digest;  // of its bytes; digest.size is its size
};

// Where a file part's bytes go besides the digest.
class file_sink {
 public:
  virtual void on_file_begin(const form_file& file) = 0;
  virtual void on_file_data(std::string_view bytes) = 0;
  virtual void on_file_end() = 0;

 protected:
  ~file_sink() = default;
};

class form_collector final : public multipart::handler {
 public:
  // `file_fields`: the names that are files even without a filename (string literals: the views
  // are kept); any part with a filename is one too.
  explicit form_collector(std::initializer_list<std::string_view> file_fields, file_sink* sink = nullptr);

  void on_part_begin(const multipart::part_head& head) override;
  void on_part_data(std::string_view bytes) override;
  void on_part_end() override;
  void on_close() override {}

  // The first field of that name, if any.
  const std::string* field(std::string_view name) const;
  // The files, in the order they came.
  const std::vector<form_file>& files() const noexcept { return files_; }
  // The first file of that field name, if any.
  const form_file* file(std::string_view field) const;
  // What made the form unacceptable so far (a field over max_form_field_bytes, too many parts):
  // a bad_request naming the field.
  const std::optional<error>& problem() const noexcept { return problem_; }

 private:
  std::vector<std::string_view> file_fields_;
  file_sink* sink_;
  std::vector<form_field> fields_;
  std::vector<form_file> files_;
  enum class current { none, field, file } current_ = current::none;
  std::optional<error> problem_;
};

}  // namespace sluice::sim
