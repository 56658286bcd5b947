// Small helpers shared by the fuzz targets: a libFuzzer input as text, and cutting it at offsets
// drawn from its own bytes so that one input also chooses how it is split.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

namespace sluice::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The first byte (when there is one) picks how the rest, `text`, is cut: pieces of 1 to 17 bytes
// in a pattern that the byte seeds, so the fuzzer explores cuts as it explores contents.
struct split_input {
  std::string_view text;
  std::vector<std::size_t> cuts;  // ascending offsets into text, each in (0, text.size())
};
inline split_input split_from(std::string_view in) {
  split_input s;
  if (in.empty()) return s;
  const unsigned seed = static_cast<unsigned char>(in[0]);
  s.text = in.substr(1);
  std::size_t at = 0;
  for (std::size_t i = 0; s.text.size() > 0; ++i) {
    at += 1 + (seed * (i + 7) + i * i) % 17;
    if (at >= s.text.size()) break;
    s.cuts.push_back(at);
  }
  return s;
}

// A property that must hold: abort (a crash libFuzzer records) with a message when it does not.
inline void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz property violated: %s\n", what);
  std::abort();
}

}  // namespace sluice::fuzz
