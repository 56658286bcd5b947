// libFuzzer target for http::check_request_framing: the input is split at '\n' into the method,
// the target, a version byte and field lines "h:value" / "c:value" / "t:value" (Host,
// Content-Length, Transfer-Encoding; anything else counts as another field). Checks that the
// verdict never crashes, an accepted origin target lies inside the input's target, and an accepted
// head never carries both Transfer-Encoding and Content-Length.
// Built by fuzz/CMakeLists.txt with only the pure module (bash scripts/fuzz.sh request_framing N).
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "http/request_framing.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace sluice::http;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  std::size_t at = 0;
  while (at <= in.size()) {
    const std::size_t nl = in.find('\n', at);
    parts.push_back(in.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at));
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
  if (parts.size() < 3) return 0;
  request_head h;
  h.method = parts[0];
  h.target = parts[1];
  h.version = !parts[2].empty() && parts[2][0] == '0' ? 10 : 11;
  for (std::size_t i = 3; i < parts.size(); ++i) {
    ++h.field_count;
    const std::string_view line = parts[i];
    if (line.size() < 2 || line[1] != ':') continue;
    const std::string_view value = line.substr(2);
    if (line[0] == 'h') h.host.add(value);
    else if (line[0] == 'c') h.content_length.add(value);
    else if (line[0] == 't') h.transfer_encoding.add(value);
  }
  framing_limits limits;
  limits.max_request_line_bytes = 256;
  limits.max_header_fields = 16;
  const framing_decision d = check_request_framing(h, limits);
  if (d.accepted()) {
    if (!d.origin_target.empty() && (d.origin_target.data() < h.target.data() ||
                                     d.origin_target.data() + d.origin_target.size() > h.target.data() + h.target.size()))
      std::abort();
    if (h.transfer_encoding.count > 0 && h.content_length.count > 0) std::abort();
    if (h.version >= 11 && h.host.count != 1) std::abort();
  } else if (d.message.empty() || framing_status(d.refusal) < 400) {
    std::abort();
  }
  return 0;
}
