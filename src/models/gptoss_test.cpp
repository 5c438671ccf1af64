// gpt-oss's file checks: what a file claims about its experts, RoPE scaling and windows is checked
// before a graph is built, and refused naming the key. Its logits are checked in tests/conformance
// (synthetic-2026), YaRN's frequencies here against ggml's formula written out.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "models/architecture.h"
#include "models/yarn.h"
#include "support/gguf_writer.h"

namespace glass::models {
namespace {

using test::GgufWriter;

struct Tiny {
  std::string scaling = "yarn";
  bool experts = true;
  int64_t window = 4;
};

// A 2-layer gpt-oss (dim 32, 2 heads of 16, 1 KV head, 4 experts of 32, top 2).
formats::GgufFile tiny(const Tiny& t) {
  GgufWriter w;
  const std::string a = "gpt-oss.";
  w.kv("general.architecture", GgufWriter::string("gpt-oss"));
  std::vector<std::pair<std::string, uint32_t>> ints = {
      {"block_count", 2},
      {"context_length", 64},
      {"embedding_length", 32},
      {"feed_forward_length", 32},
      {"attention.head_count", 2},
      {"attention.head_count_kv", 1},
      {"attention.key_length", 16},
      {"attention.sliding_window", static_cast<uint32_t>(t.window)},
      {"expert_feed_forward_length", 32},
      {"rope.scaling.original_context_length", 32}};
  if (t.experts) {
    ints.push_back({"expert_count", 4});
    ints.push_back({"expert_used_count", 2});
  }
  for (const auto& [k, v] : ints) w.kv(a + k, GgufWriter::u32(v));
  w.kv(a + "attention.layer_norm_rms_epsilon", GgufWriter::f32(1e-5f));
  w.kv(a + "rope.scaling.type", GgufWriter::string(t.scaling));
  w.kv(a + "rope.scaling.factor", GgufWriter::f32(4.0f));
  auto add = [&](const std::string& name, const std::vector<int64_t>& shape) {
    w.tensor_filled(name, shape, 0.125f);
  };
  add("token_embd.weight", {8, 32});
  add("output_norm.weight", {32});
  add("output.weight", {8, 32});
  for (int i = 0; i < 2; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    add(p + "attn_norm.weight", {32});
    add(p + "post_attention_norm.weight", {32});
    for (const auto& [what, rows] : {std::pair{"attn_q", 32}, {"attn_k", 16}, {"attn_v", 16}}) {
      add(p + what + ".weight", {rows, 32});
      add(p + what + ".bias", {rows});
    }
    add(p + "attn_output.weight", {32, 32});
    add(p + "attn_output.bias", {32});
    add(p + "attn_sinks.weight", {2});
    add(p + "ffn_gate_inp.weight", {4, 32});
    add(p + "ffn_gate_inp.bias", {4});
    for (const char* e : {"ffn_gate_exps", "ffn_up_exps"}) {
      add(p + e + ".weight", {4, 32, 32});
      add(p + e + ".bias", {4, 32});
    }
    add(p + "ffn_down_exps.weight", {4, 32, 32});
    add(p + "ffn_down_exps.bias", {4, 32});
  }
  auto f = formats::GgufFile::parse(formats::MappedFile::from_bytes("tiny-gpt-oss.gguf", w.build().bytes));
  EXPECT_TRUE(f.ok()) << f.error().message;
  return std::move(*f);
}

Result<ModelGraph> load(const formats::GgufFile& f) {
  BuildOptions opt;
  opt.n_ctx = 32;
  return find_architecture("gpt-oss")->from_gguf(f, weight_index(f), opt);
}

TEST(GptOssFile, AValidFileBuildsWithAlternatingWindows) {
  auto m = load(tiny({}));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_NE(m->summary.find("2 layers (LG)"), std::string::npos) << m->summary;
  EXPECT_EQ(m->window, 4);
}

TEST(GptOssFile, RefusalsNameTheKey) {
  auto scaling = load(tiny({.scaling = "longrope"}));
  ASSERT_FALSE(scaling.ok());
  EXPECT_NE(scaling.error().message.find("gpt-oss.rope.scaling.type"), std::string::npos)
      << scaling.error().message;
  auto experts = load(tiny({.experts = false}));
  ASSERT_FALSE(experts.ok());
  EXPECT_NE(experts.error().message.find("gpt-oss.expert_count"), std::string::npos)
      << experts.error().message;
  auto window = load(tiny({.window = 0}));
  ASSERT_FALSE(window.ok());
  EXPECT_NE(window.error().message.find("gpt-oss.attention.sliding_window"), std::string::npos)
      << window.error().message;
}

// YaRN against ggml's rope_yarn written out: pair i's angle p theta_i (s (1 - r_i) + r_i) with r_i the
// ramp between the correction dimensions of beta_fast and beta_slow, cos and sin times 1 + 0.1 ln f.
TEST(Yarn, DivisorsAndScaleAsGgmlComputesThem) {
  const YarnParams p{.n_rot = 64, .freq_base = 150000.0f, .factor = 32.0f, .n_ctx_orig = 4096};
  const YarnRope y = yarn_rope(p);
  ASSERT_EQ(y.divisors.size(), 32u);
  auto corr = [&](double beta) {
    return 64.0 * std::log(4096.0 / (beta * 2.0 * M_PI)) / (2.0 * std::log(150000.0));
  };
  const double low = std::max(0.0, std::floor(corr(32.0))), high = std::min(63.0, std::ceil(corr(1.0)));
  for (int i = 0; i < 32; ++i) {
    const double ramp = 1.0 - std::clamp((i - low) / std::max(0.001, high - low), 0.0, 1.0);
    const double mix = (1.0 / 32.0) * (1.0 - ramp) + ramp;
    EXPECT_NEAR(1.0 / y.divisors[static_cast<size_t>(i)], mix, 1e-6) << i;
  }
  EXPECT_EQ(y.divisors.front(), 1.0f);          // the fastest pairs extrapolate
  EXPECT_NEAR(y.divisors.back(), 32.0f, 1e-4);  // the slowest interpolate by the factor
  EXPECT_NEAR(y.scale, 1.0 + 0.1 * std::log(32.0), 1e-6);
  EXPECT_EQ(yarn_rope({.n_rot = 8, .factor = 1.0f}).scale, 1.0f);  // no scaling: plain RoPE
}

}  // namespace
}  // namespace glass::models
