// The streaming multipart/form-data parser: events for every split of a body, binary data with
// near-boundaries, preamble and epilogue, the boundary parameter, and the errors as values.
#include "sim/multipart.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace sluice::sim;

namespace {

// The events as text, a part's data pieces joined (how they are cut may differ between splits).
struct mp_recorder final : multipart::handler {
  std::vector<std::string> events;
  std::size_t max_piece = 0;
  void on_part_begin(const multipart::part_head& h) override {
    events.push_back("begin " + h.name + (h.has_filename ? " file=" + h.filename : "") +
                     (h.content_type.empty() ? "" : " type=" + h.content_type));
  }
  void on_part_data(std::string_view bytes) override {
    EXPECT_FALSE(bytes.empty());
    max_piece = std::max(max_piece, bytes.size());
    if (events.empty() || !events.back().starts_with("data ")) events.push_back("data ");
    events.back() += bytes;
  }
  void on_part_end() override { events.push_back("end"); }
  void on_close() override { events.push_back("close"); }
};

struct mp_outcome {
  std::vector<std::string> events;
  multipart::failure failed = multipart::failure::none;
};

// Feeds `body` cut at `cuts` (ascending offsets), then finishes.
mp_outcome mp_parse(std::string_view boundary, std::string_view body, const std::vector<std::size_t>& cuts = {}) {
  multipart::parser p(boundary);
  mp_recorder r;
  mp_outcome out;
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    out.failed = p.feed(body.substr(from, cut - from), r);
    from = cut;
  }
  out.failed = p.feed(body.substr(from), r);
  if (out.failed == multipart::failure::none) out.failed = p.finish();
  out.events = std::move(r.events);
  return out;
}

// Binary bytes with every trap for a boundary search: "--", CRLFs, the boundary without its dashes
// and the delimiter cut one byte short, NULs and high bytes.
std::string tricky_bytes() {
  static constexpr char traps[] = "\0\x01\xff\xfe--\r\n-\r\n--\r\n--xyzBOUNDAR\r\n--xyzBOUNDARX\rxyzBOUNDARY\n--xyzBOUNDARY";
  std::string s(traps, sizeof traps - 1);
  for (int i = 0; i < 300; ++i) s += static_cast<char>((i * 37) & 0xff);
  s += "\r\n--xyzBOUNDAR";
  s += "\r\r\n\r\n-";
  return s;
}

std::string sample_body() {
  return "preamble text, ignored\r\n"
         "--xyzBOUNDARY\r\n"
         "Content-Disposition: form-data; name=\"purpose\"\r\n\r\n"
         "fine-tune\r\n"
         "--xyzBOUNDARY  \r\n"
         "content-disposition: form-data; name=\"file\"; filename=\"a b.bin\"\r\n"
         "Content-Type: application/octet-stream\r\n\r\n" +
         tricky_bytes() +
         "\r\n--xyzBOUNDARY\r\n"
         "Content-Disposition: form-data; name=\"empty\"\r\n\r\n"
         "\r\n--xyzBOUNDARY--\r\n"
         "epilogue, also ignored --xyzBOUNDARY\r\n";
}

std::vector<std::string> sample_events() {
  return {"begin purpose", "data fine-tune", "end",
          "begin file file=a b.bin type=application/octet-stream", "data " + tricky_bytes(), "end",
          "begin empty", "end", "close"};
}

}  // namespace

TEST(SimMultipart, PartsWithBinaryDataPreambleAndEpilogue) {
  const auto out = mp_parse("xyzBOUNDARY", sample_body());
  EXPECT_EQ(out.failed, multipart::failure::none);
  EXPECT_EQ(out.events, sample_events());
}

TEST(SimMultipart, EverySplitPointGivesTheSameEvents) {
  const std::string body = sample_body();
  for (std::size_t cut = 1; cut < body.size(); ++cut) {
    const auto out = mp_parse("xyzBOUNDARY", body, {cut});
    ASSERT_EQ(out.failed, multipart::failure::none) << "cut at " << cut;
    ASSERT_EQ(out.events, sample_events()) << "cut at " << cut;
  }
  // Two cuts, close together and far apart.
  for (std::size_t a = 1; a + 7 < body.size(); a += 5) {
    const auto out = mp_parse("xyzBOUNDARY", body, {a, a + 7});
    ASSERT_EQ(out.events, sample_events()) << "cuts at " << a << ", " << a + 7;
  }
}

TEST(SimMultipart, ByteByByteGivesTheSameEventsAndHoldsBackLittle) {
  const std::string body = sample_body();
  multipart::parser p("xyzBOUNDARY");
  mp_recorder r;
  for (char ch : body) ASSERT_EQ(p.feed(std::string_view(&ch, 1), r), multipart::failure::none);
  EXPECT_EQ(p.finish(), multipart::failure::none);
  EXPECT_TRUE(p.closed());
  EXPECT_EQ(r.events, sample_events());
  EXPECT_LE(r.max_piece, std::string("\r\n--xyzBOUNDARY").size()) << "held-back bytes are at most a delimiter";
}

TEST(SimMultipart, BodyStartingWithTheBoundaryAndNoParts) {
  auto out = mp_parse("b", "--b\r\nContent-Disposition: form-data; name=x\r\n\r\n1\r\n--b--");
  EXPECT_EQ(out.failed, multipart::failure::none);
  EXPECT_EQ(out.events, (std::vector<std::string>{"begin x", "data 1", "end", "close"}));
  out = mp_parse("b", "--b--\r\n");
  EXPECT_EQ(out.failed, multipart::failure::none);
  EXPECT_EQ(out.events, (std::vector<std::string>{"close"}));
}

TEST(SimMultipart, DispositionParameters) {
  multipart::part_head h;
  ASSERT_EQ(multipart::parse_part_head("Content-Disposition: form-data; filename=\"q\\\"uote\\\\d\"; name=\"f\"\r\n", h),
            multipart::failure::none);
  EXPECT_EQ(h.name, "f");
  EXPECT_EQ(h.filename, "q\"uote\\d");
  EXPECT_TRUE(h.has_filename);
  ASSERT_EQ(multipart::parse_part_head("Content-Disposition: form-data; name=f; filename*=UTF-8''na%C3%AFve.txt; "
                                       "filename=\"naive.txt\"\r\n",
                                       h),
            multipart::failure::none);
  EXPECT_EQ(h.filename, "na\xc3\xafve.txt") << "filename* wins over filename";
  ASSERT_EQ(multipart::parse_part_head("Content-Disposition: form-data; name=\"e\"; filename=\"\"\r\n", h),
            multipart::failure::none);
  EXPECT_TRUE(h.has_filename);
  EXPECT_EQ(h.filename, "");
  ASSERT_EQ(multipart::parse_part_head("Content-Disposition: form-data;\r\n name=\"folded\"\r\n", h),
            multipart::failure::none);
  EXPECT_EQ(h.name, "folded");
}

TEST(SimMultipart, BoundaryOfContentType) {
  EXPECT_EQ(multipart::boundary_of("multipart/form-data; boundary=abc"), "abc");
  EXPECT_EQ(multipart::boundary_of("Multipart/Form-Data;boundary=\"a b;c\""), "a b;c");
  EXPECT_EQ(multipart::boundary_of("multipart/form-data; charset=utf-8; BOUNDARY=----x123"), "----x123");
  EXPECT_EQ(multipart::boundary_of("multipart/form-data"), std::nullopt);
  EXPECT_EQ(multipart::boundary_of("multipart/form-data; boundary="), std::nullopt);
  EXPECT_EQ(multipart::boundary_of("multipart/form-data; boundary=\"\""), std::nullopt);
  EXPECT_EQ(multipart::boundary_of("multipart/form-data; boundary=" + std::string(71, 'x')), std::nullopt);
  EXPECT_EQ(multipart::boundary_of("application/json; boundary=abc"), std::nullopt);
}

TEST(SimMultipart, QuotedBoundaryParsesTheBody) {
  const auto boundary = multipart::boundary_of("multipart/form-data; boundary=\"with space\"");
  ASSERT_TRUE(boundary);
  const auto out = mp_parse(*boundary, "--with space\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--with space--");
  EXPECT_EQ(out.events, (std::vector<std::string>{"begin a", "data v", "end", "close"}));
}

TEST(SimMultipart, ErrorsAreValues) {
  using multipart::failure;
  EXPECT_EQ(mp_parse("", "--\r\n").failed, failure::no_boundary);
  EXPECT_EQ(mp_parse(std::string(71, 'b'), "x").failed, failure::no_boundary);
  EXPECT_EQ(mp_parse("b", "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv").failed, failure::truncated);
  EXPECT_EQ(mp_parse("b", "").failed, failure::truncated);
  EXPECT_EQ(mp_parse("b", "--b\r\nX-Other: 1\r\n\r\nv\r\n--b--").failed, failure::missing_name);
  EXPECT_EQ(mp_parse("b", "--b\r\nContent-Disposition: attachment; name=a\r\n\r\nv\r\n--b--").failed,
            failure::missing_name);
  EXPECT_EQ(mp_parse("b", "--b\r\n\r\nv\r\n--b--").failed, failure::missing_name);
  EXPECT_EQ(mp_parse("b", "--b\r\nno colon here\r\n\r\n--b--").failed, failure::bad_header);
  EXPECT_EQ(mp_parse("b", "--bx\r\n").failed, failure::bad_delimiter);
  EXPECT_EQ(mp_parse("b", "--b-x").failed, failure::bad_delimiter);
  const std::string long_head = "--b\r\nContent-Disposition: form-data; name=\"a\"\r\nX: " + std::string(9000, 'h');
  EXPECT_EQ(mp_parse("b", long_head).failed, failure::headers_too_long);
  // Sticky: after a failure nothing more is reported.
  multipart::parser p("b");
  mp_recorder r;
  EXPECT_EQ(p.feed("--b\r\nbad\r\n\r\n", r), failure::bad_header);
  EXPECT_EQ(p.feed("--b\r\nContent-Disposition: form-data; name=a\r\n\r\n", r), failure::bad_header);
  EXPECT_EQ(p.finish(), failure::bad_header);
  EXPECT_TRUE(r.events.empty());
  EXPECT_FALSE(multipart::describe(failure::truncated).empty());
}

TEST(SimMultipart, LargeFileInBigPiecesPassesDataThroughUnchanged) {
  std::string file;
  for (std::size_t i = 0; i < 300'000; ++i) file += static_cast<char>((i * 131 + i / 7) & 0xff);
  const std::string body = "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x\"\r\n\r\n" + file +
                           "\r\n--B--\r\n";
  std::vector<std::size_t> cuts;
  for (std::size_t at = 65'536; at < body.size(); at += 65'536) cuts.push_back(at);
  const auto out = mp_parse("B", body, cuts);
  ASSERT_EQ(out.failed, multipart::failure::none);
  ASSERT_EQ(out.events.size(), 4u);
  EXPECT_TRUE(out.events[1] == "data " + file);
}
