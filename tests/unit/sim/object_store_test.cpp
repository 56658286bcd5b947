// The simulator's generic store of stored objects: collections under parents, ids, order and
// pages, replacement, cascading removal and the bounds by count and bytes.
#include "sim/object_store.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>

using namespace sluice;

namespace {

namespace json = boost::json;

// Family 0 top-level, 1 under 0, 2 under 1.
std::vector<std::optional<std::size_t>> store_tree() { return {std::nullopt, 0, 1}; }

std::string store_id_of(const json::object& o) { return std::string(o.at("id").as_string()); }

std::vector<std::string> store_ids(const sim::object_store::page& p) {
  std::vector<std::string> out;
  for (const auto& o : p.data) out.push_back(store_id_of(o));
  return out;
}

}  // namespace

TEST(SimObjectStore, AddsFindsAndListsInOrder) {
  sim::object_store store(store_tree());
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto o = store.add(0, "", json::object{{"n", i}}, "thing_", 7);
    ASSERT_TRUE(o);
    ids.push_back(store_id_of(*o));
    EXPECT_TRUE(ids.back().starts_with("thing_"));
    EXPECT_EQ(ids.back().size(), 6u + 24);
  }
  const auto found = store.find(0, "", ids[1]);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->at("n").as_int64(), 1);
  EXPECT_FALSE(store.find(0, "", "thing_nope"));
  EXPECT_FALSE(store.find(0, "elsewhere", ids[1])) << "an object is found only in its own collection";

  EXPECT_EQ(store_ids(store.list(0, "", 10, false)), ids);
  EXPECT_EQ(store_ids(store.list(0, "", 10, true)), (std::vector<std::string>{ids[2], ids[1], ids[0]}));
  const auto first = store.list(0, "", 2, false);
  EXPECT_EQ(store_ids(first), (std::vector<std::string>{ids[0], ids[1]}));
  EXPECT_TRUE(first.has_more);
  const auto rest = store.list(0, "", 2, false, ids[1]);
  EXPECT_EQ(store_ids(rest), (std::vector<std::string>{ids[2]}));
  EXPECT_FALSE(rest.has_more);
  EXPECT_EQ(store_ids(store.list(0, "", 10, true, ids[1])), (std::vector<std::string>{ids[0]}));
  EXPECT_TRUE(store.list(0, "", 10, false, "thing_unknown").data.empty());
  EXPECT_EQ(store.objects(), 3u);
  EXPECT_GT(store.bytes(), 0u);
}

TEST(SimObjectStore, IdsAreDeterministic) {
  sim::object_store a(store_tree()), b(store_tree());
  for (int i = 0; i < 3; ++i) {
    const auto x = a.add(0, "", json::object{}, "p_", 99);
    const auto y = b.add(0, "", json::object{}, "p_", 99);
    ASSERT_TRUE(x && y);
    EXPECT_EQ(store_id_of(*x), store_id_of(*y));
  }
  const auto other = b.add(0, "", json::object{}, "p_", 100);
  const auto same = a.add(0, "", json::object{}, "p_", 99);
  EXPECT_NE(store_id_of(*other), store_id_of(*same)) << "the seed is mixed in";
}

TEST(SimObjectStore, ChildrenNeedTheirParentAndGoWithIt) {
  sim::object_store store(store_tree());
  EXPECT_EQ(store.add(1, "parent_gone", json::object{}, "c_", 1).err().code, errc::not_found);
  const auto parent = store_id_of(*store.add(0, "", json::object{}, "p_", 1));
  const auto child = store_id_of(*store.add(1, parent, json::object{}, "c_", 1));
  ASSERT_TRUE(store.add(2, child, json::object{}, "g_", 1));
  ASSERT_TRUE(store.add(2, child, json::object{}, "g_", 2));
  EXPECT_EQ(store.count(1, parent), 1u);
  EXPECT_EQ(store.count(2, child), 2u);
  EXPECT_EQ(store.objects(), 4u);
  EXPECT_TRUE(store.remove(0, "", parent));
  EXPECT_FALSE(store.remove(0, "", parent));
  EXPECT_EQ(store.count(1, parent), 0u);
  EXPECT_EQ(store.count(2, child), 0u) << "removal reaches every level";
  EXPECT_EQ(store.objects(), 0u);
  EXPECT_EQ(store.bytes(), 0u);
  EXPECT_EQ(store.evicted(), 0u) << "a delete is not an eviction";
}

TEST(SimObjectStore, AGivenIdIsReplacedInPlaceAndMayBeInTwoCollections) {
  sim::object_store store(store_tree());
  const auto a = store_id_of(*store.add(0, "", json::object{}, "p_", 1));
  const auto b = store_id_of(*store.add(0, "", json::object{}, "p_", 2));
  ASSERT_TRUE(store.add(1, a, json::object{{"v", 1}}, "", 0, "file-1"));
  ASSERT_TRUE(store.add(1, a, json::object{{"v", 2}}, "", 0, "file-2"));
  ASSERT_TRUE(store.add(1, a, json::object{{"v", 3}}, "", 0, "file-1"));
  EXPECT_EQ(store.count(1, a), 2u) << "the same id again replaces";
  const auto page = store.list(1, a, 10, false);
  ASSERT_EQ(page.data.size(), 2u);
  EXPECT_EQ(store_id_of(page.data[0]), "file-1") << "in its place";
  EXPECT_EQ(page.data[0].at("v").as_int64(), 3);

  ASSERT_TRUE(store.add(1, b, json::object{}, "", 0, "file-1"));
  ASSERT_TRUE(store.add(2, "file-1", json::object{}, "g_", 1));
  EXPECT_TRUE(store.remove(1, a, "file-1"));
  EXPECT_TRUE(store.contains(1, b, "file-1"));
  EXPECT_EQ(store.count(2, "file-1"), 1u) << "what is under an id stays while a collection still holds it";
  EXPECT_TRUE(store.remove(1, b, "file-1"));
  EXPECT_EQ(store.count(2, "file-1"), 0u);
}

TEST(SimObjectStore, ModifyKeepsTheId) {
  sim::object_store store(store_tree());
  const auto id = store_id_of(*store.add(0, "", json::object{{"status", "queued"}}, "p_", 1));
  const auto changed = store.modify(0, "", id, [](json::object& o) {
    o["status"] = "paused";
    o["id"] = "tampered";
  });
  ASSERT_TRUE(changed);
  EXPECT_EQ(changed->at("status"), "paused");
  EXPECT_EQ(store_id_of(*changed), id);
  EXPECT_EQ(store.find(0, "", id)->at("status"), "paused");
  EXPECT_FALSE(store.modify(0, "", "p_nope", [](json::object&) {}));
}

TEST(SimObjectStore, EvictsTheOldestPastTheCountBound) {
  sim::object_store store(store_tree(), 3);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(store_id_of(*store.add(0, "", json::object{}, "p_", 1)));
  ASSERT_TRUE(store.add(1, ids[0], json::object{}, "c_", 1));
  ASSERT_TRUE(store.add(1, ids[0], json::object{}, "c_", 2));
  const auto fourth = store_id_of(*store.add(0, "", json::object{}, "p_", 1));
  EXPECT_FALSE(store.contains(0, "", ids[0]));
  EXPECT_EQ(store.count(1, ids[0]), 0u) << "its children went with it";
  EXPECT_EQ(store.evicted(), 3u);
  EXPECT_EQ(store.objects(), 3u);
  EXPECT_EQ(store_ids(store.list(0, "", 10, false)), (std::vector<std::string>{ids[1], ids[2], fourth}));
}

TEST(SimObjectStore, EvictsPastTheByteBoundAndRefusesAnObjectOverIt) {
  sim::object_store store(store_tree(), 100, 400);
  const json::object big{{"text", std::string(150, 'x')}};
  const auto a = store_id_of(*store.add(0, "", big, "p_", 1));
  const auto b = store_id_of(*store.add(0, "", big, "p_", 2));
  EXPECT_TRUE(store.contains(0, "", a));
  const auto c = store_id_of(*store.add(0, "", big, "p_", 3));
  EXPECT_FALSE(store.contains(0, "", a)) << "three of ~180 bytes do not fit in 400";
  EXPECT_TRUE(store.contains(0, "", b));
  EXPECT_TRUE(store.contains(0, "", c));
  EXPECT_LE(store.bytes(), 400u);
  const auto huge = store.add(0, "", json::object{{"text", std::string(500, 'y')}}, "p_", 4);
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.err().code, errc::payload_too_large);
  EXPECT_TRUE(store.contains(0, "", b)) << "a refused object evicts nothing";
}

TEST(SimObjectStore, ManyThreadsAtOnceKeepItsBounds) {
  sim::object_store store(store_tree(), 200);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&store, t] {
      for (int i = 0; i < 300; ++i) {
        const auto parent = store.add(0, "", json::object{{"t", t}}, "p_", static_cast<std::uint64_t>(t));
        if (!parent) continue;
        const auto id = store_id_of(*parent);
        (void)store.add(1, id, json::object{}, "c_", 1);  // may find its parent already evicted
        (void)store.list(0, "", 20, true);
        if (i % 3 == 0) (void)store.remove(0, "", id);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_LE(store.list(0, "", 1000, false).data.size(), 200u);
  EXPECT_LE(store.objects(), 400u);
  EXPECT_GT(store.evicted(), 0u);
}
