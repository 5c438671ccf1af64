// Hyper-parameters a hostile file claims, checked against what the file holds before any work or
// allocation scales with them (hparam_bounds.h, run by the registry for every family): a file of a
// few KB saying block_count = 4e9, head_count = 2^31 or key_length = 4e9 fails at once, naming the
// key, with memory bounded (support/counting_new.h) rather than time measured.
#include <gtest/gtest.h>

#include <string>

#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "models/architecture.h"
#include "models/hparam_bounds.h"
#include "support/counting_new.h"
#include "support/gguf_writer.h"

namespace glass::models {
namespace {

using test::GgufWriter;

// A valid 1-layer model of `arch`'s llama-like layout (dim 8, ffn 16, 2 heads) with `key` set to
// `value` (a u64: values past u32 too).
formats::GgufFile tiny(const std::string& arch, const std::string& key, uint64_t value) {
  GgufWriter w;
  w.kv("general.architecture", GgufWriter::string(arch));
  const std::pair<std::string, uint32_t> ints[] = {
      {"block_count", 1},          {"context_length", 32},      {"embedding_length", 8},
      {"feed_forward_length", 16}, {"attention.head_count", 2}, {"attention.head_count_kv", 1}};
  for (const auto& [k, v] : ints)
    if (arch + "." + k != key) w.kv(arch + "." + k, GgufWriter::u32(v));
  w.kv(key, GgufWriter::u64(value));
  w.kv(arch + ".attention.layer_norm_rms_epsilon", GgufWriter::f32(1e-5f));
  const std::pair<std::string, std::vector<int64_t>> tensors[] = {
      {"token_embd.weight", {8, 8}},        {"output_norm.weight", {8}},
      {"blk.0.attn_norm.weight", {8}},      {"blk.0.attn_q.weight", {8, 8}},
      {"blk.0.attn_k.weight", {4, 8}},      {"blk.0.attn_v.weight", {4, 8}},
      {"blk.0.attn_output.weight", {8, 8}}, {"blk.0.ffn_norm.weight", {8}},
      {"blk.0.ffn_gate.weight", {16, 8}},   {"blk.0.ffn_up.weight", {16, 8}},
      {"blk.0.ffn_down.weight", {8, 16}}};
  for (const auto& [name, shape] : tensors) w.tensor_filled(name, shape, 0.5f);
  auto f = formats::GgufFile::parse(formats::MappedFile::from_bytes("hostile.gguf", w.build().bytes));
  EXPECT_TRUE(f.ok()) << f.error().message;
  return std::move(*f);
}

TEST(HostileHparams, ImpossibleSizesAreRejectedByEveryFamily) {
  struct Case {
    std::string suffix;
    uint64_t value;
    std::string says;
  };
  const Case cases[] = {
      {"block_count", 4000000000u, "fewer than one per layer"},
      {"block_count", 3, "no tensor of layer 2"},
      {"block_count", uint64_t{1} << 40, "fewer than one per layer"},
      {"attention.head_count", uint64_t{1} << 31, "largest tensor"},
      {"attention.head_count_kv", 4000000000u, "largest tensor"},
      {"attention.key_length", 4000000000u, "largest tensor"},
      {"feed_forward_length", 4000000000u, "largest tensor"},
      {"vocab_size", 4000000000u, "largest tensor"},
      {"expert_count", 4000000000u, "largest tensor"},
      {"rope.dimension_count", 4000000000u, "largest tensor"},
      {"shortconv.l_cache", 4000000000u, "largest tensor"},
      {"ssm.conv_kernel", 4000000000u, "largest tensor"},
      {"ssm.state_size", 4000000000u, "largest tensor"},
      {"ssm.inner_size", 4000000000u, "largest tensor"},
      {"ssm.time_step_rank", 4000000000u, "largest tensor"},
      {"ssm.group_count", 4000000000u, "largest tensor"},
      {"attention.key_length_swa", 4000000000u, "largest tensor"},
      {"rope.dimension_count_swa", 4000000000u, "largest tensor"},
  };
  BuildOptions opt;
  opt.n_ctx = 64;
  for (std::string_view arch : architecture_names()) {
    const Architecture* a = find_architecture(arch);
    ASSERT_NE(a, nullptr);
    for (const Case& c : cases) {
      const std::string key = std::string(arch) + "." + c.suffix;
      const formats::GgufFile f = tiny(std::string(arch), key, c.value);
      const WeightIndex w = weight_index(f);
      test::reset_peak_bytes();
      const uint64_t before = test::live_bytes();
      auto g = a->from_gguf(f, w, opt);
      ASSERT_FALSE(g.ok()) << key << " = " << c.value;
      EXPECT_EQ(g.error().code, ErrorCode::InvalidFile) << g.error().message;
      EXPECT_NE(g.error().message.find(key), std::string::npos) << g.error().message;
      EXPECT_NE(g.error().message.find(c.says), std::string::npos) << g.error().message;
      EXPECT_NE(g.error().message.find("hostile.gguf"), std::string::npos) << g.error().message;
      EXPECT_LE(test::peak_bytes() - before, uint64_t{1} << 20) << key;
    }
  }
}

TEST(HostileHparams, HeadsTimesHeadDimMustFitTheFile) {
  // The largest tensor has 128 elements: 2 heads of 100 each fit alone, not together.
  const formats::GgufFile f = tiny("llama", "llama.attention.key_length", 100);
  auto s = check_hparams_fit_file(f, weight_index(f), "llama");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("llama.attention.head_count"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("llama.attention.key_length = 100"), std::string::npos)
      << s.error().message;
  const formats::GgufFile ok = tiny("llama", "llama.attention.key_length", 64);
  EXPECT_TRUE(check_hparams_fit_file(ok, weight_index(ok), "llama").ok());
}

TEST(HostileHparams, HfConfigSizesAreCheckedAgainstTheCheckpoint) {
  // head_dim = 2^30 would make Llama 3 RoPE factors of 2 GiB before any tensor is looked at.
  auto c = formats::HfConfig::parse(
      R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 1, "head_dim": 1073741824,
          "num_hidden_layers": 1, "intermediate_size": 128, "vocab_size": 32,
          "rope_scaling": {"rope_type": "llama3", "factor": 8.0}})",
      "", "dir");
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto s = check_hf_config_fits(*c, 64 * 128, 12);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("head_dim"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("config.json"), std::string::npos) << s.error().message;
  auto layers =
      formats::HfConfig::parse(R"({"model_type": "llama", "num_hidden_layers": 100000})", "", "dir");
  ASSERT_TRUE(layers.ok());
  auto l = check_hf_config_fits(*layers, 1 << 20, 12);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().message.find("num_hidden_layers"), std::string::npos) << l.error().message;
  EXPECT_TRUE(check_hf_config_fits(*layers, 1 << 20, 1000000).ok());
}

}  // namespace
}  // namespace glass::models
