// The HF adapters of the non-Llama families (hf_families.h): config.json keys to GGUF keys, and the
// binding features they need (stacked parts, 1 + w norms, multimodal prefixes). Logits against the
// GGUF twins: tests/conformance/hf_twins_test.cpp.
#include "models/hf_families.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <map>

#include "models/hf_keys.h"

namespace glass::models {
namespace {

Result<formats::GgufFile> normalized(const HfAdapter& a, const std::string& json, HfNormalized& out) {
  auto config = formats::HfConfig::parse(json, "", "dir");
  if (!config) return config.error();
  if (auto st = a.normalize(*config, out); !st) return st.error();
  return out.metadata.build("dir/config.json");
}

// A Qwen3-MoE config.json with `extra` members appended.
std::string qwen3moe(const std::string& extra = "") {
  return R"({"model_type": "qwen3_moe", "hidden_size": 128, "intermediate_size": 384,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
    "max_position_embeddings": 256, "rms_norm_eps": 1e-6, "rope_theta": 1e6, "num_experts": 8,
    "num_experts_per_tok": 2, "moe_intermediate_size": 64, "norm_topk_prob": true)" +
         extra + "}";
}

TEST(HfFamilies, Qwen3MoeKeys) {
  HfNormalized out;
  auto f = normalized(kQwen3MoeHf, qwen3moe(), out);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(*f->get_u32("qwen3moe.expert_count"), 8u);
  EXPECT_EQ(*f->get_u32("qwen3moe.expert_used_count"), 2u);
  EXPECT_EQ(*f->get_u32("qwen3moe.expert_feed_forward_length"), 64u);
  EXPECT_EQ(*f->get_u32("qwen3moe.attention.key_length"), 64u);
  EXPECT_TRUE(*f->get_bool("qwen3moe.expert_weights_norm"));
  EXPECT_EQ(*f->get_f32("qwen3moe.rope.freq_base"), 1e6f);
  EXPECT_EQ(out.n_layers, 2);
}

TEST(HfFamilies, RefusalsNameTheKey) {
  struct Case {
    const HfAdapter* adapter;
    std::string json;
    const char* key;
  };
  const std::string qwen2 =
      R"({"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 64, "num_hidden_layers": 1,
          "num_attention_heads": 4, "rms_norm_eps": 1e-6, "max_position_embeddings": 64)";
  const std::string gemma2 =
      R"({"model_type": "gemma2", "hidden_size": 64, "intermediate_size": 64, "num_hidden_layers": 1,
          "num_attention_heads": 4, "head_dim": 16, "rms_norm_eps": 1e-6)";
  const Case cases[] = {
      {&kQwen3MoeHf, qwen3moe(R"(, "mlp_only_layers": [1])"), "mlp_only_layers"},
      {&kQwen3MoeHf, qwen3moe(R"(, "decoder_sparse_step": 2)"), "decoder_sparse_step"},
      {&kQwen2Hf, qwen2 + R"(, "use_sliding_window": true})", "use_sliding_window"},
      {&kQwen2Hf, qwen2 + R"(, "hidden_act": "gelu"})", "hidden_act"},
      {&kQwen2Hf, qwen2 + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4}})", "rope_scaling"},
      {&kGemma2Hf, gemma2 + R"(, "query_pre_attn_scalar": 144})", "query_pre_attn_scalar"},
      {&kPhi3Hf,
       qwen2 + R"(, "rope_scaling": {"type": "longrope", "long_factor": [1], "short_factor": [1]}})",
       "rope_scaling"},
  };
  for (const Case& c : cases) {
    HfNormalized out;
    auto f = normalized(*c.adapter, c.json, out);
    ASSERT_FALSE(f.ok()) << c.json;
    EXPECT_EQ(f.error().code, ErrorCode::Unsupported) << f.error().message;
    EXPECT_NE(f.error().message.find(c.key), std::string::npos) << f.error().message;
  }
}

TEST(HfFamilies, Phi3PartialRotaryAndGemmaLayerKinds) {
  HfNormalized phi;
  auto p = normalized(kPhi3Hf,
                      R"({"model_type": "phi3", "hidden_size": 128, "intermediate_size": 256,
                          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                          "rms_norm_eps": 1e-5, "max_position_embeddings": 256,
                          "original_max_position_embeddings": 128, "partial_rotary_factor": 0.75})",
                      phi);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(*p->get_u32("phi3.rope.dimension_count"), 24u);
  EXPECT_EQ(*p->get_u32("phi3.rope.scaling.original_context_length"), 128u);
  EXPECT_EQ(*p->get_u32("phi3.attention.sliding_window"), 0u);

  // Gemma 3 (multimodal: the text config nested): layer_types that follow a period become it.
  HfNormalized g;
  auto f = normalized(kGemma3Hf,
                      R"({"model_type": "gemma3", "text_config": {"hidden_size": 64, "intermediate_size": 64,
                          "num_hidden_layers": 4, "num_attention_heads": 2, "head_dim": 32,
                          "query_pre_attn_scalar": 32, "sliding_window": 8, "rope_local_base_freq": 1e4,
                          "rope_scaling": {"rope_type": "linear", "factor": 8.0},
                          "layer_types": ["sliding_attention", "sliding_attention", "full_attention",
                                          "sliding_attention"]}})",
                      g);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(*f->get_u32("gemma3.attention.sliding_window_pattern"), 3u);
  EXPECT_EQ(*f->get_f32("gemma3.rope.freq_base"), 1e6f);  // Gemma3TextConfig's default
  EXPECT_EQ(*f->get_f32("gemma3.rope.freq_base_swa"), 1e4f);
  EXPECT_EQ(*f->get_f32("gemma3.rope.scaling.factor"), 8.0f);
  EXPECT_TRUE(g.tied_embeddings);
}

TEST(HfFamilies, NormalQuantile) {
  EXPECT_NEAR(normal_quantile(0.95), 1.6448536269514722, 1e-12);
  EXPECT_NEAR(normal_quantile(0.5), 0.0, 1e-15);
}

// Fake checkpoint tensors with real data.
struct Fake {
  std::deque<std::vector<float>> data;
  std::deque<formats::SafetensorsTensor> storage;
  std::map<std::string, const formats::SafetensorsTensor*, std::less<>> map;
  void add(const std::string& name, std::vector<int64_t> shape, float value) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float>& v = data.emplace_back(static_cast<size_t>(n), value);
    formats::SafetensorsTensor& t = storage.emplace_back();
    t.name = name;
    t.dtype = "F32";
    t.graph_dtype = graph::DType::F32;
    t.shape = std::move(shape);
    t.nbytes = static_cast<uint64_t>(n) * 4;
    t.data = v.data();
    map.emplace(name, &t);
  }
};

constexpr HfTensorName kTable[] = {
    {"model.norm.weight", "output_norm.weight", HfRole::Required, HfTransform::AddOne},
    {"model.layers.{}.experts.{e}.w", "blk.{}.exps.weight", HfRole::Required},
};
constexpr HfRename kRenames[] = {{"model.language_model.", "model."}};
constexpr std::string_view kSkipped[] = {"model.vision_tower."};
const HfAdapter kAdapter{nullptr, kTable, false, kRenames, kSkipped};

TEST(HfBindStacked, StacksPartsShiftsNormsAndRenames) {
  Fake f;
  f.add("model.language_model.norm.weight", {4}, -0.25f);
  for (int e = 0; e < 3; ++e) f.add(fmt::format("model.language_model.layers.0.experts.{}.w", e), {2, 2}, e);
  f.add("model.vision_tower.conv", {1}, 0.0f);
  HfOwnedTensors owned;
  auto w = bind_hf_tensors(f.map, kAdapter, 1, false, "hf: dir", owned);
  ASSERT_TRUE(w.ok()) << w.error().message;
  const WeightInfo& norm = w->at("output_norm.weight");
  EXPECT_EQ(static_cast<const float*>(norm.data)[3], 0.75f);
  const WeightInfo& exps = w->at("blk.0.exps.weight");
  EXPECT_EQ(exps.shape, (std::vector<int64_t>{3, 2, 2}));
  const auto* x = static_cast<const float*>(exps.data);
  EXPECT_EQ(x[0], 0.0f);
  EXPECT_EQ(x[4], 1.0f);
  EXPECT_EQ(x[11], 2.0f);
  // Without storage for what must be built: an error, not a dangling pointer.
  Fake plain;
  plain.add("model.norm.weight", {4}, 0.0f);
  plain.add("model.layers.0.experts.0.w", {2, 2}, 0.0f);
  EXPECT_EQ(bind_hf_tensors(plain.map, kTable, 1, false, "hf: dir").error().code, ErrorCode::Internal);
}

TEST(HfBindStacked, GapsAndMismatchedPartsAreNamed) {
  Fake gap;
  gap.add("model.norm.weight", {4}, 0.0f);
  gap.add("model.layers.0.experts.0.w", {2, 2}, 0.0f);
  gap.add("model.layers.0.experts.2.w", {2, 2}, 0.0f);
  HfOwnedTensors owned;
  auto w = bind_hf_tensors(gap.map, kAdapter, 1, false, "hf: dir", owned);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("1 missing: model.layers.0.experts.1.w"), std::string::npos)
      << w.error().message;

  Fake odd;
  odd.add("model.norm.weight", {4}, 0.0f);
  odd.add("model.layers.0.experts.0.w", {2, 2}, 0.0f);
  odd.add("model.layers.0.experts.1.w", {2, 3}, 0.0f);
  w = bind_hf_tensors(odd.map, kAdapter, 1, false, "hf: dir", owned);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("'model.layers.0.experts.1.w' (F32 2x3) cannot be stacked"),
            std::string::npos)
      << w.error().message;

  Fake none;
  none.add("model.norm.weight", {4}, 0.0f);
  w = bind_hf_tensors(none.map, kAdapter, 1, false, "hf: dir", owned);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("model.layers.0.experts.0.w"), std::string::npos) << w.error().message;
}

}  // namespace
}  // namespace glass::models

namespace glass::models {
namespace {

// LFM2-1.2B's config.json (LiquidAI), shortened to 4 layers; `extra` appended.
std::string lfm2(const std::string& extra = "") {
  return R"({"model_type": "lfm2", "hidden_size": 2048, "block_ff_dim": 12288, "block_auto_adjust_ff_dim": true,
    "block_ffn_dim_multiplier": 1.0, "block_multiple_of": 256, "num_hidden_layers": 4,
    "num_attention_heads": 32, "num_key_value_heads": 8, "norm_eps": 1e-5, "conv_L_cache": 3,
    "conv_bias": false, "max_position_embeddings": 128000, "rope_theta": 1000000.0, "vocab_size": 65536,
    "tie_embedding": true, "layer_types": ["conv", "conv", "full_attention", "conv"])" +
         extra + "}";
}

TEST(HfLfm2, KeysAsTheConverterWritesThem) {
  HfNormalized out;
  auto f = normalized(kLfm2Hf, lfm2(), out);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(*f->get_u32("lfm2.feed_forward_length"), 8192u);  // 2/3 of 12288, a multiple of 256
  EXPECT_EQ(*f->get_i32_array("lfm2.attention.head_count_kv"), (std::vector<int32_t>{0, 0, 8, 0}));
  EXPECT_EQ(*f->get_u32("lfm2.shortconv.l_cache"), 3u);
  EXPECT_EQ(*f->get_f32("lfm2.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_TRUE(out.tied_embeddings);
  EXPECT_EQ(out.n_layers, 4);
}

TEST(HfLfm2, RefusalsNameTheKey) {
  const std::pair<std::string, const char*> cases[] = {
      {lfm2(R"(, "conv_bias": true)"), "conv_bias"},
      {lfm2(R"(, "use_pos_enc": false)"), "use_pos_enc"},
  };
  for (const auto& [json, key] : cases) {
    HfNormalized out;
    std::string j = json;
    // The later duplicate key replaces the earlier one: drop the first conv_bias for that case.
    if (std::string(key) == "conv_bias") j.replace(j.find("\"conv_bias\": false,"), 19, "");
    auto f = normalized(kLfm2Hf, j, out);
    ASSERT_FALSE(f.ok()) << j;
    EXPECT_EQ(f.error().code, ErrorCode::Unsupported) << f.error().message;
    EXPECT_NE(f.error().message.find(key), std::string::npos) << f.error().message;
  }
  HfNormalized out;
  auto bad = normalized(kLfm2Hf, lfm2().replace(lfm2().find("\"full_attention\""), 16, "\"mamba\""), out);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("layer_types: [2]"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace glass::models

namespace glass::models {
namespace {

// Qwen3.5's multimodal config.json (text_config), shortened to 4 layers.
std::string qwen35(const std::string& extra = "") {
  return R"({"model_type": "qwen3_5", "tie_word_embeddings": true, "vision_config": {"depth": 2},
    "text_config": {"model_type": "qwen3_5_text", "hidden_size": 1024, "intermediate_size": 3584,
    "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256,
    "rms_norm_eps": 1e-6, "max_position_embeddings": 262144, "vocab_size": 248320,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 16,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25,
                        "mrope_section": [11, 11, 10], "mrope_interleaved": true})" +
         extra + "}}";
}

TEST(HfQwen35, KeysAsTheConverterWritesThem) {
  HfNormalized out;
  auto f = normalized(kQwen35Hf, qwen35(), out);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(*f->get_u32("qwen35.rope.dimension_count"), 64u);  // a quarter of head_dim 256
  EXPECT_EQ(*f->get_i32_array("qwen35.rope.dimension_sections"), (std::vector<int32_t>{11, 11, 10, 0}));
  EXPECT_EQ(*f->get_u32("qwen35.ssm.inner_size"), 2048u);
  EXPECT_EQ(*f->get_u32("qwen35.ssm.group_count"), 16u);
  EXPECT_EQ(*f->get_f32("qwen35.rope.freq_base"), 1e7f);
  const formats::GgufValue* rec = f->find("qwen35.attention.recurrent_layers");
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->count, 4u);
  EXPECT_EQ(rec->element(3).u64, 0u);  // the fourth layer attends
  EXPECT_TRUE(out.tied_embeddings);    // from the wrapper
  HfNormalized moe;
  auto refused = normalized(kQwen35Hf, qwen35(R"(, "num_experts": 256)"), moe);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::Unsupported);
  EXPECT_NE(refused.error().message.find("num_experts"), std::string::npos);
}

// A Gemma 4 E2B-like text config (3 layers: 2 local, 1 global) in its multimodal wrapper, with the
// global layers' rope_parameters `full_rope`.
std::string gemma4(const std::string& full_rope = R"({"rope_type": "proportional", "rope_theta": 1000000.0,
                                       "partial_rotary_factor": 0.25})") {
  return R"({"model_type": "gemma4", "text_config": {"model_type": "gemma4_text", "hidden_size": 64,
    "intermediate_size": 96, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
    "num_global_key_value_heads": 1, "head_dim": 16, "global_head_dim": 32, "sliding_window": 12,
    "layer_types": ["sliding_attention", "sliding_attention", "full_attention"], "num_kv_shared_layers": 1,
    "use_double_wide_mlp": true, "hidden_size_per_layer_input": 8, "final_logit_softcapping": 30.0,
    "vocab_size": 512, "rope_parameters": {"full_attention": )" +
         full_rope + R"(, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}}})";
}

TEST(HfGemma4, KeysAndRopeFrequenciesAsTheConverterWritesThem) {
  HfNormalized out;
  auto f = normalized(kGemma4Hf, gemma4(), out);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(*f->get_u32("gemma4.attention.key_length"), 32u);
  EXPECT_EQ(*f->get_u32("gemma4.attention.key_length_swa"), 16u);
  EXPECT_EQ(*f->get_u32("gemma4.rope.dimension_count"), 32u);  // proportional: rope_freqs says which rotate
  EXPECT_EQ(*f->get_i32_array("gemma4.attention.head_count_kv"), (std::vector<int32_t>{2, 2, 1}));
  EXPECT_EQ(*f->get_i32_array("gemma4.feed_forward_length"), (std::vector<int32_t>{96, 96, 192}));
  EXPECT_EQ(*f->get_u32("gemma4.attention.shared_kv_layers"), 1u);
  EXPECT_EQ(*f->get_f32("gemma4.rope.freq_base_swa"), 1e4f);
  ASSERT_EQ(out.derived.size(), 1u);
  EXPECT_EQ(out.derived[0].name, "rope_freqs.weight");
  std::vector<float> want(16, 1e30f);
  std::fill(want.begin(), want.begin() + 4, 1.0f);  // 32 x 0.25 / 2 pairs rotate
  EXPECT_EQ(out.derived[0].values, want);
  HfNormalized bad;
  auto refused = normalized(kGemma4Hf, gemma4(R"({"rope_type": "yarn", "factor": 4.0})"), bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::Unsupported);
  EXPECT_NE(refused.error().message.find("rope_type"), std::string::npos) << refused.error().message;
}

}  // namespace
}  // namespace glass::models
