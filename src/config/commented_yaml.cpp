#include "config/commented_yaml.hpp"

#include <cctype>

namespace sluice::config {
namespace {

bool plain_safe(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) || c == '.' || c == '_' || c == '/' || c == '-' || c == '+')) return false;
  }
  // A leading '-' could read as a sequence entry, and YAML 1.1 words (null, ~, y, no...) as
  // something else than a string; quote anything that is not clearly a word, number or path.
  return text.front() != '-' && text != "null" && text != "Null" && text != "NULL";
}

// `# name: value` for a list's default, written as a YAML flow sequence.
std::string list_default(std::string_view joined) {
  std::string out = "[";
  std::size_t start = 0;
  while (start < joined.size()) {
    auto comma = joined.find(", ", start);
    auto item = joined.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (out.size() > 1) out += ", ";
    out += yaml_scalar(item);
    if (comma == std::string_view::npos) break;
    start = comma + 2;
  }
  return out + "]";
}

void append_comment(std::string& out, std::string_view text) {
  out += "# ";
  out += text;
  out += '\n';
}

}  // namespace

std::string yaml_scalar(std::string_view text) {
  if (plain_safe(text)) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string commented_yaml(const option_table& table, std::string_view title) {
  std::string out;
  std::size_t start = 0;
  while (start <= title.size()) {
    auto nl = title.find('\n', start);
    append_comment(out, title.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  for (const auto& s : table.specs()) {
    out += '\n';
    append_comment(out, s.help);
    if (s.set_node) {
      append_comment(out, s.name + ": a YAML list of maps; empty by default (see the docs)");
      continue;
    }
    const std::string value = s.is_list ? list_default(s.default_text) : yaml_scalar(s.default_text);
    append_comment(out, s.name + ": " + value);
  }
  return out;
}

}  // namespace sluice::config
