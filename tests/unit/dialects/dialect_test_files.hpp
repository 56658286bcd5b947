// What the dialects' unit tests read and ask alike: a corpus directory's files and cases, and a
// request translator's answer (accepted, or refused naming a field). Test code only.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "dialects/anthropic_upstream_request.hpp"

namespace sluice::dialects::testing {

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The corpus cases in `dir`: each <case>.upstream.sse's name, sorted.
inline std::vector<std::string> corpus_cases(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (auto at = name.find(".upstream.sse"); at != std::string::npos) out.push_back(name.substr(0, at));
  }
  std::sort(out.begin(), out.end());
  return out;
}

using request_translator = result<boost::json::object> (*)(const boost::json::object&, const messages_request_options&);

// The translation of `request`, which must be accepted.
inline boost::json::object accepted(request_translator translate, std::string_view request, std::uint64_t default_max_tokens = 4096) {
  auto r = translate(boost::json::parse(request).as_object(), {default_max_tokens});
  EXPECT_TRUE(static_cast<bool>(r)) << (r ? "" : r.err().message + " (" + r.err().param + ")");
  return r ? *r : boost::json::object{};
}

// The field a refusal of `request` names (a bad_request with a message).
inline std::string refused_param(request_translator translate, std::string_view request) {
  auto r = translate(boost::json::parse(request).as_object(), {});
  EXPECT_FALSE(static_cast<bool>(r)) << request;
  if (r) return "(accepted)";
  EXPECT_EQ(r.err().code, errc::bad_request);
  EXPECT_FALSE(r.err().message.empty());
  return r.err().param;
}

}  // namespace sluice::dialects::testing
