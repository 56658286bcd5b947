#include "sim/embeddings.hpp"

#include <bit>
#include <cmath>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "sim/bytes.hpp"

namespace sluice::sim {

namespace json = boost::json;

namespace {

error refused_input(std::string message, std::string param) {
  return error::make(errc::bad_request, std::move(message), std::move(param));
}

// One input as the text its vector derives from, and its token count (about 4 bytes a token; a
// token array counts its tokens).
struct embedding_input {
  std::string text;
  std::uint64_t tokens = 0;
};

result<embedding_input> input_of(const json::value& v) {
  if (v.is_string()) {
    const auto s = v.get_string();
    return embedding_input{std::string(s), std::max<std::uint64_t>(1, (s.size() + 3) / 4)};
  }
  if (!v.is_array() || v.get_array().empty()) return refused_input("each input is a string or a non-empty array of tokens", "input");
  embedding_input in;
  for (const auto& t : v.get_array()) {
    if (!t.is_int64() || t.get_int64() < 0) return refused_input("a token is a non-negative integer", "input");
    in.text += std::to_string(t.get_int64()) + ' ';
    ++in.tokens;
  }
  return in;
}

result<std::vector<embedding_input>> inputs_of(const json::object& req) {
  const auto* input = req.if_contains("input");
  if (!input) return refused_input("Missing required parameter: 'input'.", "input");
  std::vector<embedding_input> out;
  // A string, an array of tokens, or an array of either.
  const bool many = input->is_array() && !input->get_array().empty() && !input->get_array()[0].is_int64();
  if (!many) {
    auto one = input_of(*input);
    if (!one) return std::move(one).err();
    out.push_back(std::move(*one));
    return out;
  }
  if (input->get_array().size() > max_embedding_inputs) return refused_input("at most 2048 inputs", "input");
  for (const auto& v : input->get_array()) {
    auto one = input_of(v);
    if (!one) return std::move(one).err();
    out.push_back(std::move(*one));
  }
  return out;
}

// FNV-1a of the text, then a 64-bit mix per dimension: values in [-1, 1], scaled to unit length.
std::vector<float> vector_of(std::string_view text, std::uint64_t dimensions) {
  const std::uint64_t h = fnv1a_of(text);
  std::vector<float> v(dimensions);
  double norm = 0;
  for (std::uint64_t d = 0; d < dimensions; ++d) {
    std::uint64_t x = h + (d + 1) * 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    v[d] = static_cast<float>(static_cast<double>(x >> 11) / 4503599627370496.0 - 1.0);  // 2^52: [-1, 1)
    norm += static_cast<double>(v[d]) * v[d];
  }
  norm = std::sqrt(norm);
  if (norm > 0)
    for (auto& f : v) f = static_cast<float>(f / norm);
  return v;
}

// The little-endian float32 bytes, in base64 (what the SDKs decode).
std::string base64_of(const std::vector<float>& v) {
  std::string bytes;
  bytes.reserve(v.size() * 4);
  for (float f : v) {
    const auto u = std::bit_cast<std::uint32_t>(f);
    for (int i = 0; i < 4; ++i) bytes += static_cast<char>((u >> (8 * i)) & 0xff);  // little-endian
  }
  return base64_encode(bytes);
}

result<std::uint64_t> dimensions_of(const json::object& req) {
  const auto* d = req.if_contains("dimensions");
  if (!d || d->is_null()) return default_embedding_dimensions;
  if (!d->is_int64() || d->get_int64() < 1 || static_cast<std::uint64_t>(d->get_int64()) > max_embedding_dimensions)
    return refused_input("dimensions: an integer from 1 to 4096", "dimensions");
  return static_cast<std::uint64_t>(d->get_int64());
}

}  // namespace

result<std::string> embeddings_body(std::string_view request_body, std::string_view model) {
  boost::system::error_code ec;
  const json::value v = json::parse(request_body, ec);
  if (ec || !v.is_object()) return refused_input("The request body is not a JSON object.", "");
  const auto& req = v.get_object();
  auto inputs = inputs_of(req);
  if (!inputs) return std::move(inputs).err();
  auto dimensions = dimensions_of(req);
  if (!dimensions) return std::move(dimensions).err();
  const auto* format = req.if_contains("encoding_format");
  const bool base64 = format && *format == "base64";
  if (format && !format->is_null() && !base64 && *format != "float")
    return refused_input("encoding_format: float or base64", "encoding_format");
  json::array data;
  std::uint64_t tokens = 0;
  for (std::size_t i = 0; i < inputs->size(); ++i) {
    const auto vec = vector_of((*inputs)[i].text, *dimensions);
    tokens += (*inputs)[i].tokens;
    json::value embedding = base64 ? json::value(base64_of(vec)) : json::value(json::array(vec.begin(), vec.end()));
    data.push_back(json::object{{"object", "embedding"}, {"index", i}, {"embedding", std::move(embedding)}});
  }
  const auto* asked = req.if_contains("model");
  json::value named = !model.empty()                ? json::value(model)
                      : asked && asked->is_string() ? *asked
                                                    : json::value("sim-embed");
  return json::serialize(json::object{{"object", "list"},
                                      {"data", std::move(data)},
                                      {"model", std::move(named)},
                                      {"usage", json::object{{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
}

}  // namespace sluice::sim
