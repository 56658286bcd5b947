// The JSON routes of the simulator's stored objects, family by family, as the SDKs call them:
// create, list, retrieve, update, delete, the actions, and their errors.
#include "sim/objects_api.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

using namespace sluice;

namespace {

namespace json = boost::json;
using verb = boost::beast::http::verb;

// A store of each kind, one uploaded file in the file store, and requests at a fixed time.
struct objects_fixture {
  sim::file_store files{1024};
  sim::object_store store{sim::object_family_tree()};
  std::string file_id = files.add("in.jsonl", "batch", 10, 1, nullptr, 0, 1).id;
  std::int64_t now = 1'700'000'000;

  result<std::string> call(verb method, std::string_view target, std::string_view body = {}) {
    return sim::serve_object_request(store, files, {method, target, body, now});
  }
  // The answer's JSON object; the test fails when the request does.
  json::object ok(verb method, std::string_view target, std::string_view body = {}) {
    auto r = call(method, target, body);
    EXPECT_TRUE(r) << target << ": " << (r ? "" : r.err().message);
    return r ? json::parse(*r).as_object() : json::object{};
  }
  // The refusal's HTTP status and message.
  std::pair<unsigned, std::string> fails(verb method, std::string_view target, std::string_view body = {}) {
    auto r = call(method, target, body);
    EXPECT_FALSE(r) << target << " answered " << (r ? *r : "");
    return r ? std::pair<unsigned, std::string>{200, ""} : std::pair{sim::object_error_status(r.err()), r.err().message};
  }
};

std::string objects_id(const json::object& o) { return std::string(o.at("id").as_string()); }

std::vector<std::string> objects_list_ids(const json::object& list) {
  std::vector<std::string> out;
  for (const auto& o : list.at("data").as_array()) out.emplace_back(o.at("id").as_string());
  return out;
}

}  // namespace

TEST(SimObjectsApi, BatchesCreateRetrieveListCancel) {
  objects_fixture f;
  const std::string ask = R"({"input_file_id":")" + f.file_id +
                          R"(","endpoint":"/v1/chat/completions","completion_window":"24h","metadata":{"k":"v"}})";
  const auto b = f.ok(verb::post, "/v1/batches", ask);
  EXPECT_TRUE(objects_id(b).starts_with("batch_"));
  EXPECT_EQ(b.at("object"), "batch");
  EXPECT_EQ(b.at("status"), "validating");
  EXPECT_EQ(b.at("endpoint"), "/v1/chat/completions");
  EXPECT_EQ(b.at("input_file_id"), f.file_id.c_str());
  EXPECT_EQ(b.at("created_at").as_int64(), f.now);
  EXPECT_EQ(b.at("expires_at").as_int64(), f.now + 86400);
  EXPECT_EQ(b.at("request_counts").at("total").as_int64(), 0);
  EXPECT_EQ(b.at("metadata").at("k"), "v");

  EXPECT_EQ(f.ok(verb::get, "/v1/batches/" + objects_id(b)), b);
  const auto b2 = f.ok(verb::post, "/v1/batches", ask);
  const auto list = f.ok(verb::get, "/v1/batches");
  EXPECT_EQ(list.at("object"), "list");
  EXPECT_EQ(objects_list_ids(list), (std::vector<std::string>{objects_id(b2), objects_id(b)})) << "newest first";
  EXPECT_EQ(list.at("first_id"), objects_id(b2).c_str());
  EXPECT_EQ(list.at("has_more"), false);

  const auto cancelling = f.ok(verb::post, "/v1/batches/" + objects_id(b) + "/cancel");
  EXPECT_EQ(cancelling.at("status"), "cancelling");
  EXPECT_EQ(cancelling.at("cancelling_at").as_int64(), f.now);
  EXPECT_TRUE(cancelling.at("cancelled_at").is_null());
  const auto settled = f.ok(verb::get, "/v1/batches/" + objects_id(b));
  EXPECT_EQ(settled.at("status"), "cancelled");
  EXPECT_EQ(settled.at("cancelled_at").as_int64(), f.now);
}

TEST(SimObjectsApi, BatchesRefuseWhatOpenAIRefuses) {
  objects_fixture f;
  auto [status, message] = f.fails(verb::post, "/v1/batches", R"({"endpoint":"/v1/embeddings","completion_window":"24h"})");
  EXPECT_EQ(status, 400u);
  EXPECT_EQ(message, "Missing required parameter: 'input_file_id'.");
  std::tie(status, message) = f.fails(
      verb::post, "/v1/batches", R"({"input_file_id":"file-nope","endpoint":"/v1/embeddings","completion_window":"24h"})");
  EXPECT_EQ(status, 400u);
  EXPECT_NE(message.find("no such File object: file-nope"), std::string::npos);
  EXPECT_EQ(f.fails(verb::post, "/v1/batches", "{not json").first, 400u);
  EXPECT_EQ(f.fails(verb::post, "/v1/batches", "[1]").first, 400u);
  std::tie(status, message) = f.fails(verb::get, "/v1/batches/batch_nope");
  EXPECT_EQ(status, 404u);
  EXPECT_EQ(message, "No such Batch object: batch_nope");
  EXPECT_EQ(f.fails(verb::post, "/v1/batches/batch_nope/cancel").first, 404u);
  EXPECT_EQ(f.fails(verb::delete_, "/v1/batches/batch_x").first, 405u) << "a batch is never deleted";
  EXPECT_EQ(f.fails(verb::get, "/v1/batches/batch_x/cancel").first, 405u);
  EXPECT_EQ(f.fails(verb::get, "/v1/batches/batch_x/nothing").first, 404u);
  EXPECT_EQ(f.fails(verb::get, "/v1/batches/").first, 404u);
  EXPECT_EQ(f.fails(verb::get, "/v1/batches?limit=0").first, 400u);
  EXPECT_EQ(f.fails(verb::get, "/v1/batches?order=sideways").first, 400u);
}

TEST(SimObjectsApi, ListsPageWithLimitAfterAndOrder) {
  objects_fixture f;
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(objects_id(f.ok(verb::post, "/v1/vector_stores", R"({"name":"s"})")));
  const auto first = f.ok(verb::get, "/v1/vector_stores?limit=2&order=asc");
  EXPECT_EQ(objects_list_ids(first), (std::vector<std::string>{ids[0], ids[1]}));
  EXPECT_EQ(first.at("has_more"), true);
  EXPECT_EQ(first.at("last_id"), ids[1].c_str());
  const auto next = f.ok(verb::get, "/v1/vector_stores?limit=2&order=asc&after=" + ids[1]);
  EXPECT_EQ(objects_list_ids(next), (std::vector<std::string>{ids[2], ids[3]}));
  const auto newest = f.ok(verb::get, "/v1/vector_stores?limit=3");
  EXPECT_EQ(objects_list_ids(newest), (std::vector<std::string>{ids[4], ids[3], ids[2]}));
  const auto empty = f.ok(verb::get, "/v1/vector_stores/" + ids[0] + "/files");
  EXPECT_TRUE(empty.at("data").as_array().empty());
  EXPECT_TRUE(empty.at("first_id").is_null());
}

TEST(SimObjectsApi, VectorStoresAndTheirFiles) {
  objects_fixture f;
  const auto vs = f.ok(verb::post, "/v1/vector_stores", R"({"name":"docs","file_ids":[")" + f.file_id + R"("]})");
  const std::string path = "/v1/vector_stores/" + objects_id(vs);
  EXPECT_TRUE(objects_id(vs).starts_with("vs_"));
  EXPECT_EQ(vs.at("object"), "vector_store");
  EXPECT_EQ(vs.at("status"), "completed");
  EXPECT_EQ(vs.at("file_counts").at("completed").as_int64(), 1);
  EXPECT_EQ(vs.at("file_counts").at("total").as_int64(), 1);
  EXPECT_EQ(f.fails(verb::post, "/v1/vector_stores", R"({"file_ids":["file-nope"]})").first, 400u)
      << "an unknown file fails the create, which stores nothing";
  EXPECT_EQ(f.store.objects(), 2u);

  const auto renamed = f.ok(verb::post, path, R"({"name":"manuals","metadata":{"team":"a"}})");
  EXPECT_EQ(renamed.at("name"), "manuals");
  EXPECT_EQ(renamed.at("metadata").at("team"), "a");
  EXPECT_EQ(renamed.at("created_at"), vs.at("created_at"));
  const auto search = f.ok(verb::post, path + "/search", R"({"query":"return policy"})");
  EXPECT_EQ(search.at("object"), "vector_store.search_results.page");
  EXPECT_EQ(search.at("search_query"), "return policy");
  EXPECT_TRUE(search.at("data").as_array().empty());
  EXPECT_EQ(f.fails(verb::post, path + "/search", "{}").first, 400u);

  const auto file = f.ok(verb::get, path + "/files/" + f.file_id);
  EXPECT_EQ(file.at("object"), "vector_store.file");
  EXPECT_EQ(file.at("vector_store_id"), objects_id(vs).c_str());
  EXPECT_EQ(f.ok(verb::post, path + "/files/" + f.file_id, R"({"attributes":{"a":1}})").at("attributes").at("a"), 1);
  EXPECT_EQ(f.ok(verb::get, path + "/files/" + f.file_id + "/content").at("object"), "vector_store.file_content.page");
  const auto gone = f.ok(verb::delete_, path + "/files/" + f.file_id);
  EXPECT_EQ(gone.at("object"), "vector_store.file.deleted");
  EXPECT_EQ(f.ok(verb::get, path).at("file_counts").at("total").as_int64(), 0);
  const auto again = f.ok(verb::post, path + "/files", R"({"file_id":")" + f.file_id + R"("})");
  EXPECT_EQ(objects_id(again), f.file_id) << "a vector store file's id is its file's";
  EXPECT_EQ(f.fails(verb::post, path + "/files", "{}").first, 400u);

  const auto deleted = f.ok(verb::delete_, path);
  EXPECT_EQ(deleted.at("object"), "vector_store.deleted");
  EXPECT_EQ(deleted.at("deleted"), true);
  auto [status, message] = f.fails(verb::get, path + "/files");
  EXPECT_EQ(status, 404u);
  EXPECT_EQ(message, "No such VectorStore object: " + objects_id(vs));
  EXPECT_EQ(f.store.objects(), 0u) << "its files went with it";
}

TEST(SimObjectsApi, VectorStoreFileBatches) {
  objects_fixture f;
  const auto second = f.files.add("b.txt", "assistants", 3, 2, nullptr, 0, 1).id;
  const std::string path = "/v1/vector_stores/" + objects_id(f.ok(verb::post, "/v1/vector_stores", "{}"));
  const auto fb = f.ok(verb::post, path + "/file_batches",
                       R"({"file_ids":[")" + f.file_id + R"("],"files":[{"file_id":")" + second + R"(","attributes":{"x":"y"}}]})");
  EXPECT_TRUE(objects_id(fb).starts_with("vsfb_"));
  EXPECT_EQ(fb.at("object"), "vector_store.files_batch");
  EXPECT_EQ(fb.at("status"), "completed");
  EXPECT_EQ(fb.at("file_counts").at("total").as_int64(), 2);
  EXPECT_EQ(objects_list_ids(f.ok(verb::get, path + "/file_batches/" + objects_id(fb) + "/files?order=asc")),
            (std::vector<std::string>{f.file_id, second}));
  EXPECT_EQ(f.ok(verb::get, path + "/files/" + second).at("attributes").at("x"), "y");
  EXPECT_EQ(f.ok(verb::get, path).at("file_counts").at("completed").as_int64(), 2);
  EXPECT_EQ(f.ok(verb::post, path + "/file_batches/" + objects_id(fb) + "/cancel").at("status"), "cancelled");
  EXPECT_EQ(f.fails(verb::get, path + "/file_batches").first, 405u) << "file batches are not listed";
  EXPECT_EQ(f.fails(verb::get, "/v1/vector_stores/vs_nope/file_batches/" + objects_id(fb)).first, 404u);
}

TEST(SimObjectsApi, FineTuningJobs) {
  objects_fixture f;
  EXPECT_EQ(f.fails(verb::post, "/v1/fine_tuning/jobs", R"({"model":"gpt-4o-mini"})").first, 400u);
  const auto job = f.ok(verb::post, "/v1/fine_tuning/jobs",
                        R"({"model":"gpt-4o-mini","training_file":")" + f.file_id + R"(","hyperparameters":{"n_epochs":3}})");
  const std::string path = "/v1/fine_tuning/jobs/" + objects_id(job);
  EXPECT_TRUE(objects_id(job).starts_with("ftjob-"));
  EXPECT_EQ(job.at("object"), "fine_tuning.job");
  EXPECT_EQ(job.at("status"), "queued");
  EXPECT_EQ(job.at("model"), "gpt-4o-mini");
  EXPECT_EQ(job.at("hyperparameters").at("n_epochs"), 3);
  EXPECT_EQ(job.at("hyperparameters").at("batch_size"), "auto") << "merged into the defaults";
  EXPECT_EQ(f.ok(verb::get, "/v1/fine_tuning/jobs").at("data").as_array().size(), 1u);
  EXPECT_TRUE(f.ok(verb::get, path + "/events").at("data").as_array().empty());
  EXPECT_TRUE(f.ok(verb::get, path + "/checkpoints").at("data").as_array().empty());
  EXPECT_EQ(f.fails(verb::get, "/v1/fine_tuning/jobs/ftjob-nope/events").first, 404u);
  EXPECT_EQ(f.ok(verb::post, path + "/pause").at("status"), "paused");
  EXPECT_EQ(f.ok(verb::post, path + "/resume").at("status"), "queued");
  const auto cancelled = f.ok(verb::post, path + "/cancel");
  EXPECT_EQ(cancelled.at("status"), "cancelled");
  EXPECT_EQ(cancelled.at("finished_at").as_int64(), f.now);
  EXPECT_EQ(f.fails(verb::post, path).first, 405u);
}

TEST(SimObjectsApi, ConversationsAndTheirItems) {
  objects_fixture f;
  const auto conv = f.ok(verb::post, "/v1/conversations",
                         R"({"metadata":{"topic":"demo"},"items":[{"type":"message","role":"user","content":"Hi"}]})");
  const std::string path = "/v1/conversations/" + objects_id(conv);
  EXPECT_TRUE(objects_id(conv).starts_with("conv_"));
  EXPECT_EQ(conv.at("object"), "conversation");
  EXPECT_EQ(conv.at("metadata").at("topic"), "demo");

  const auto added = f.ok(verb::post, path + "/items",
                          R"({"items":[{"role":"assistant","content":"Hello"},{"type":"function_call_output","call_id":"c1","output":"42"}]})");
  ASSERT_EQ(added.at("data").as_array().size(), 2u);
  const auto& reply = added.at("data").as_array()[0].as_object();
  EXPECT_TRUE(objects_id(reply).starts_with("msg_"));
  EXPECT_EQ(reply.at("type"), "message");
  EXPECT_EQ(reply.at("status"), "completed");
  EXPECT_EQ(reply.at("content").at(0).at("type"), "output_text");
  EXPECT_EQ(reply.at("content").at(0).at("text"), "Hello");
  EXPECT_TRUE(std::string(added.at("data").as_array()[1].at("id").as_string()).starts_with("item_"));

  const auto items = f.ok(verb::get, path + "/items?order=asc");
  ASSERT_EQ(items.at("data").as_array().size(), 3u);
  EXPECT_EQ(items.at("data").at(0).at("content").at(0).at("type"), "input_text");
  EXPECT_EQ(f.ok(verb::get, path + "/items/" + objects_id(reply)), reply);
  const auto after_delete = f.ok(verb::delete_, path + "/items/" + objects_id(reply));
  EXPECT_EQ(after_delete.at("object"), "conversation") << "an item's delete answers its conversation";
  EXPECT_EQ(f.fails(verb::get, path + "/items/" + objects_id(reply)).first, 404u);
  EXPECT_EQ(f.fails(verb::post, path + "/items", R"({"items":"no"})").first, 400u);

  EXPECT_EQ(f.ok(verb::post, path, R"({"metadata":{"topic":"other"}})").at("metadata").at("topic"), "other");
  EXPECT_EQ(f.fails(verb::get, "/v1/conversations").first, 405u) << "conversations are not listed";
  const auto gone = f.ok(verb::delete_, path);
  EXPECT_EQ(gone.at("object"), "conversation.deleted");
  auto [status, message] = f.fails(verb::get, path);
  EXPECT_EQ(status, 404u);
  EXPECT_EQ(message, "No such Conversation object: " + objects_id(conv));
}

TEST(SimObjectsApi, PathsOutsideTheFamiliesAreNotTheirs) {
  EXPECT_TRUE(sim::is_objects_path("/v1/batches"));
  EXPECT_TRUE(sim::is_objects_path("/v1/fine_tuning/jobs/ftjob-1/events"));
  EXPECT_TRUE(sim::is_objects_path("/v1/conversations/conv_1/items"));
  EXPECT_FALSE(sim::is_objects_path("/v1/batchesx"));
  EXPECT_FALSE(sim::is_objects_path("/v1/fine_tuning/checkpoints/x/permissions"));
  EXPECT_FALSE(sim::is_objects_path("/v1/files"));
  const auto t = sim::parse_object_target("/v1/vector_stores/vs_1/file_batches/vsfb_2/files");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->fam, sim::family::file_batch_files);
  EXPECT_EQ(t->ids, (std::vector<std::string_view>{"vs_1", "vsfb_2"}));
  EXPECT_FALSE(t->object);
  EXPECT_FALSE(sim::parse_object_target("/v1/vector_stores/vs_1/search/more"));
}
