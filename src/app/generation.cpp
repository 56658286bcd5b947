// What a generation of worker processes starts from (supervisor.hpp): its checked options with the
// keys file read once, and how long a dying worker's replacement waits.
#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>

#include "admission/client_keys.hpp"
#include "app/supervisor.hpp"

namespace sluice::app {

namespace {
constexpr auto backoff_first = std::chrono::milliseconds(250);
constexpr auto backoff_max = std::chrono::milliseconds(10'000);
}  // namespace

result<void> prepare_generation(serve_options& opts) {
  serve_options copy = opts;
  if (auto r = copy.finish_routing(); !r) return std::move(r).err();
  opts.keys_text.reset();
  if (!opts.admission.keys_file.empty()) {
    std::ifstream in(opts.admission.keys_file, std::ios::binary);
    if (!in) return error::make(errc::bad_request, "keys-file: cannot read " + opts.admission.keys_file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (auto k = admission::client_keys::parse(text); !k)
      return error::make(errc::bad_request, "keys-file " + opts.admission.keys_file + ": " + k.err().message);
    opts.keys_text = std::move(text);
  }
  return ok;
}

std::chrono::milliseconds restart_delay(unsigned quick_deaths_in_a_row) {
  if (quick_deaths_in_a_row <= 1) return std::chrono::milliseconds(0);
  const unsigned doublings = std::min(quick_deaths_in_a_row - 2, 6u);
  return std::min<std::chrono::milliseconds>(backoff_first * (1u << doublings), backoff_max);
}

}  // namespace sluice::app
