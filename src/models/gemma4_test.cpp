// Gemma 4's file checks: what a file claims about layer kinds, KV sharing and MoE layers is checked
// against the tensors and refused with a named error before any graph is built. The model's logits
// are checked in tests/conformance (synthetic-2026).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats/gguf.h"
#include "models/architecture.h"
#include "support/gguf_writer.h"

namespace glass::models {
namespace {

using test::GgufWriter;

struct Tiny {
  std::vector<bool> local = {true, false, true};  // layer kinds
  int shared_kv = 1;
  bool pattern_key = true;
  bool rope_freqs = true;
  bool moe_router = false;
};

// A 3-layer Gemma 4 (dim 8, 2 heads of 4, 1 KV head, ffn 16, window 4).
formats::GgufFile tiny(const Tiny& t) {
  GgufWriter w;
  const std::string a = "gemma4.";
  w.kv("general.architecture", GgufWriter::string("gemma4"));
  const int64_t n = static_cast<int64_t>(t.local.size());
  for (const auto& [k, v] : std::vector<std::pair<std::string, uint32_t>>{
           {"block_count", static_cast<uint32_t>(n)},
           {"context_length", 64},
           {"embedding_length", 8},
           {"feed_forward_length", 16},
           {"attention.head_count", 2},
           {"attention.head_count_kv", 1},
           {"attention.key_length", 4},
           {"attention.key_length_swa", 4},
           {"attention.sliding_window", 4},
           {"attention.shared_kv_layers", static_cast<uint32_t>(t.shared_kv)}})
    w.kv(a + k, GgufWriter::u32(v));
  w.kv(a + "attention.layer_norm_rms_epsilon", GgufWriter::f32(1e-6f));
  if (t.pattern_key) {
    std::vector<GgufWriter::Value> kinds;
    for (bool l : t.local) kinds.push_back(GgufWriter::boolean(l));
    w.kv(a + "attention.sliding_window_pattern", GgufWriter::array(GgufWriter::kBool, kinds));
  }
  auto add = [&](const std::string& name, const std::vector<int64_t>& shape) {
    w.tensor_filled(name, shape, 0.25f);
  };
  add("token_embd.weight", {8, 8});
  add("output_norm.weight", {8});
  if (t.rope_freqs) add("rope_freqs.weight", {2});
  for (int64_t i = 0; i < n; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    for (const char* norm : {"attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"})
      add(p + norm + ".weight", {8});
    add(p + "attn_q.weight", {8, 8});
    add(p + "attn_q_norm.weight", {4});
    add(p + "attn_k.weight", {4, 8});
    add(p + "attn_k_norm.weight", {4});
    add(p + "attn_v.weight", {4, 8});
    add(p + "attn_output.weight", {8, 8});
    add(p + "ffn_gate.weight", {16, 8});
    add(p + "ffn_up.weight", {16, 8});
    add(p + "ffn_down.weight", {8, 16});
  }
  if (t.moe_router) add("blk.1.ffn_gate_inp.weight", {4, 8});
  auto f = formats::GgufFile::parse(formats::MappedFile::from_bytes("tiny-gemma4.gguf", w.build().bytes));
  EXPECT_TRUE(f.ok()) << f.error().message;
  return std::move(*f);
}

Result<ModelGraph> load(const formats::GgufFile& f) {
  BuildOptions opt;
  opt.n_ctx = 32;
  return find_architecture("gemma4")->from_gguf(f, weight_index(f), opt);
}

TEST(Gemma4File, AValidFileBuildsWithItsLayerKinds) {
  auto m = load(tiny({}));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_NE(m->summary.find("3 layers (LGL)"), std::string::npos) << m->summary;
  EXPECT_NE(m->summary.find("2 cache-owning layers"), std::string::npos) << m->summary;
  EXPECT_EQ(m->window, 4);
}

TEST(Gemma4File, SharingTheCacheOfALayerOfTheOtherKindIsRefused) {
  // Layer 2 (local) would read layer 0 (llama.cpp's rule: n_kv - 2), which is global.
  auto m = load(tiny({.local = {false, true, true}}));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::InvalidFile);
  EXPECT_NE(m.error().message.find("gemma4.attention.shared_kv_layers"), std::string::npos)
      << m.error().message;
  EXPECT_NE(m.error().message.find("layer 2"), std::string::npos) << m.error().message;
}

TEST(Gemma4File, SharingEveryLayerIsRefused) {
  auto m = load(tiny({.shared_kv = 3}));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("shared_kv_layers"), std::string::npos) << m.error().message;
}

TEST(Gemma4File, LayerKindsMustBeNamed) {
  auto m = load(tiny({.pattern_key = false}));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("gemma4.attention.sliding_window_pattern"), std::string::npos)
      << m.error().message;
}

TEST(Gemma4File, GlobalLayersNeedTheirRopeFrequencies) {
  auto m = load(tiny({.rope_freqs = false}));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("rope_freqs.weight"), std::string::npos) << m.error().message;
}

TEST(Gemma4File, ExpertLayersNeedTheirCounts) {
  auto m = load(tiny({.moe_router = true}));  // a router, but no expert_count / expert_used_count
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::InvalidFile);
  EXPECT_NE(m.error().message.find("blk.1.ffn_gate_inp.weight"), std::string::npos) << m.error().message;
  EXPECT_NE(m.error().message.find("gemma4.expert_count"), std::string::npos) << m.error().message;
}

}  // namespace
}  // namespace glass::models
