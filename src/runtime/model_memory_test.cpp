// A model holds one copy of each weight in memory: where the cpu backend repacks a weight, the
// file mapping's pages of the original are dropped (MappedFile::release) as the copy is made.
// Measured with /proc/self/smaps on the shared fixtures' synthetic llama-gqa-q4_0.gguf (written by
// llama-quantize; Q4_0 repacks with AVX-512 VNNI) and on an HF checkpoint with F16 weights (f16x16
// repacks with AVX-512).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "backend/cpu/cpu_test_support.h"
#include "glass/llm.h"
#include "support/fixtures.h"
#include "support/process_memory.h"
#include "support/tiny_hf_llama.h"

namespace glass {
namespace {

// Resident bytes of the mapping of `file` (the model, or one of its shards) after loading `path` and running
// a prompt and a few decode steps (greedy), and the tokens generated.
struct Generated {
  uint64_t resident = 0;
  std::vector<int32_t> tokens;
};
Generated load_and_generate(const std::filesystem::path& path, const std::filesystem::path& file,
                            bool repack) {
  LoadOptions opt;
  opt.backend = "cpu";
  opt.n_threads = 2;
  opt.repack_weights = repack;
  auto model = load_llm(path.string(), opt);
  EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error().message);
  if (!model.ok()) return {};
  auto session = (*model)->new_session();
  EXPECT_TRUE(session.ok());
  const std::vector<int32_t> ids = {1, 17, 300, 42, 7};
  GenerateConfig cfg;
  cfg.max_tokens = 8;
  cfg.sampling.temperature = 0.0f;
  auto r = generate(**session, ids, cfg);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  const auto resident = test::resident_bytes_of_file(std::filesystem::canonical(file).string());
  EXPECT_TRUE(resident.has_value());
  return {resident.value_or(0), r.ok() ? r->tokens : std::vector<int32_t>{}};
}

class ModelMemory : public test::WithSharedFixtures {};

TEST_F(ModelMemory, RepackedWeightsLeaveTheFileMapping) {
  const auto q4 = fixtures_ / "models" / "synthetic" / "llama-gqa-q4_0.gguf";
  const uint64_t file_bytes = std::filesystem::file_size(q4);
  const Generated plain = load_and_generate(q4, q4, false), repacked = load_and_generate(q4, q4, true);
  EXPECT_EQ(repacked.tokens, plain.tokens);
  ASSERT_EQ(plain.tokens.size(), 8u);
  // Without repacks every weight was read from the mapping: most of the file is resident.
  EXPECT_GT(plain.resident, file_bytes / 2);
  if (backend::cpu::testing::repacks(graph::DType::Q4_0)) {
    // The Q4_0 (and q8_0 / q6_k where the mix put them) matmul weights are most of the file; their
    // pages left, bar the embedding rows the prompt and the decode steps looked up.
    EXPECT_LT(repacked.resident, plain.resident / 2) << plain.resident;
  } else {
    EXPECT_EQ(repacked.resident, plain.resident);  // nothing repacked, nothing dropped
  }
}

// An HF checkpoint: its F16 output projection (4096 x 16, 32 pages) is repacked, and those pages
// leave the shard's mapping as with a GGUF file. The tokenizer has 8 tokens, so the prompt's
// lookups touch the embedding's first page; the decode steps may look up any of its rows.
TEST(ModelMemoryHf, RepackedWeightsLeaveTheShardMapping) {
  const auto tiny = test::write_tiny_hf_llama({.vocab_rows = 4096, .f16 = true}, "hf_memory");
  const auto shard = tiny.dir / "model.safetensors";
  const Generated plain = load_and_generate(tiny.dir, shard, false),
                  repacked = load_and_generate(tiny.dir, shard, true);
  ASSERT_EQ(plain.tokens.size(), 8u);
  EXPECT_EQ(repacked.tokens, plain.tokens);
  const uint64_t head_bytes = uint64_t{4096} * 16 * 2;
  EXPECT_GE(plain.resident, head_bytes);  // the head is read whole at every step
  if (backend::cpu::testing::repacks(graph::DType::F16)) {
    // Its pages left, bar what a fault around an embedding row may have mapped back (64 KiB at most).
    EXPECT_LE(repacked.resident + head_bytes / 2, plain.resident) << plain.resident;
  } else {
    EXPECT_EQ(repacked.resident, plain.resident);
  }
}

}  // namespace
}  // namespace glass
