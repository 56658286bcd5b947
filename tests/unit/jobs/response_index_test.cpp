// pod_response_index: which worker row holds each id; removal only by the holder; a dead row's ids
// dropped; a full index refusing more; and many ids added and removed in any order (the backward
// shift keeps every remaining id findable).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "jobs/response_index.hpp"
#include "runtime/shared_segment.hpp"

using namespace sluice;
using namespace sluice::jobs;

namespace {

TEST(PodResponseIndex, NamesTheHolderUntilItsEntryGoes) {
  runtime::shared_segment<pod_response_index> ix;
  EXPECT_TRUE(ix->add("resp_a", 3));
  EXPECT_TRUE(ix->add("resp_b", 5));
  EXPECT_EQ(ix->holder("resp_a"), 3u);
  EXPECT_EQ(ix->holder("resp_b"), 5u);
  EXPECT_FALSE(ix->holder("resp_c"));
  ix->remove("resp_a", 4);  // not the holder: stays
  EXPECT_EQ(ix->holder("resp_a"), 3u);
  ix->remove("resp_a", 3);
  EXPECT_FALSE(ix->holder("resp_a"));
  EXPECT_EQ(ix->size(), 1u);
  ix->add("resp_c", 5);
  ix->add("resp_d", 6);
  ix->drop_row(5);
  EXPECT_FALSE(ix->holder("resp_b"));
  EXPECT_FALSE(ix->holder("resp_c"));
  EXPECT_EQ(ix->holder("resp_d"), 6u);
  EXPECT_EQ(ix->size(), 1u);
}

TEST(PodResponseIndex, ManyIdsAddedAndRemovedInAnyOrderStayFindableAndAFullIndexRefuses) {
  runtime::shared_segment<pod_response_index> ix;
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < pod_response_index::capacity; ++i) ids.push_back("resp_" + std::to_string(i * 7919));
  for (std::size_t i = 0; i < ids.size(); ++i) ASSERT_TRUE(ix->add(ids[i], static_cast<std::uint32_t>(i % 64)));
  EXPECT_FALSE(ix->add("resp_one_more", 1)) << "full: not indexed";
  std::mt19937 rng(7);
  std::vector<std::size_t> order(ids.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  const std::size_t removed = order.size() / 2;
  for (std::size_t k = 0; k < removed; ++k) ix->remove(ids[order[k]], static_cast<std::uint32_t>(order[k] % 64));
  EXPECT_EQ(ix->size(), ids.size() - removed);
  for (std::size_t k = 0; k < order.size(); ++k) {
    const auto i = order[k];
    const auto h = ix->holder(ids[i]);
    if (k < removed) {
      ASSERT_FALSE(h) << ids[i];
    } else {
      ASSERT_TRUE(h) << ids[i];
      ASSERT_EQ(*h, i % 64);
    }
  }
  EXPECT_TRUE(ix->add("resp_one_more", 1));
}

}  // namespace
