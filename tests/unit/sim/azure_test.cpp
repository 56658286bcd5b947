// The simulator's Azure OpenAI paths: which /openai/... path is which route and deployment, the
// deployment name rule, the api-version query rule and the api-key rule; and a deployment standing
// for the model in the parsed request and the embeddings answer; the /metrics counter.
#include "sim/azure.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <string>
#include <vector>

#include "sim/embeddings.hpp"
#include "sim/metrics.hpp"

namespace {

using namespace sluice;
using sim::azure_op;

TEST(SimAzure, DeploymentPathsNameTheirRouteAndDeployment) {
  struct row {
    std::string_view path;
    azure_op op;
    std::string_view deployment;
  };
  for (const row& r :
       {row{"/openai/deployments/gpt-4o/chat/completions", azure_op::chat, "gpt-4o"},
        row{"/openai/deployments/d1/completions", azure_op::completion, "d1"},
        row{"/openai/deployments/emb.v2_x-3/embeddings", azure_op::embeddings, "emb.v2_x-3"},
        row{"/openai/deployments/D/responses", azure_op::responses, "D"},
        row{"/openai/responses", azure_op::responses, ""}, row{"/openai/models", azure_op::models, ""}}) {
    const auto got = sim::parse_azure_path(r.path);
    ASSERT_TRUE(got.has_value()) << r.path;
    EXPECT_EQ(got->op, r.op) << r.path;
    EXPECT_EQ(got->deployment, r.deployment) << r.path;
  }
  EXPECT_EQ(sim::completion_api_of(azure_op::chat), sim::api::chat);
  EXPECT_EQ(sim::completion_api_of(azure_op::completion), sim::api::completion);
  EXPECT_EQ(sim::completion_api_of(azure_op::responses), sim::api::responses);
  EXPECT_FALSE(sim::completion_api_of(azure_op::embeddings).has_value());
  EXPECT_FALSE(sim::completion_api_of(azure_op::models).has_value());
}

TEST(SimAzure, UnknownRoutesAndBadDeploymentNamesAreNotFound) {
  const std::string longest(64, 'a'), too_long(65, 'a');
  EXPECT_TRUE(sim::parse_azure_path("/openai/deployments/" + longest + "/chat/completions").has_value());
  for (const std::string& path : std::vector<std::string>{
           "/openai", "/openai/", "/openai/deployments", "/openai/deployments/", "/openai/deployments/d",
           "/openai/deployments/d/", "/openai/deployments//chat/completions", "/openai/deployments/d/chat/completions/",
           "/openai/deployments/d/chat", "/openai/deployments/d/messages", "/openai/deployments/d/moderations",
           "/openai/deployments/a b/completions", "/openai/deployments/a%20b/completions",
           "/openai/deployments/a/b/completions", "/openai/deployments/caf\xc3\xa9/embeddings",
           "/openai/deployments/" + too_long + "/chat/completions", "/openai/v1/chat/completions",
           "/openai/models/gpt-4o", "/openai/chat/completions"})
    EXPECT_FALSE(sim::parse_azure_path(path).has_value()) << path;
  EXPECT_TRUE(sim::valid_deployment_name("a"));
  EXPECT_TRUE(sim::valid_deployment_name("My_Deploy.v1-2"));
  EXPECT_FALSE(sim::valid_deployment_name(""));
  EXPECT_FALSE(sim::valid_deployment_name(too_long));
  EXPECT_FALSE(sim::valid_deployment_name("a:b"));
  EXPECT_FALSE(sim::valid_deployment_name("a+b"));
}

TEST(SimAzure, AzurePathsAreTheOpenaiTree) {
  EXPECT_TRUE(sim::is_azure_path("/openai"));
  EXPECT_TRUE(sim::is_azure_path("/openai/"));
  EXPECT_TRUE(sim::is_azure_path("/openai/anything"));
  EXPECT_FALSE(sim::is_azure_path("/openaix"));
  EXPECT_FALSE(sim::is_azure_path("/v1/chat/completions"));
  EXPECT_FALSE(sim::is_azure_path("/v1/openai/models"));
}

TEST(SimAzure, QueryParametersAreFoundByExactName) {
  EXPECT_EQ(sim::query_param("/p?api-version=2024-10-21", "api-version"), "2024-10-21");
  EXPECT_EQ(sim::query_param("/p?a=1&api-version=x&b=2", "api-version"), "x");
  EXPECT_EQ(sim::query_param("/p?api-version", "api-version"), "");
  EXPECT_EQ(sim::query_param("/p?api-version=", "api-version"), "");
  EXPECT_EQ(sim::query_param("/p?api-version=v#frag", "api-version"), "v");
  EXPECT_FALSE(sim::query_param("/p", "api-version").has_value());
  EXPECT_FALSE(sim::query_param("/p?", "api-version").has_value());
  EXPECT_FALSE(sim::query_param("/p?api_version=1&xapi-version=2", "api-version").has_value());
}

TEST(SimAzure, EveryRequestNeedsANonEmptyApiVersion) {
  for (std::string_view target : {"/openai/models", "/openai/models?", "/openai/models?api-version=",
                                  "/openai/models?api-version", "/openai/models?version=2024-10-21"}) {
    const auto r = sim::check_azure_request({}, std::nullopt, false, target);
    ASSERT_TRUE(r.has_value()) << target;
    EXPECT_EQ(r->status, 400u);
    EXPECT_EQ(r->code, "BadRequest");
    EXPECT_NE(r->message.find("api-version"), std::string::npos) << r->message;
  }
  EXPECT_FALSE(sim::check_azure_request({}, std::nullopt, false, "/openai/models?api-version=2024-10-21"));
  EXPECT_FALSE(sim::check_azure_request({}, std::nullopt, true, "/openai/models?api-version=preview"))
      << "without a required key any credential, or none, is accepted";
}

TEST(SimAzure, TheRequiredKeyComesAsApiKey) {
  const std::string_view t = "/openai/deployments/d/chat/completions?api-version=2024-10-21";
  EXPECT_FALSE(sim::check_azure_request("k", "k", false, t));
  EXPECT_FALSE(sim::check_azure_request("k", "k", true, t)) << "an Authorization beside the right api-key is ignored";

  const auto none = sim::check_azure_request("k", std::nullopt, false, t);
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->status, 401u);
  EXPECT_EQ(none->code, "401");
  EXPECT_NE(none->message.find("missing subscription key"), std::string::npos) << none->message;

  for (const auto& [key, auth] : {std::pair<std::optional<std::string_view>, bool>{std::nullopt, true},
                                  {"other", false},
                                  {"", false},
                                  {"k ", true}}) {
    const auto r = sim::check_azure_request("k", key, auth, t);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 401u);
    EXPECT_EQ(r->code, "401");
    EXPECT_TRUE(r->message.starts_with("Access denied due to invalid subscription key or wrong API endpoint."))
        << r->message;
  }
  const auto both = sim::check_azure_request("k", std::nullopt, false, "/openai/models");
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->status, 401u) << "the key is checked before the api-version";
}

TEST(SimAzure, TheDeploymentIsTheModel) {
  const std::string_view chat = R"({"messages":[{"role":"user","content":"hi"}]})";
  EXPECT_FALSE(sim::parse_completion(sim::api::chat, chat, 1).has_value()) << "/v1 still wants a model";
  auto r = sim::parse_completion(sim::api::chat, chat, 1, "my-deploy");
  ASSERT_TRUE(r.has_value()) << r.err().message;
  EXPECT_EQ(r->model, "my-deploy");
  auto named = sim::parse_completion(sim::api::responses, R"({"model":"gpt-4o","input":"hi"})", 1, "dep");
  ASSERT_TRUE(named.has_value()) << named.err().message;
  EXPECT_EQ(named->model, "dep") << "the body's model is ignored on a deployment";
  EXPECT_EQ(named->hash, sim::parse_completion(sim::api::responses, R"({"model":"gpt-4o","input":"hi"})", 1)->hash)
      << "the same body gives the same answer on both paths";

  auto emb = sim::embeddings_body(R"({"model":"text-embedding-3-small","input":"x"})", "emb-dep");
  ASSERT_TRUE(emb.has_value());
  EXPECT_EQ(boost::json::parse(*emb).at("model").as_string(), "emb-dep");
  auto plain = sim::embeddings_body(R"({"model":"text-embedding-3-small","input":"x"})");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(boost::json::parse(*plain).at("model").as_string(), "text-embedding-3-small");
}

TEST(SimAzure, MetricsCountTheAzureRequests) {
  sim::engine_sample s;
  s.azure_requests = 4;
  const std::string text = sim::engine_metrics_text("sim-1", s);
  EXPECT_NE(text.find("# TYPE sim_azure_requests_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# HELP sim_azure_requests_total "), std::string::npos) << text;
  EXPECT_NE(text.find("\nsim_azure_requests_total{model_name=\"sim-1\"} 4\n"), std::string::npos) << text;
}

}  // namespace
