// The simulator's bounded file store, the keeper that feeds it, the Uploads registry and the JSON of
// the Files and Uploads APIs.
#include "sim/file_store.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "sim/bytes.hpp"
#include "sim/files_api.hpp"

using namespace sluice;

namespace {

std::string store_joined(const sim::file_bytes& pieces) {
  std::string out;
  for (const auto& p : pieces) out += p;
  return out;
}

}  // namespace

TEST(SimFileStore, KeepsBytesWithinTheBudget) {
  sim::file_store store(1000);
  std::string content;
  {
    sim::file_keeper k(store);
    for (int i = 0; i < 10; ++i) {
      content += std::string(60, static_cast<char>('a' + i));
      k.append(std::string(60, static_cast<char>('a' + i)));
    }
    EXPECT_TRUE(k.keeping());
    EXPECT_EQ(store.kept_bytes(), 600u) << "reserved as it arrives";
    const auto f = k.commit("a.txt", "batch", content.size(), sim::fnv1a_of(content), 7);
    ASSERT_TRUE(f.content);
    EXPECT_EQ(store_joined(*f.content), content);
    EXPECT_TRUE(f.id.starts_with("file-"));
    EXPECT_EQ(f.id.size(), 5u + 24);
  }
  EXPECT_EQ(store.kept_bytes(), 600u) << "the record owns the bytes after the keeper is gone";

  // The next file does not fit in the 400 bytes left: digest only, and its partial bytes are given back.
  sim::file_keeper k(store);
  k.append(std::string(300, 'x'));
  k.append(std::string(300, 'y'));
  EXPECT_FALSE(k.keeping());
  EXPECT_EQ(store.kept_bytes(), 600u);
  const auto g = k.commit("b.bin", "batch", 600, 42, 8);
  EXPECT_FALSE(g.content);
  EXPECT_EQ(g.bytes, 600u);
  EXPECT_EQ(store.size(), 2u);

  const auto listed = store.list(10, "");
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].id, g.id) << "newest first";
  EXPECT_EQ(store.list(1, "").size(), 1u);
  EXPECT_TRUE(store.list(10, "vision").empty());

  const auto first = listed[1].id;
  EXPECT_TRUE(store.remove(first));
  EXPECT_FALSE(store.remove(first));
  EXPECT_FALSE(store.find(first));
  EXPECT_EQ(store.kept_bytes(), 0u) << "a delete frees its bytes in the budget";
}

TEST(SimFileStore, AKeeperThatIsNotCommittedStoresNothing) {
  sim::file_store store(1 << 20);
  {
    sim::file_keeper k(store);
    k.append(std::string(200'000, 'z'));
    EXPECT_EQ(store.kept_bytes(), 200'000u);
  }
  EXPECT_EQ(store.kept_bytes(), 0u);
  EXPECT_EQ(store.size(), 0u);
}

TEST(SimFileStore, IdsAreDeterministicAndDistinct) {
  sim::file_store a(0), b(0);
  const auto a1 = a.add("x", "batch", 1, 5, nullptr, 0, 0).id;
  const auto a2 = a.add("x", "batch", 1, 5, nullptr, 0, 0).id;
  EXPECT_NE(a1, a2);
  EXPECT_EQ(b.add("x", "batch", 1, 5, nullptr, 0, 0).id, a1) << "a fresh store gives the same sequence";
}

TEST(SimUploads, CreatePartsCompleteAndCancel) {
  sim::upload_registry uploads;
  sim::file_store files(0);
  auto created = sim::create_upload(uploads, R"({"bytes":10,"filename":"f.jsonl","mime_type":"text/jsonl","purpose":"batch"})", 100);
  ASSERT_TRUE(created) << created.err().message;
  auto upload = boost::json::parse(*created).as_object();
  EXPECT_EQ(upload["status"], "pending");
  EXPECT_EQ(upload["expires_at"].as_int64(), 3700);
  const std::string id(upload["id"].as_string());
  EXPECT_TRUE(id.starts_with("upload_"));

  auto p1 = uploads.add_part(id, 4, 1, 101);
  auto p2 = uploads.add_part(id, 6, 2, 102);
  ASSERT_TRUE(p1 && p2);
  auto part = boost::json::parse(sim::upload_part_json(*p1, id)).as_object();
  EXPECT_EQ(part["object"], "upload.part");
  EXPECT_EQ(part["upload_id"].as_string(), id);
  EXPECT_FALSE(uploads.add_part("upload_nope", 1, 1, 0));

  auto short_one = sim::complete_upload(uploads, files, id, R"({"part_ids":[")" + p1->id + R"("]})", 103);
  ASSERT_FALSE(short_one);
  EXPECT_EQ(short_one.err().param, "part_ids") << "4 bytes of 10";
  auto done = sim::complete_upload(uploads, files, id, R"({"part_ids":[")" + p1->id + R"(",")" + p2->id + R"("]})", 104);
  ASSERT_TRUE(done) << done.err().message;
  auto completed = boost::json::parse(*done).as_object();
  EXPECT_EQ(completed["status"], "completed");
  EXPECT_EQ(completed["file"].at("bytes").as_int64(), 10);
  EXPECT_EQ(completed["file"].at("filename"), "f.jsonl");
  EXPECT_EQ(files.size(), 1u);
  EXPECT_FALSE(files.find(std::string(completed["file"].at("id").as_string()))->content) << "digest only";
  EXPECT_EQ(uploads.open(), 0u);

  auto again = sim::create_upload(uploads, R"({"bytes":1,"filename":"g","mime_type":"t","purpose":"batch"})", 0);
  const std::string second(boost::json::parse(*again).at("id").as_string());
  auto cancelled = sim::cancel_upload(uploads, second);
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(boost::json::parse(*cancelled).at("status"), "cancelled");
  EXPECT_EQ(sim::cancel_upload(uploads, second).err().code, errc::not_found);
}

TEST(SimUploads, RefusalsAndBounds) {
  sim::upload_registry uploads;
  auto param_of = [&uploads](std::string_view body) {
    auto r = sim::create_upload(uploads, body, 0);
    return r ? std::string("ok") : r.err().param;
  };
  EXPECT_EQ(param_of(R"({"filename":"f","mime_type":"t","purpose":"batch"})"), "bytes");
  EXPECT_EQ(param_of(R"({"bytes":1,"mime_type":"t","purpose":"batch"})"), "filename");
  EXPECT_EQ(param_of(R"({"bytes":1,"filename":"f","purpose":"batch"})"), "mime_type");
  EXPECT_EQ(param_of(R"({"bytes":1,"filename":"f","mime_type":"t","purpose":"nope"})"), "purpose");
  for (std::size_t i = 0; i < sim::upload_registry::max_open; ++i) ASSERT_TRUE(uploads.create("f", "batch", "t", 1, 0));
  EXPECT_FALSE(uploads.create("f", "batch", "t", 1, 0)) << "at most max_open open uploads";
}

TEST(SimFilesApi, ObjectsListsAndQueries) {
  sim::file_record f{"file-abc", "a.txt", "batch", 12, 3, 99, nullptr};
  auto o = boost::json::parse(sim::file_object_json(f)).as_object();
  EXPECT_EQ(o["object"], "file");
  EXPECT_EQ(o["status"], "processed");
  EXPECT_TRUE(o["expires_at"].is_null());
  EXPECT_TRUE(o["status_details"].is_null());
  auto list = boost::json::parse(sim::file_list_json({f})).as_object();
  EXPECT_EQ(list["first_id"], "file-abc");
  EXPECT_EQ(list["has_more"], false);
  EXPECT_TRUE(boost::json::parse(sim::file_list_json({})).at("first_id").is_null());
  EXPECT_EQ(boost::json::parse(sim::file_deleted_json("file-abc")).at("deleted"), true);
  EXPECT_EQ(sim::no_such_file("file-x").message, "No such File object: file-x");

  EXPECT_EQ(sim::decoded_query_param("/v1/files?purpose=fine%2Dtune&limit=2", "purpose"), "fine-tune");
  EXPECT_EQ(sim::decoded_query_param("/v1/files?a=1", "b"), std::nullopt);
  auto q = sim::parse_file_list_query("/v1/files?limit=2&purpose=batch");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->limit, 2u);
  EXPECT_EQ(q->purpose, "batch");
  EXPECT_FALSE(sim::parse_file_list_query("/v1/files?limit=0"));
  EXPECT_FALSE(sim::parse_file_list_query("/v1/files?limit=x"));
  EXPECT_TRUE(sim::valid_file_purpose("fine-tune"));
  EXPECT_FALSE(sim::valid_file_purpose("other"));
}
