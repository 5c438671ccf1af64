// Encode throughput on ~1 MB of mixed-language text (the fixture case texts — English, code, CJK,
// Cyrillic, Arabic, Hindi, emoji, numbers, whitespace runs — repeated) for the Llama 3 and Gemma 3
// tokenizer.json files. Not a unit test: run build/bin/glass_tokenizer_bench (set GLASS_FIXTURES to
// the shared fixture folder when it is not at the configured place).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "tokenizer/hf_tokenizer.h"

namespace {

std::filesystem::path fixtures() {
  if (const char* env = std::getenv("GLASS_FIXTURES"); env != nullptr && *env != '\0') return env;
  return GLASS_FIXTURES_DIR;
}

// ~1 MiB of text: every case text of a cases.json, separated by newlines, repeated.
std::string mixed_text() {
  std::ifstream in(fixtures() / "tokenizers" / "hf" / "llama3" / "cases.json");
  std::ostringstream ss;
  ss << in.rdbuf();
  const nlohmann::json cases = nlohmann::json::parse(ss.str(), nullptr, false);
  std::string one;
  if (cases.is_object() && cases.contains("cases")) {
    for (const auto& c : cases["cases"]) one += c["text"].get<std::string>() + "\n";
  }
  if (one.empty()) one = "The quick brown fox jumps over the lazy dog. 1234567 ÄÖÜ 日本語 русский\n";
  std::string text;
  while (text.size() < (1u << 20)) text += one;
  return text;
}

void encode(benchmark::State& state, const char* name) {
  auto tokenizer = glass::tokenizer::load_hf_tokenizer(fixtures() / "tokenizers" / "hf" / name);
  if (!tokenizer) {
    state.SkipWithError(tokenizer.error().message.c_str());
    return;
  }
  const std::string text = mixed_text();
  size_t n_tokens = 0;
  for (auto _ : state) {
    auto ids = tokenizer->encode(text, false, true);
    if (!ids) {
      state.SkipWithError(ids.error().message.c_str());
      return;
    }
    n_tokens = ids->size();
    benchmark::DoNotOptimize(ids->data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(n_tokens);
  state.counters["MB/s"] = benchmark::Counter(static_cast<double>(text.size()) / 1e6,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

// Loading tokenizer.json (JSON parse, vocabulary, merges table, added-token matchers).
void load(benchmark::State& state, const char* name) {
  for (auto _ : state) {
    auto tokenizer = glass::tokenizer::load_hf_tokenizer(fixtures() / "tokenizers" / "hf" / name);
    if (!tokenizer) {
      state.SkipWithError(tokenizer.error().message.c_str());
      return;
    }
    benchmark::DoNotOptimize(tokenizer->vocab_size());
  }
}

void BM_LoadLlama3(benchmark::State& state) { load(state, "llama3"); }
void BM_LoadGemma3(benchmark::State& state) { load(state, "gemma3"); }
BENCHMARK(BM_LoadLlama3)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_LoadGemma3)->Unit(benchmark::kMillisecond)->Iterations(2);

void BM_EncodeLlama3(benchmark::State& state) { encode(state, "llama3"); }
void BM_EncodeGemma3(benchmark::State& state) { encode(state, "gemma3"); }
BENCHMARK(BM_EncodeLlama3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeGemma3)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
