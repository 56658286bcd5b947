// json_text: the one lexical fact some byte-level passes over JSON text need, whether a byte lies
// inside a string, kept in one place. Only for text a parser has already accepted (counting its
// name separators) or that the program wrote itself (respacing it): never a way to read JSON's
// meaning, which is parsed. Pure; any thread.
#pragma once

#include <string_view>

namespace sluice {

// Calls f(c, structural) for every byte c of `text`, in order; `structural` is false for the
// bytes of strings (their quotes included) and true for everything between them.
template <class F>
void for_each_json_byte(std::string_view text, F&& f) {
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      f(c, false);
    } else if (c == '"') {
      in_string = true;
      f(c, false);
    } else {
      f(c, true);
    }
  }
}

}  // namespace sluice
