// sluice::schema throughput: validations/s for ~1 KB and ~100 KB documents including parsing,
// and the cost added per streamed chunk. Figures and the command live in docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <string>

#include "schema/cache.hpp"
#include "schema/schema.hpp"
#include "schema/stream_validator.hpp"

namespace json = boost::json;
using namespace sluice::schema;

namespace {

// A typical structured-output schema: nested objects, arrays, enums, bounds, a pattern, nullable.
const char* schema_text = R"({
  "type":"object",
  "properties":{
    "id":{"type":"string","pattern":"^ord-[0-9]{6}$"},
    "status":{"enum":["pending","shipped","delivered","cancelled"]},
    "customer":{"type":"object","properties":{
        "name":{"type":"string","minLength":1,"maxLength":100},
        "email":{"type":"string","format":"email"},
        "vip":{"type":"boolean"}},
      "required":["name","email"],"additionalProperties":false},
    "items":{"type":"array","minItems":1,"items":{"type":"object","properties":{
        "sku":{"type":"string","maxLength":32},
        "qty":{"type":"integer","minimum":1,"maximum":1000},
        "price":{"type":"number","exclusiveMinimum":0},
        "note":{"anyOf":[{"type":"string"},{"type":"null"}]}},
      "required":["sku","qty","price"],"additionalProperties":false}},
    "total":{"type":"number","minimum":0},
    "created":{"type":"string","format":"date-time"}
  },
  "required":["id","status","customer","items","total"],
  "additionalProperties":false})";

std::string item(int i) {
  return R"({"sku":"SKU-)" + std::to_string(10000 + i) + R"(","qty":)" + std::to_string(1 + i % 9) +
         R"(,"price":)" + std::to_string(3 + i % 50) + R"(.99,"note":)" + (i % 2 ? R"("gift wrap please")" : "null") + "}";
}

std::string order(int items) {
  std::string s = R"({"id":"ord-123456","status":"shipped","customer":{"name":"Ada Lovelace",)"
                  R"("email":"ada@example.com","vip":true},"items":[)";
  for (int i = 0; i < items; ++i) s += (i ? "," : "") + item(i);
  s += R"(],"total":1234.5,"created":"2024-05-01T10:20:30Z"})";
  return s;
}

std::shared_ptr<const compiled_schema> compiled() {
  static auto s = *compile(json::parse(schema_text));
  return s;
}

const std::string small_doc = order(11);   // ~1 KB
const std::string large_doc = [] {          // ~100 KB: an array of orders
  std::string s = "[";
  for (int i = 0; i < 90; ++i) s += (i ? "," : "") + order(11);
  return s + "]";
}();

void BM_validate_text_1kb(benchmark::State& st) {
  auto s = compiled();
  for (auto _ : st) benchmark::DoNotOptimize(s->validate_text(small_doc));
  st.SetItemsProcessed(st.iterations());
  st.SetBytesProcessed(st.iterations() * static_cast<int64_t>(small_doc.size()));
  st.counters["doc_bytes"] = static_cast<double>(small_doc.size());
}
BENCHMARK(BM_validate_text_1kb);

void BM_validate_text_100kb(benchmark::State& st) {
  json::value arr = json::object{{"type", "array"}, {"items", json::parse(schema_text)}};
  auto s = *compile(arr);
  for (auto _ : st) benchmark::DoNotOptimize(s->validate_text(large_doc));
  st.SetItemsProcessed(st.iterations());
  st.SetBytesProcessed(st.iterations() * static_cast<int64_t>(large_doc.size()));
  st.counters["doc_bytes"] = static_cast<double>(large_doc.size());
}
BENCHMARK(BM_validate_text_100kb);

// The DOM path with parsing (boost::json::parse) included, for comparison with the SAX path.
void BM_parse_and_validate_dom_1kb(benchmark::State& st) {
  auto s = compiled();
  for (auto _ : st) {
    json::monotonic_resource mr;
    json::value v = json::parse(small_doc, &mr);
    benchmark::DoNotOptimize(s->validate(v));
  }
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_parse_and_validate_dom_1kb);

// Parsing alone, to separate the validator's share of the time above.
void BM_parse_only_1kb(benchmark::State& st) {
  for (auto _ : st) {
    json::monotonic_resource mr;
    benchmark::DoNotOptimize(json::parse(small_doc, &mr));
  }
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_parse_only_1kb);

// The floor under validate_text: the same SAX parser (UTF-8 checks, number conversion) driving a
// handler that does nothing, so time above this is the validator's.
struct null_handler {
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
  using ec_t = boost::system::error_code;
  bool on_document_begin(ec_t&) { return true; }
  bool on_document_end(ec_t&) { return true; }
  bool on_object_begin(ec_t&) { return true; }
  bool on_object_end(std::size_t, ec_t&) { return true; }
  bool on_array_begin(ec_t&) { return true; }
  bool on_array_end(std::size_t, ec_t&) { return true; }
  bool on_key_part(json::string_view, std::size_t, ec_t&) { return true; }
  bool on_key(json::string_view, std::size_t, ec_t&) { return true; }
  bool on_string_part(json::string_view, std::size_t, ec_t&) { return true; }
  bool on_string(json::string_view, std::size_t, ec_t&) { return true; }
  bool on_number_part(json::string_view, ec_t&) { return true; }
  bool on_int64(std::int64_t, json::string_view, ec_t&) { return true; }
  bool on_uint64(std::uint64_t, json::string_view, ec_t&) { return true; }
  bool on_double(double, json::string_view, ec_t&) { return true; }
  bool on_bool(bool, ec_t&) { return true; }
  bool on_null(ec_t&) { return true; }
  bool on_comment_part(json::string_view, ec_t&) { return true; }
  bool on_comment(json::string_view, ec_t&) { return true; }
};

void BM_sax_parse_only_1kb(benchmark::State& st) {
  json::basic_parser<null_handler> p(json::parse_options{});
  for (auto _ : st) {
    p.reset();
    boost::system::error_code ec;
    benchmark::DoNotOptimize(p.write_some(false, small_doc.data(), small_doc.size(), ec));
  }
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_sax_parse_only_1kb);

// A stream fed in model-sized deltas (Arg bytes each): items = chunks, so time/item is the cost
// per chunk (parsing + checking that chunk).
void BM_stream_per_chunk(benchmark::State& st) {
  auto s = compiled();
  const auto chunk = static_cast<std::size_t>(st.range(0));
  stream_validator sv(s);
  int64_t chunks = 0;
  for (auto _ : st) {
    sv.reset();
    for (std::size_t pos = 0; pos < small_doc.size(); pos += chunk) {
      benchmark::DoNotOptimize(sv.feed(std::string_view(small_doc).substr(pos, chunk)));
      ++chunks;
    }
    benchmark::DoNotOptimize(sv.finish());
  }
  st.SetItemsProcessed(chunks);
}
BENCHMARK(BM_stream_per_chunk)->Arg(4)->Arg(16)->Arg(64);

// A cache hit: canonicalise + hash + lookup (what every request pays before validating).
void BM_cache_hit(benchmark::State& st) {
  schema_cache cache;
  json::value schema = json::parse(schema_text);
  (void)cache.get_or_compile(schema);
  for (auto _ : st) benchmark::DoNotOptimize(cache.get_or_compile(schema));
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_cache_hit);

void BM_compile(benchmark::State& st) {
  json::value schema = json::parse(schema_text);
  for (auto _ : st) benchmark::DoNotOptimize(compile(schema));
  st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_compile);

}  // namespace

BENCHMARK_MAIN();
