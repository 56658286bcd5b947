// POST /v1/moderations in the simulator: a verdict per input, decided by words in it so that a
// test can ask for either (docs/sim.md): "harm" flags harassment, "hurt" violence; anything else
// is not flagged. Scores are 0.9 for a category found, 0.01 otherwise. Pure.
#pragma once

#include <string>
#include <string_view>

#include "core/error.hpp"

namespace sluice::sim {

// The response body, or a bad_request naming `input`.
result<std::string> moderations_body(std::string_view request_body);

}  // namespace sluice::sim
