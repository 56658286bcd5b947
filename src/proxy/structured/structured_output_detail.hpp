// Internal to the structured_output_*.cpp files: helpers more than one of them uses. Pure functions,
// thread-safe.
#pragma once

#include <string>

#include "schema/schema.hpp"

namespace sluice::proxy::output_detail {

// The verdict on an output that has no document to check (no text, not JSON, ...).
schema::validation_error no_output(std::string why);

}  // namespace sluice::proxy::output_detail
