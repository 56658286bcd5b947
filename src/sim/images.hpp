// POST /v1/images/edits and /v1/images/variations in the simulator, as pure functions: the form's
// checks, and an answer whose images are 1x1 PNGs coloured by the uploaded bytes' digest (small,
// deterministic, and real images to a client that decodes them). No I/O.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "sim/form.hpp"

namespace sluice::sim {

inline constexpr std::uint32_t max_images_per_request = 10;

struct image_request {
  bool edit = false;
  std::uint32_t n = 1;
  bool url = false;                // response_format "url": a data: URL instead of b64_json
  std::uint64_t image_bytes = 0;   // of every image part together
  std::uint64_t digest = 0;        // folds the image parts' digests in order
  std::uint64_t prompt_bytes = 0;
};

// The form: `image` (or `image[]`) file parts, at least one; `prompt` for edits; `n` 1..10;
// response_format url or b64_json. A bad_request naming the field otherwise.
result<image_request> image_request_of(const form_collector& form, bool edit);

// {"created":T,"data":[{"b64_json":"..."}...],"usage":{...}}
std::string images_body(const image_request& req, std::int64_t created);

// A 1x1 RGB PNG of that colour (0xRRGGBB).
std::string tiny_png(std::uint32_t rgb);

}  // namespace sluice::sim
