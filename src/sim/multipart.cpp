#include "sim/multipart.hpp"

#include <algorithm>

namespace sluice::sim::multipart {
namespace {

bool same_ascii(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    const char y = b[i] >= 'A' && b[i] <= 'Z' ? static_cast<char>(b[i] - 'A' + 'a') : b[i];
    if (x != y) return false;
  }
  return true;
}

std::string_view trim_space(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// One `key=value` parameter of a header (Content-Type, Content-Disposition), taken from the front
// of `rest` (which starts after a ';'). Quoted values lose their quotes; a backslash escapes a quote
// or a backslash (as curl writes them) and is kept before anything else (a Windows path).
struct header_param {
  std::string key, value;
};

header_param next_param(std::string_view& rest) {
  header_param p;
  rest = trim_space(rest);
  const auto eq = rest.find_first_of("=;");
  p.key = std::string(trim_space(rest.substr(0, eq)));
  if (eq == std::string_view::npos || rest[eq] == ';') {
    rest = eq == std::string_view::npos ? std::string_view{} : rest.substr(eq + 1);
    return p;
  }
  rest = trim_space(rest.substr(eq + 1));
  if (!rest.empty() && rest.front() == '"') {
    std::size_t i = 1;
    for (; i < rest.size() && rest[i] != '"'; ++i) {
      if (rest[i] == '\\' && i + 1 < rest.size() && (rest[i + 1] == '"' || rest[i + 1] == '\\')) ++i;
      p.value += rest[i];
    }
    rest = rest.substr(std::min(rest.size(), i + 1));
    const auto semi = rest.find(';');
    rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
  } else {
    const auto semi = rest.find(';');
    p.value = std::string(trim_space(rest.substr(0, semi)));
    rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
  }
  return p;
}

// RFC 5987's ext-value (charset'language'percent-encoded), as filename* carries it.
std::string decode_ext_value(std::string_view v) {
  const auto first = v.find('\'');
  const auto second = first == std::string_view::npos ? first : v.find('\'', first + 1);
  if (second != std::string_view::npos) v = v.substr(second + 1);
  auto nibble = [](char c) -> int {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
  };
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '%' && i + 2 < v.size() && nibble(v[i + 1]) >= 0 && nibble(v[i + 2]) >= 0) {
      out += static_cast<char>(nibble(v[i + 1]) * 16 + nibble(v[i + 2]));
      i += 2;
    } else {
      out += v[i];
    }
  }
  return out;
}

// Content-Disposition: form-data; name="..."; filename="..." into `out`.
bool take_disposition(std::string_view value, part_head& out) {
  const auto semi = value.find(';');
  if (!same_ascii(trim_space(value.substr(0, semi)), "form-data")) return false;
  std::string_view rest = semi == std::string_view::npos ? std::string_view{} : value.substr(semi + 1);
  bool extended = false;
  while (!rest.empty()) {
    header_param p = next_param(rest);
    if (same_ascii(p.key, "name")) {
      out.name = std::move(p.value);
    } else if (same_ascii(p.key, "filename") && !extended) {
      out.filename = std::move(p.value);
      out.has_filename = true;
    } else if (same_ascii(p.key, "filename*")) {
      out.filename = decode_ext_value(p.value);
      out.has_filename = extended = true;
    }
  }
  return !out.name.empty();
}

}  // namespace

std::string_view describe(failure f) noexcept {
  switch (f) {
    case failure::none: return "no error";
    case failure::no_boundary: return "The multipart boundary is missing, empty or longer than 70 characters.";
    case failure::bad_delimiter: return "A multipart boundary line is malformed.";
    case failure::headers_too_long: return "A multipart part's headers exceed 8KiB.";
    case failure::bad_header: return "A multipart part has a malformed header line.";
    case failure::missing_name: return "A multipart part has no Content-Disposition: form-data name.";
    case failure::truncated: return "The multipart body ended before its closing boundary.";
  }
  return "Malformed multipart body.";
}

failure parse_part_head(std::string_view block, part_head& out) {
  out = part_head{};
  // Unfold continuation lines (a line starting with a space or tab continues the one before).
  std::string unfolded;
  unfolded.reserve(block.size());
  for (std::size_t i = 0; i < block.size(); ++i) {
    if (block.substr(i).starts_with("\r\n") && i + 2 < block.size() && (block[i + 2] == ' ' || block[i + 2] == '\t')) {
      ++i;
      continue;
    }
    unfolded += block[i];
  }
  bool disposition = false;
  std::string_view rest = unfolded;
  while (!rest.empty()) {
    const auto eol = rest.find("\r\n");
    const std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view{} : rest.substr(eol + 2);
    if (line.empty()) continue;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return failure::bad_header;
    const auto name = trim_space(line.substr(0, colon));
    const auto value = trim_space(line.substr(colon + 1));
    if (same_ascii(name, "content-disposition")) disposition = take_disposition(value, out);
    else if (same_ascii(name, "content-type")) out.content_type = std::string(value);
  }
  return disposition ? failure::none : failure::missing_name;
}

std::optional<std::string> boundary_of(std::string_view content_type) {
  const auto semi = content_type.find(';');
  if (!same_ascii(trim_space(content_type.substr(0, semi)), "multipart/form-data") || semi == std::string_view::npos)
    return std::nullopt;
  std::string_view rest = content_type.substr(semi + 1);
  while (!rest.empty()) {
    header_param p = next_param(rest);
    if (!same_ascii(p.key, "boundary")) continue;
    if (p.value.empty() || p.value.size() > max_boundary) return std::nullopt;
    return p.value;
  }
  return std::nullopt;
}

parser::parser(std::string_view boundary) : delimiter_("\r\n--") {
  if (boundary.empty() || boundary.size() > max_boundary) fail(failure::no_boundary);
  delimiter_ += boundary;
  // The body is read as if a CRLF came before it, so a first boundary at its very start is found
  // by the same search as every later one.
  held_ = "\r\n";
  window_.reserve(2 * delimiter_.size());
}

failure parser::feed(std::string_view in, handler& h) {
  while (!in.empty() && error_ == failure::none) {
    switch (state_) {
      case state::preamble:
      case state::body: in = scan(in, h); break;
      case state::headers: in = take_headers(in, h); break;
      case state::epilogue: return error_;  // ignored, as RFC 2046 says
      default: in = take_delimiter_line(in, h); break;
    }
  }
  return error_;
}

failure parser::finish() {
  if (error_ == failure::none && state_ != state::epilogue) fail(failure::truncated);
  return error_;
}

void parser::emit(std::string_view data, handler& h) {
  if (state_ == state::body && !data.empty()) h.on_part_data(data);
}

void parser::found_delimiter(handler& h) {
  if (state_ == state::body) h.on_part_end();
  state_ = state::delimiter_line;
}

// Data (or preamble) up to the next delimiter. What might be the start of a delimiter at the end of
// `in` is held back for the next feed.
std::string_view parser::scan(std::string_view in, handler& h) {
  if (!held_.empty()) return scan_held(in, h);
  const auto at = in.find(delimiter_);
  if (at != std::string_view::npos) {
    emit(in.substr(0, at), h);
    found_delimiter(h);
    return in.substr(at + delimiter_.size());
  }
  // The longest suffix of `in` that is a proper prefix of the delimiter (which starts with '\r').
  std::size_t from = in.size() - std::min(in.size(), delimiter_.size() - 1);
  for (; from < in.size(); ++from)
    if (in[from] == '\r' && std::string_view(delimiter_).starts_with(in.substr(from))) break;
  emit(in.substr(0, from), h);
  held_.assign(in.substr(from));
  return {};
}

// The held bytes and the start of `in`, looked at together: a delimiter that starts in the held
// bytes is found here; one that starts in `in` is left to scan().
std::string_view parser::scan_held(std::string_view in, handler& h) {
  const std::size_t k = held_.size();
  window_.assign(held_);
  window_.append(in.substr(0, std::min(in.size(), delimiter_.size())));
  const std::string_view window = window_, delimiter = delimiter_;
  for (std::size_t p = 0; p < k; ++p) {
    const std::string_view tail = window.substr(p);
    if (tail.size() >= delimiter.size() && tail.starts_with(delimiter)) {
      emit(std::string_view(held_).substr(0, p), h);
      held_.clear();
      found_delimiter(h);
      return in.substr(p + delimiter.size() - k);
    }
    if (tail.size() < delimiter.size() && delimiter.starts_with(tail)) {
      // All of `in` is in the window and may still begin a delimiter: hold it too.
      emit(std::string_view(held_).substr(0, p), h);
      held_.assign(tail);
      return {};
    }
  }
  emit(held_, h);
  held_.clear();
  return in;
}

// After a delimiter: "--" closes the body; otherwise optional spaces or tabs, then CRLF.
std::string_view parser::take_delimiter_line(std::string_view in, handler& h) {
  const char c = in.front();
  const bool blank = c == ' ' || c == '\t';
  switch (state_) {
    case state::delimiter_line:
      if (c == '-') state_ = state::close_dash;
      else if (blank) state_ = state::padding;
      else if (c == '\r') state_ = state::expect_lf;
      else fail(failure::bad_delimiter);
      break;
    case state::close_dash:
      if (c != '-') {
        fail(failure::bad_delimiter);
        break;
      }
      state_ = state::epilogue;
      h.on_close();
      break;
    case state::padding:
      if (c == '\r') state_ = state::expect_lf;
      else if (!blank) fail(failure::bad_delimiter);
      break;
    default:  // expect_lf
      if (c != '\n') {
        fail(failure::bad_delimiter);
        break;
      }
      headers_.clear();
      state_ = state::headers;
      break;
  }
  return in.substr(1);
}

// A part's header block, up to the blank line that ends it.
std::string_view parser::take_headers(std::string_view in, handler& h) {
  for (std::size_t i = 0; i < in.size(); ++i) {
    headers_ += in[i];
    if (headers_.size() > max_part_headers) {
      fail(failure::headers_too_long);
      return {};
    }
    if (in[i] != '\n' || (headers_ != "\r\n" && !headers_.ends_with("\r\n\r\n"))) continue;
    part_head head;
    if (const auto f = parse_part_head(headers_, head); f != failure::none) {
      fail(f);
      return {};
    }
    state_ = state::body;
    h.on_part_begin(head);
    return in.substr(i + 1);
  }
  return {};
}

}  // namespace sluice::sim::multipart
