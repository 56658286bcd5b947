// The relay's per-event scan (proxy/relay/event_scan): the skim that scan_event tries first against
// the SAX scan it falls back to, per event, on the events upstreams send. Figures and the command
// live in docs/benchmarks.md (ADR 0032).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "proxy/relay/event_scan.hpp"

namespace {

using sluice::proxy::event_facts;

const std::string chat_chunk =
    R"({"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012","object":"chat.completion.chunk","created":1733500000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]})";
const std::string chat_chunk_spaced =
    R"({ "id": "chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012", "object": "chat.completion.chunk", "created": 1733500000, "model": "gpt-4o-mini-2024-07-18", "choices": [ { "index": 0, "delta": { "content": " token" }, "logprobs": null, "finish_reason": null } ] })";
const std::string chat_chunk_cjk =
    "{\"id\":\"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012\",\"object\":\"chat.completion.chunk\",\"created\":1733500000,"
    "\"model\":\"qwen2.5-7b\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xe4\xb8\xad\xe6\x96\x87\xe7\x9a\x84"
    "\xe5\x9b\x9e\xe7\xad\x94\"},\"logprobs\":null,\"finish_reason\":null}]}";
const std::string usage_chunk =
    R"({"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012","object":"chat.completion.chunk","created":1733500000,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":350,"total_tokens":1550,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}})";
const std::string responses_delta =
    R"({"type":"response.output_text.delta","sequence_number":17,"item_id":"msg_67ccd3acc8d48190a77525dc6de64b4104becb25c0fe5f86","output_index":0,"content_index":0,"delta":" token","logprobs":[]})";

void scan(benchmark::State& state, const std::string& event, bool sax) {
  event_facts f;
  for (auto _ : state) {
    const bool ok = sax ? sluice::proxy::detail::scan_event_sax(event, f) : sluice::proxy::scan_event(event, f);
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(f);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * event.size()));
}

}  // namespace

// EVENT_SCAN_ITERATIONS=N runs each case exactly N times: bench/event_scan.sh counts instructions
// under callgrind with two such runs, so that start-up and first calls cancel out.
int main(int argc, char** argv) {
  const struct {
    const char* name;
    const std::string* event;
  } cases[] = {{"chat_chunk", &chat_chunk},   {"chat_chunk_spaced", &chat_chunk_spaced}, {"chat_chunk_cjk", &chat_chunk_cjk},
               {"usage_chunk", &usage_chunk}, {"responses_delta", &responses_delta}};
  const char* fixed = std::getenv("EVENT_SCAN_ITERATIONS");
  for (const auto& c : cases)
    for (const bool sax : {false, true}) {
      const std::string name = std::string("scan/") + c.name + (sax ? "_sax" : "_skim");
      auto* b = benchmark::RegisterBenchmark(name.c_str(), scan, *c.event, sax);
      if (fixed != nullptr) b->Iterations(std::strtoll(fixed, nullptr, 10));
    }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
