// POST /v1/embeddings in the simulator: deterministic vectors (the same input and dimensions give
// the same vector, in any process), unit length, float or base64 (little-endian float32, as the
// OpenAI SDKs ask by default), with usage. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace sluice::sim {

// The dimensions a request gets without `dimensions`, and the most it may ask for.
inline constexpr std::uint64_t default_embedding_dimensions = 16;
inline constexpr std::uint64_t max_embedding_dimensions = 4096;
// The most inputs one request may carry (OpenAI's limit).
inline constexpr std::size_t max_embedding_inputs = 2048;

// The response body, or a bad_request naming the field (`input`, `dimensions`, `encoding_format`).
// Its `model` is `model` when that is non-empty (an Azure deployment), else the body's.
result<std::string> embeddings_body(std::string_view request_body, std::string_view model = {});

}  // namespace sluice::sim
