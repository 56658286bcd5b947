// chunk_frame against Beast's make_chunk / make_chunk_last: the same bytes for every size class of
// the chunk-size line, with and without the last chunk after it, and after being copied (a
// coroutine frame holds a copy whose buffers must point into its own size line).
#include "http/chunk_frame.hpp"

#include <gtest/gtest.h>

#include <boost/beast/core/buffers_cat.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <algorithm>
#include <memory>
#include <string>

namespace sluice::http {
namespace {

namespace bhttp = boost::beast::http;

std::string beast_chunk_bytes(const std::string& data, bool last) {
  const auto chunk = bhttp::make_chunk(boost::asio::buffer(data.data(), data.size()));
  if (!last) return boost::beast::buffers_to_string(chunk);
  return boost::beast::buffers_to_string(boost::beast::buffers_cat(chunk, bhttp::make_chunk_last()));
}

TEST(ChunkFrame, WritesTheBytesBeastWritesForEverySizeLine) {
  for (const std::size_t size : {1, 9, 10, 15, 16, 17, 255, 256, 4095, 4096, 65535, 65536, 0x12345}) {
    const std::string data(size, 'x');
    for (const bool last : {false, true}) {
      SCOPED_TRACE(std::to_string(size) + (last ? " last" : ""));
      const chunk_frame frame(data, last ? chunk_frame::ending::last : chunk_frame::ending::more);
      EXPECT_EQ(boost::beast::buffers_to_string(frame), beast_chunk_bytes(data, last));
      EXPECT_EQ(boost::asio::buffer_size(frame), beast_chunk_bytes(data, last).size());
    }
  }
  EXPECT_EQ(boost::beast::buffers_to_string(chunk_frame()), boost::beast::buffers_to_string(bhttp::make_chunk_last()));
}

TEST(ChunkFrame, ACopyPointsIntoItsOwnSizeLine) {
  const std::string data(300, 'y');
  auto original = std::make_unique<chunk_frame>(data, chunk_frame::ending::more);
  const chunk_frame copied(*original);
  chunk_frame assigned;
  assigned = *original;
  std::fill_n(reinterpret_cast<char*>(original.get()), sizeof(chunk_frame), '\xff');  // the original's bytes gone
  original.reset();
  EXPECT_EQ(boost::beast::buffers_to_string(copied), beast_chunk_bytes(data, false));
  EXPECT_EQ(boost::beast::buffers_to_string(assigned), beast_chunk_bytes(data, false));
}

}  // namespace
}  // namespace sluice::http
