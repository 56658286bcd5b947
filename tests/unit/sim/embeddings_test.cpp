// The simulator's embeddings: the same input gives the same unit vector, base64 carries exactly
// the float vector (little-endian float32), usage counts the inputs, bad fields are named.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include <boost/json/parse.hpp>

#include "sim/embeddings.hpp"

namespace {

namespace json = boost::json;
using sluice::sim::embeddings_body;

json::object answer(std::string_view body) {
  auto r = embeddings_body(body);
  EXPECT_TRUE(static_cast<bool>(r)) << (r ? "" : r.err().message);
  return r ? json::parse(*r).as_object() : json::object{};
}

std::vector<float> floats_of(const json::value& embedding) {
  std::vector<float> out;
  for (const auto& v : embedding.as_array()) out.push_back(static_cast<float>(v.to_number<double>()));
  return out;
}

std::vector<float> floats_of_base64(std::string_view b64) {
  std::string bytes;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : b64) {
    if (c == '=') break;
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    acc = (acc << 6) | static_cast<std::uint32_t>(std::strchr(alphabet, c) - alphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  std::vector<float> out(bytes.size() / 4);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint32_t u = 0;
    for (int k = 3; k >= 0; --k) u = (u << 8) | static_cast<unsigned char>(bytes[4 * i + static_cast<std::size_t>(k)]);
    out[i] = std::bit_cast<float>(u);
  }
  return out;
}

TEST(SimEmbeddings, DeterministicUnitVectorsOfTheAskedDimensions) {
  const auto a = answer(R"({"model":"e","input":["hello","world"],"dimensions":32})");
  const auto b = answer(R"({ "model" : "e" , "input" : [ "hello" , "world" ] , "dimensions" : 32 })");
  EXPECT_EQ(a, b);
  const auto& data = a.at("data").as_array();
  ASSERT_EQ(data.size(), 2u);
  const auto v = floats_of(data[0].at("embedding"));
  ASSERT_EQ(v.size(), 32u);
  double norm = 0;
  for (float f : v) norm += static_cast<double>(f) * f;
  EXPECT_NEAR(norm, 1.0, 1e-5);
  EXPECT_NE(floats_of(data[1].at("embedding")), v) << "another input, another vector";
  EXPECT_EQ(a.at("usage").at("prompt_tokens"), 4);  // 2 inputs, at least one token each
  EXPECT_EQ(floats_of(answer(R"({"input":"x"})").at("data").at(0).at("embedding")).size(),
            sluice::sim::default_embedding_dimensions);
}

TEST(SimEmbeddings, Base64CarriesTheSameFloats) {
  const auto f = answer(R"({"input":"hello","dimensions":7})");
  const auto b = answer(R"({"input":"hello","dimensions":7,"encoding_format":"base64"})");
  EXPECT_EQ(floats_of_base64(b.at("data").at(0).at("embedding").as_string()), floats_of(f.at("data").at(0).at("embedding")));
}

TEST(SimEmbeddings, BadFieldsAreNamed) {
  for (const auto& [body, param] : std::vector<std::pair<std::string, std::string>>{
           {R"({})", "input"}, {R"({"input":[]})", "input"}, {R"({"input":[[1,-1]]})", "input"},
           {R"({"input":"x","dimensions":0})", "dimensions"}, {R"({"input":"x","dimensions":5000})", "dimensions"},
           {R"({"input":"x","encoding_format":"int8"})", "encoding_format"}}) {
    auto r = embeddings_body(body);
    ASSERT_FALSE(static_cast<bool>(r)) << body;
    EXPECT_EQ(r.err().param, param) << body;
  }
}

}  // namespace
