// The keys-file parser on any text: parses or refuses with an error naming the line (never the
// key), and a parsed file authenticates exactly its own keys.
#include "admission/client_keys.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = sluice::fuzz::as_text(data, size);
  auto keys = sluice::admission::client_keys::parse(text);
  if (!keys) {
    sluice::fuzz::require(keys.err().message.find("line") != std::string::npos, "a refusal names the line");
    return 0;
  }
  // Every key line's key authenticates; a key no line holds does not. A leading UTF-8 byte-order
  // mark is the editor's, not part of the first key (as the parser reads it).
  std::size_t at = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  while (at <= text.size()) {
    auto nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(at, nl - at);
    for (std::size_t i = 0; i < line.size(); ++i)  // a comment starts at a '#' that begins a field
      if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t' || line[i - 1] == '\r')) {
        line = line.substr(0, i);
        break;
      }
    std::size_t b = line.find_first_not_of(" \t\r");
    if (b != std::string_view::npos) {
      const std::string_view key = line.substr(b, line.find_first_of(" \t\r", b) - b);
      sluice::fuzz::require(static_cast<bool>(keys->authenticate(key)), "every key of the file authenticates");
    }
    at = nl + 1;
  }
  sluice::fuzz::require(!keys->authenticate("sk-never-in-a-fuzz-input-\x01\x02") ||
                            text.find("sk-never-in-a-fuzz-input-") != std::string_view::npos,
                        "an unknown key is refused");
  return 0;
}
