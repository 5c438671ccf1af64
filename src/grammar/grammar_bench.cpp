// glass_grammar_bench: token-mask cost over the schema corpus, as MaskBench reports it.
//
//   build-a/bin/glass_grammar_bench [--vocab llama3|smollm2|PATH] [--corpus
//   tests/grammar/schema_corpus.jsonl]
//
// For each schema: compile (JSON Schema -> GBNF -> byte grammar) and bind to the vocabulary, then
// replay each of its valid instances as the vocabulary tokenizes it: one mask per token (and one at
// the end, where the end token must be allowed), each token checked against its mask and accepted.
// Prints TBM (time between masks: the mask computation per token, mean / p50 / p99 / max), TTFM
// (time to first mask: compile + bind + first mask) and compile time. One thread; masks of a
// position are built on first use (the cold cost is inside TBM), and a fresh matcher per instance.
#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "formats/gguf.h"
#include "formats/gguf_vocab.h"
#include "grammar/bound.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
// This thread's CPU time: on a shared machine, wall time also counts the time other processes ran.
double thread_cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}
double us_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

struct Stats {
  std::vector<double> v;
  double pct(double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
  }
  double mean() const {
    return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  }
};

glass::Result<glass::tokenizer::Tokenizer> load_vocab(const std::string& which, const std::string& fixtures) {
  if (which == "llama3")
    return glass::tokenizer::load_hf_tokenizer(fixtures + "/tokenizers/hf/llama3/tokenizer.json");
  const std::string path =
      which == "smollm2" ? fixtures + "/tokenizers/gguf/ggml-vocab-starcoder.gguf" : which;
  if (path.ends_with(".json")) return glass::tokenizer::load_hf_tokenizer(path);
  auto file = glass::formats::GgufFile::open(path);
  if (!file) return file.error();
  auto vocab = glass::formats::vocab_from_gguf(*file);
  if (!vocab) return vocab.error();
  return glass::tokenizer::Tokenizer::create(std::move(*vocab));
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = "llama3",
              corpus_path = std::string(GLASS_SOURCE_DIR) + "/tests/grammar/schema_corpus.jsonl";
  std::string fixtures = GLASS_FIXTURES_DIR;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--vocab")
      which = argv[i + 1];
    else if (a == "--corpus")
      corpus_path = argv[i + 1];
    else if (a == "--fixtures")
      fixtures = argv[i + 1];
  }
  auto tok = load_vocab(which, fixtures);
  if (!tok) {
    fmt::print(stderr, "cannot load vocabulary '{}': {}\n", which, tok.error().message);
    return 1;
  }
  const auto t_index = Clock::now();
  std::vector<std::string> pieces;
  std::vector<int32_t> ends;
  for (int32_t id = 0; id < tok->vocab_size(); ++id) {
    pieces.push_back(tok->token_to_piece(id));
    if (tok->is_eog(id)) ends.push_back(id);
  }
  auto vocab = std::make_shared<const glass::grammar::TokenIndex>(std::move(pieces), std::move(ends));
  const double index_ms = us_since(t_index) / 1000;
  // As the runtime does when it first indexes a model's vocabulary (runtime/constrained.cpp).
  const auto t_warm = Clock::now();
  glass::grammar::warm_json_tables(vocab);
  const double warm_ms = us_since(t_warm) / 1000;
  if (vocab->end_tokens().empty()) {
    fmt::print(stderr, "vocabulary has no end-of-generation token\n");
    return 1;
  }

  std::ifstream f(corpus_path);
  std::string line;
  Stats tbm, tbm_cpu, ttfm, compile;
  size_t n_schemas = 0, n_instances = 0, n_rejected = 0, n_failed_compile = 0, n_no_end = 0;
  std::vector<uint64_t> mask(vocab->mask_words());
  auto allowed = [&](int32_t id) -> bool { return (mask[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; };
  while (std::getline(f, line)) {
    const auto entry = nlohmann::ordered_json::parse(line);
    const std::string schema = entry["schema"].dump();
    const auto t0 = Clock::now();
    auto text = glass::grammar::json_schema_to_gbnf(schema);
    if (!text) {
      ++n_failed_compile;
      continue;
    }
    auto g = glass::grammar::compile_gbnf(*text);
    if (!g) {
      ++n_failed_compile;
      continue;
    }
    auto bound = std::make_shared<glass::grammar::BoundGrammar>(
        std::make_shared<const glass::grammar::Grammar>(std::move(*g)), vocab);
    compile.v.push_back(us_since(t0) / 1000);
    ++n_schemas;
    bool first = true;
    for (const std::string inst : entry["valid"]) {
      auto ids = tok->encode(inst, /*add_special=*/false, /*parse_special=*/false);
      if (!ids) continue;
      ++n_instances;
      glass::grammar::Matcher m(bound);
      bool ok = true;
      for (size_t k = 0; k <= ids->size() && ok; ++k) {
        const auto t = Clock::now();
        const double c0 = thread_cpu_us();
        if (!m.fill_mask(mask).ok()) {
          ok = false;
          break;
        }
        tbm_cpu.v.push_back(thread_cpu_us() - c0);
        const double us = us_since(t);
        tbm.v.push_back(us);
        if (first) {
          ttfm.v.push_back(us_since(t0) / 1000);
          first = false;
        }
        if (k == ids->size()) {
          if (!allowed(vocab->end_tokens()[0])) ++n_no_end;
          break;
        }
        const int32_t id = (*ids)[k];
        if (!allowed(id) || !m.accept_token(id)) {
          ++n_rejected;
          ok = false;
        }
      }
    }
  }
  fmt::print("vocabulary: {} ({} tokens, index built in {:.1f} ms, JSON primitive tables in {:.1f} ms)\n",
             which, vocab->vocab_size(), index_ms, warm_ms);
  fmt::print("schemas: {} compiled ({} failed), {} instances, {} masks\n", n_schemas, n_failed_compile,
             n_instances, tbm.v.size());
  fmt::print("valid instances refused: {} (token outside the mask), {} (end not allowed at the end)\n",
             n_rejected, n_no_end);
  fmt::print("TBM  per token: mean {:.1f} us, p50 {:.1f} us, p99 {:.1f} us, max {:.0f} us\n", tbm.mean(),
             tbm.pct(0.5), tbm.pct(0.99), tbm.pct(1.0));
  fmt::print("TBM  per token, thread CPU time: mean {:.1f} us, p50 {:.1f} us, p99 {:.1f} us, max {:.0f} us\n",
             tbm_cpu.mean(), tbm_cpu.pct(0.5), tbm_cpu.pct(0.99), tbm_cpu.pct(1.0));
  fmt::print("TTFM per schema: mean {:.2f} ms, p50 {:.2f} ms, p99 {:.2f} ms\n", ttfm.mean(), ttfm.pct(0.5),
             ttfm.pct(0.99));
  fmt::print("compile per schema (JSON Schema -> grammar, bind): mean {:.3f} ms, p99 {:.3f} ms\n",
             compile.mean(), compile.pct(0.99));
  return n_rejected + n_no_end == 0 ? 0 : 2;
}
