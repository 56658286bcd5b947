#include "sim/form.hpp"

#include <algorithm>

namespace sluice::sim {

form_collector::form_collector(std::initializer_list<std::string_view> file_fields, file_sink* sink)
    : file_fields_(file_fields), sink_(sink) {}

void form_collector::on_part_begin(const multipart::part_head& head) {
  current_ = current::none;
  if (problem_) return;
  if (fields_.size() + files_.size() >= max_form_parts) {
    problem_ = error::make(errc::bad_request, "A form may carry at most " + std::to_string(max_form_parts) + " parts.",
                           head.name);
    return;
  }
  const bool is_file = head.has_filename || std::find(file_fields_.begin(), file_fields_.end(), head.name) != file_fields_.end();
  if (!is_file) {
    fields_.push_back({head.name, {}});
    current_ = current::field;
    return;
  }
  files_.push_back({head.name, head.filename, head.content_type, {}});
  current_ = current::file;
  if (sink_) sink_->on_file_begin(files_.back());
}

void form_collector::on_part_data(std::string_view bytes) {
  if (current_ == current::file) {
    files_.back().digest.feed(bytes);
    if (sink_) sink_->on_file_data(bytes);
  } else if (current_ == current::field) {
    auto& f = fields_.back();
    if (f.value.size() + bytes.size() > max_form_field_bytes) {
      problem_ = error::make(errc::bad_request,
                             "'" + f.name + "' is longer than " + std::to_string(max_form_field_bytes) + " bytes.", f.name);
      current_ = current::none;
      return;
    }
    f.value.append(bytes);
  }
}

void form_collector::on_part_end() {
  if (current_ == current::file && sink_) sink_->on_file_end();
  current_ = current::none;
}

const std::string* form_collector::field(std::string_view name) const {
  for (const auto& f : fields_)
    if (f.name == name) return &f.value;
  return nullptr;
}

const form_file* form_collector::file(std::string_view field) const {
  for (const auto& f : files_)
    if (f.field == field) return &f;
  return nullptr;
}

}  // namespace sluice::sim
