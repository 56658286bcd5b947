#include "sim/moderations.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <vector>

namespace sluice::sim {

namespace json = boost::json;

namespace {

constexpr std::string_view moderation_categories[] = {"harassment", "hate", "self-harm", "sexual", "violence"};

error refused_moderation(std::string message) { return error::make(errc::bad_request, std::move(message), "input"); }

// The texts to judge: a string, strings, or content parts (an image part is judged as no text).
result<std::vector<std::string>> texts_of(const json::value* input) {
  std::vector<std::string> out;
  if (input && input->is_string()) {
    out.emplace_back(input->get_string());
    return out;
  }
  if (!input || !input->is_array() || input->get_array().empty())
    return refused_moderation("input: a string or a non-empty array");
  for (const auto& v : input->get_array()) {
    const auto* part = v.if_object();
    if (v.is_string()) out.emplace_back(v.get_string());
    else if (part && part->contains("text") && part->at("text").is_string()) out.emplace_back(part->at("text").get_string());
    else if (part && part->contains("image_url")) out.emplace_back();
    else return refused_moderation("input: strings or content parts");
  }
  return out;
}

json::object verdict_of(std::string_view text) {
  json::object categories, scores;
  bool flagged = false;
  for (auto c : moderation_categories) {
    const bool hit = (c == "harassment" && text.find("harm") != std::string_view::npos && text.find("self-harm") == std::string_view::npos) ||
                     (c == "violence" && text.find("hurt") != std::string_view::npos);
    flagged = flagged || hit;
    categories[c] = hit;
    scores[c] = hit ? 0.9 : 0.01;
  }
  return json::object{{"flagged", flagged}, {"categories", std::move(categories)}, {"category_scores", std::move(scores)}};
}

}  // namespace

result<std::string> moderations_body(std::string_view request_body) {
  boost::system::error_code ec;
  const json::value v = json::parse(request_body, ec);
  if (ec || !v.is_object()) return refused_moderation("The request body is not a JSON object.");
  auto texts = texts_of(v.get_object().if_contains("input"));
  if (!texts) return std::move(texts).err();
  json::array results;
  for (const auto& t : *texts) results.push_back(verdict_of(t));
  const auto* model = v.get_object().if_contains("model");
  return json::serialize(json::object{{"id", "modr-sim"},
                                      {"model", model && model->is_string() ? *model : json::value("sim-moderation")},
                                      {"results", std::move(results)}});
}

}  // namespace sluice::sim
