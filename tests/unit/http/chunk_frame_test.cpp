// A chunk as connection::write_chunk writes it (append_chunk_size_line, then chunk_piece) against
// Beast's make_chunk / make_chunk_last: the same bytes for every length of the size line, with and
// without the last chunk after it. And the piece stays right when copied after the memory it was
// made in is gone: Asio copies a sequence while a write is pending and keeps buffers it took from
// an earlier copy, so a piece's buffers must point outside it.
#include "http/chunk_frame.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/beast/core/buffers_cat.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/chunk_encode.hpp>
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

std::string written_chunk_bytes(const std::string& data, chunk_piece::ending e) {
  std::string out;
  append_chunk_size_line(out, data.size());
  return out + boost::beast::buffers_to_string(chunk_piece(data, e));
}

TEST(ChunkFrame, WritesTheBytesBeastWritesForEverySizeLine) {
  for (const std::size_t size : {1, 9, 10, 15, 16, 17, 255, 256, 4095, 4096, 65535, 65536, 0x12345}) {
    const std::string data(size, 'x');
    SCOPED_TRACE(size);
    EXPECT_EQ(written_chunk_bytes(data, chunk_piece::ending::more), beast_chunk_bytes(data, false));
    EXPECT_EQ(written_chunk_bytes(data, chunk_piece::ending::last), beast_chunk_bytes(data, true));
    EXPECT_EQ(boost::asio::buffer_size(chunk_piece(data, chunk_piece::ending::more)), size + 2);
  }
  EXPECT_EQ(std::string(last_chunk), boost::beast::buffers_to_string(bhttp::make_chunk_last()));
}

TEST(ChunkFrame, APieceCopiedAfterItsOriginalIsGoneWritesTheSameBytes) {
  const std::string data(300, 'y');
  auto original = std::make_unique<chunk_piece>(data, chunk_piece::ending::last);
  const chunk_piece copied(*original);
  std::fill_n(reinterpret_cast<char*>(original.get()), sizeof(chunk_piece), '\xff');  // the original's bytes gone
  original.reset();
  std::string out;
  append_chunk_size_line(out, copied.data_size());
  EXPECT_EQ(out + boost::beast::buffers_to_string(copied), beast_chunk_bytes(data, true));
}

}  // namespace
}  // namespace sluice::http
