#include "sse/parser.hpp"

namespace sluice::sse {

void parser::reset() {
  event_bytes_ = 0;
  line_.clear();
  data_.clear();
  data_view_ = {};
  type_.clear();
  id_.clear();
  retry_.reset();
  has_data_ = false;
  skip_lf_ = false;
}

void parser::process_field(std::string_view name, std::string_view value) {
  if (name == "data") {
    if (!has_data_ && !in_line_buffer_) {  // the common one-line event: a view, no copy
      data_view_ = value.data() ? value : std::string_view("", 0);
      has_data_ = true;
      return;
    }
    keep_data();
    data_.append(value);
    data_.push_back('\n');
    has_data_ = true;
  } else if (name == "event") {
    type_.assign(value);
  } else if (name == "id") {
    if (value.find('\0') == std::string_view::npos) id_.assign(value);
  } else if (name == "retry") {
    if (value.empty() || value.size() > 9) return;
    std::uint32_t v = 0;
    for (char c : value) {
      if (c < '0' || c > '9') return;
      v = v * 10 + static_cast<std::uint32_t>(c - '0');
    }
    retry_ = v;
  }
  // Unknown fields are ignored, per spec.
}

void parser::keep_data() {
  if (!data_view_.data()) return;
  data_.assign(data_view_);
  data_.push_back('\n');
  data_view_ = {};
}

void append_event(std::string& out, std::string_view data, std::string_view type) {
  if (!type.empty()) {
    out.append("event: ");
    out.append(type);
    out.push_back('\n');
  }
  std::size_t start = 0;
  while (true) {
    auto nl = data.find('\n', start);
    out.append("data: ");
    out.append(data.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    out.push_back('\n');
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  out.push_back('\n');
}

std::string format_event(std::string_view data, std::string_view type) {
  std::string out;
  out.reserve(data.size() + type.size() + 16);
  append_event(out, data, type);
  return out;
}

}  // namespace sluice::sse
