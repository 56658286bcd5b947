// Test helper: the lines of a commented_yaml() text that set an option (`# name: value` of a
// scalar or list option of `table`), with their "# " taken off: what a user gets by uncommenting
// every option. Test-only.
#pragma once

#include <sstream>
#include <string>

#include "config/option_table.hpp"

namespace sluice::test {

inline std::string uncommented_options(const std::string& text, const config::option_table& table,
                                       std::size_t* count = nullptr) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("# ", 0) != 0) continue;
    auto body = line.substr(2);
    auto colon = body.find(": ");
    if (colon == std::string::npos) continue;
    for (const auto& s : table.specs())
      if (!s.set_node && s.name == body.substr(0, colon)) {
        out += body + "\n";
        if (count) ++*count;
      }
  }
  return out;
}

}  // namespace sluice::test
