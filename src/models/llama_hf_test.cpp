// Llama from HF checkpoints: the three stories260K HF folders (single file, sharded, tied) against
// llama.cpp's logits for stories260K.gguf (every logit, every mode, <= 1e-4) and its greedy text;
// config.json normalisation and the name table's coverage rules.
#include "models/llama_hf.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "formats/npy.h"
#include "glass/llm.h"
#include "models/llama.h"
#include "runtime/verify.h"
#include "support/fixtures.h"

namespace glass::models {
namespace {

// Reference tests.

class LlamaHfReference : public test::WithSharedFixtures,
                         public ::testing::WithParamInterface<const char*> {};

TEST_P(LlamaHfReference, EveryLogitInEveryModeMatchesTheGgufReference) {
  const auto ref_dir = fixtures_ / "reference/stories260K";
  std::ifstream in(ref_dir / "logits.json");
  const auto tokens = nlohmann::json::parse(in).at("token_ids").get<std::vector<int32_t>>();
  auto expected = formats::read_npy_f32(ref_dir / "logits.npy");
  ASSERT_TRUE(expected.ok()) << expected.error().message;
  for (bool decompose : {false, true}) {
    LoadOptions opt{.backend = "ref"};
    opt.decompose = decompose;
    auto model = load_llm((fixtures_ / "models" / GetParam()).string(), opt);
    ASSERT_TRUE(model.ok()) << model.error().message;
    EXPECT_EQ((*model)->info().architecture, "llama");
    EXPECT_EQ((*model)->info().n_ctx_train, 512);  // max_position_embeddings (the GGUF says 128)
    EXPECT_EQ((*model)->info().weight_type, "f32");
    for (const char* mode_name : {"prefill", "decode", "chunked:7"}) {
      auto mode = verify::parse_mode(mode_name, static_cast<int64_t>(tokens.size()));
      ASSERT_TRUE(mode.ok());
      auto got = verify::eval_logits(**model, tokens, *mode);
      ASSERT_TRUE(got.ok()) << got.error().message;
      const verify::Metrics m = verify::compare(*got, expected->data, (*model)->info().vocab_size);
      EXPECT_LE(m.max_abs, 1e-4) << GetParam() << " " << mode_name << (decompose ? " decomposed" : "");
      EXPECT_EQ(m.top1, 1.0) << GetParam() << " " << mode_name;
    }
  }
}

TEST_P(LlamaHfReference, GreedyTextMatchesLlamaCpp) {
  std::ifstream in(fixtures_ / "reference/stories260K/greedy.json");
  const auto doc = nlohmann::json::parse(in);
  auto model = load_llm((fixtures_ / "models" / GetParam()).string(), {.backend = "ref"});
  ASSERT_TRUE(model.ok()) << model.error().message;
  ASSERT_GE(doc.at("cases").size(), 3u);
  for (const auto& c : doc.at("cases")) {
    const std::string prompt = c.at("prompt").get<std::string>();
    auto ids = (*model)->tokenize(prompt);  // tokenizer.json
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, c.at("prompt_token_ids").get<std::vector<int32_t>>()) << prompt;
    auto session = (*model)->new_session();
    GenerateConfig cfg;
    cfg.max_tokens = c.at("n_new_tokens_requested").get<int32_t>();
    cfg.sampling.temperature = 0.0f;
    auto r = generate(**session, *ids, cfg, [](std::string_view) { return true; });
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->tokens, c.at("continuation_token_ids").get<std::vector<int32_t>>()) << prompt;
    EXPECT_EQ(r->text, c.at("continuation_text").get<std::string>()) << prompt;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LlamaHfReference,
                         ::testing::Values("stories260K-hf", "stories260K-hf-sharded", "stories260K-hf-tied"),
                         [](const auto& p) {
                           std::string s = p.param;
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

// HF q/k rows rotate halves; GGUF's were permuted to rotate interleaved pairs. The builder picks
// the pairing from the source, so the rope nodes (q and k) differ only in that attribute.
TEST(LlamaHfLayout, RopePairingFollowsTheSource) {
  LlamaConfig c;
  c.n_layers = 1, c.dim = 16, c.n_heads = 2, c.n_kv_heads = 1, c.head_dim = 8, c.ffn_dim = 8;
  c.vocab_size = 4, c.n_ctx_train = 16, c.n_rot = 8;
  WeightIndex w;
  auto add = [&](const char* name, std::vector<int64_t> shape) {
    w[name] = {shape, graph::DType::F32, nullptr};
  };
  add("token_embd.weight", {4, 16});
  for (const char* n : {"output_norm.weight", "blk.0.attn_norm.weight", "blk.0.ffn_norm.weight"})
    add(n, {16});
  add("blk.0.attn_q.weight", {16, 16});
  add("blk.0.attn_k.weight", {8, 16});
  add("blk.0.attn_v.weight", {8, 16});
  add("blk.0.attn_output.weight", {16, 16});
  add("blk.0.ffn_gate.weight", {8, 16});
  add("blk.0.ffn_up.weight", {8, 16});
  add("blk.0.ffn_down.weight", {16, 8});
  for (bool hf : {false, true}) {
    BuildOptions opt;
    opt.hf_layout = hf;
    auto g = build_llama(c, w, opt);
    ASSERT_TRUE(g.ok()) << g.error().message;
    int ropes = 0;
    for (const graph::Node& n : g->nodes) {
      if (n.op != graph::Op::Rope) continue;
      ++ropes;
      EXPECT_EQ(std::get<graph::RopeAttrs>(n.attrs).mode,
                hf ? graph::RopeMode::NeoX : graph::RopeMode::Normal);
    }
    EXPECT_EQ(ropes, 2);
  }
}

// config.json normalisation.

const char* kStoriesConfig = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": 5, "num_attention_heads": 8,
  "num_key_value_heads": 4, "head_dim": 8, "hidden_act": "silu", "vocab_size": 512,
  "max_position_embeddings": 512, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "rope_scaling": null,
  "attention_bias": false, "mlp_bias": false, "tie_word_embeddings": false, "bos_token_id": 1,
  "eos_token_id": 2})";

// kStoriesConfig with `patch` merged in (null removes a key).
Result<HfNormalized> normalize_with(const char* patch, std::string_view generation = "") {
  auto j = nlohmann::json::parse(kStoriesConfig);
  j.merge_patch(nlohmann::json::parse(patch));
  auto config = formats::HfConfig::parse(j.dump(), generation, "dir");
  if (!config) return config.error();
  HfNormalized out;
  if (auto st = kLlamaHf.normalize(*config, out); !st) return st.error();
  return out;
}

TEST(LlamaHfConfig, MapsEveryKeyTheGgufReaderReads) {
  auto n = normalize_with("{}");
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(n->n_layers, 5);
  EXPECT_FALSE(n->tied_embeddings);
  EXPECT_TRUE(n->derived.empty());
  auto f = n->metadata.build("dir/config.json");
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(*f->get_string("general.architecture"), "llama");
  EXPECT_EQ(*f->get_u32("llama.block_count"), 5u);
  EXPECT_EQ(*f->get_u32("llama.embedding_length"), 64u);
  EXPECT_EQ(*f->get_u32("llama.feed_forward_length"), 172u);
  EXPECT_EQ(*f->get_u32("llama.attention.head_count"), 8u);
  EXPECT_EQ(*f->get_u32("llama.attention.head_count_kv"), 4u);
  EXPECT_EQ(*f->get_u32("llama.attention.key_length"), 8u);
  EXPECT_EQ(*f->get_u32("llama.context_length"), 512u);
  EXPECT_EQ(*f->get_u32("llama.rope.dimension_count"), 8u);
  EXPECT_EQ(*f->get_u32("llama.vocab_size"), 512u);
  EXPECT_FLOAT_EQ(*f->get_f32("llama.rope.freq_base"), 10000.0f);
  EXPECT_FLOAT_EQ(*f->get_f32("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_EQ(f->find("llama.rope.scaling.type"), nullptr);

  // The GGUF reader turns them into the same LlamaConfig as stories260K.gguf's keys would.
  WeightIndex w;
  w["token_embd.weight"] = {{512, 64}, graph::DType::F32, nullptr};
  auto c = llama_config_from_gguf(*f, w);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->n_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_EQ(c->n_ctx_train, 512);
}

TEST(LlamaHfConfig, DefaultsFollowTransformers) {
  auto n = normalize_with(R"({"num_key_value_heads": null, "head_dim": null, "rope_theta": null,
                               "rms_norm_eps": null, "tie_word_embeddings": null})");
  ASSERT_TRUE(n.ok()) << n.error().message;
  auto f = n->metadata.build("dir/config.json");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f->get_u32("llama.attention.head_count_kv"), 8u);  // = num_attention_heads
  EXPECT_EQ(*f->get_u32("llama.attention.key_length"), 8u);     // hidden / heads
  EXPECT_FLOAT_EQ(*f->get_f32("llama.rope.freq_base"), 10000.0f);
  EXPECT_FLOAT_EQ(*f->get_f32("llama.attention.layer_norm_rms_epsilon"), 1e-6f);
  EXPECT_FALSE(n->tied_embeddings);
  EXPECT_TRUE(normalize_with(R"({"tie_word_embeddings": true})")->tied_embeddings);
}

TEST(LlamaHfConfig, RopeScaling) {
  auto linear = normalize_with(R"({"rope_scaling": {"type": "linear", "factor": 4.0}})");
  ASSERT_TRUE(linear.ok()) << linear.error().message;
  auto f = linear->metadata.build("x");
  EXPECT_EQ(*f->get_string("llama.rope.scaling.type"), "linear");
  EXPECT_FLOAT_EQ(*f->get_f32("llama.rope.scaling.factor"), 4.0f);

  // transformers 5 moves rope_theta into rope_parameters.
  auto v5 = normalize_with(
      R"({"rope_theta": null, "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0}})");
  ASSERT_TRUE(v5.ok()) << v5.error().message;
  EXPECT_FLOAT_EQ(*v5->metadata.build("x")->get_f32("llama.rope.freq_base"), 500000.0f);

  auto l3 = normalize_with(R"({"rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
      "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})");
  ASSERT_TRUE(l3.ok()) << l3.error().message;
  ASSERT_EQ(l3->derived.size(), 1u);
  EXPECT_EQ(l3->derived[0].name, "rope_freqs.weight");
  EXPECT_EQ(l3->derived[0].shape, (std::vector<int64_t>{4}));

  for (const char* bad : {R"({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}})",
                          R"({"rope_scaling": {"type": "dynamic", "factor": 2.0}})"}) {
    auto r = normalize_with(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::Unsupported);
    EXPECT_NE(r.error().message.find("rope_type"), std::string::npos) << r.error().message;
  }
}

TEST(LlamaHfConfig, Llama3FactorsKeepHighAndDivideLowFrequencies) {
  // Llama 3.1 8B: head_dim 128, theta 500000, factor 8, low 1, high 4, original context 8192.
  const auto f = llama3_rope_factors(128, 500000.0, 8.0, 1.0, 4.0, 8192.0);
  ASSERT_EQ(f.size(), 64u);
  EXPECT_FLOAT_EQ(f.front(), 1.0f);  // wavelength 2*pi: far below 8192/4
  EXPECT_FLOAT_EQ(f.back(), 8.0f);   // wavelength ~ 2*pi*500000^(126/128): far above 8192
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]) << i;  // smooth band in between
  // Pair 32: wavelength 2*pi*500000^(64/128) = 4442.9, between 8192/4 and 8192/1, so interpolated:
  // 1 / ((1 - s)/8 + s) with s = (8192/wavelength - 1) / (4 - 1).
  const double wavelen = 2 * 3.14159265358979 * std::pow(500000.0, 64.0 / 128.0);
  const double s = (8192.0 / wavelen - 1.0) / 3.0;
  ASSERT_GT(s, 0.0);
  ASSERT_LT(s, 1.0);
  EXPECT_NEAR(f[32], 1.0 / ((1.0 - s) / 8.0 + s), 1e-4);
}

TEST(LlamaHfConfig, RefusesWhatTheGraphDoesNotCompute) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"hidden_act": "gelu"})", "hidden_act"},
      {R"({"attention_bias": true})", "attention_bias"},
      {R"({"mlp_bias": true})", "mlp_bias"},
  };
  for (const auto& [patch, key] : cases) {
    auto r = normalize_with(patch);
    ASSERT_FALSE(r.ok()) << patch;
    EXPECT_EQ(r.error().code, ErrorCode::Unsupported) << r.error().message;
    EXPECT_NE(r.error().message.find(key), std::string::npos) << r.error().message;
  }
  const std::pair<const char*, const char*> invalid[] = {
      {R"({"hidden_size": null})", "dir/config.json: hidden_size: is missing"},
      {R"({"num_hidden_layers": "5"})", "num_hidden_layers: expected an integer"},
      {R"({"num_attention_heads": 0})", "num_attention_heads: 0 must be positive"},
      {R"({"rms_norm_eps": -1})", "rms_norm_eps"},
  };
  for (const auto& [patch, text] : invalid) {
    auto r = normalize_with(patch);
    ASSERT_FALSE(r.ok()) << patch;
    EXPECT_EQ(r.error().code, ErrorCode::InvalidFile) << r.error().message;
    EXPECT_NE(r.error().message.find(text), std::string::npos) << r.error().message;
  }
}

TEST(HfConfig, RemoteCodeAndQuantizedCheckpointsAreRefused) {
  auto remote = formats::HfConfig::parse(
      R"({"model_type": "llama", "auto_map": {"AutoModelForCausalLM": "modeling_x.XForCausalLM"}})", "",
      "dir");
  ASSERT_FALSE(remote.ok());
  EXPECT_EQ(remote.error().code, ErrorCode::Unsupported);
  EXPECT_NE(remote.error().message.find("auto_map"), std::string::npos) << remote.error().message;
  EXPECT_NE(remote.error().message.find("trust_remote_code"), std::string::npos) << remote.error().message;
  auto quant = formats::HfConfig::parse(
      R"({"model_type": "llama", "quantization_config": {"quant_method": "gptq"}})", "", "dir");
  ASSERT_FALSE(quant.ok());
  EXPECT_NE(quant.error().message.find("gptq"), std::string::npos) << quant.error().message;
  // MLX's affine quantization: 4-bit read (either key), other widths and modes named and refused.
  auto mlx = formats::HfConfig::parse(
      R"({"model_type": "llama", "quantization": {"group_size": 64, "bits": 4},
          "quantization_config": {"group_size": 64, "bits": 4}})",
      "", "dir");
  ASSERT_TRUE(mlx.ok()) << mlx.error().message;
  ASSERT_TRUE(mlx->mlx_quantization().has_value());
  EXPECT_EQ(mlx->mlx_quantization()->group_size, 64);
  EXPECT_EQ(mlx->mlx_quantization()->bits, 4);
  for (const auto& [json, says] : std::vector<std::pair<std::string, std::string>>{
           {R"({"group_size": 64, "bits": 3})", "MLX 3-bit weights are not supported"},
           {R"({"group_size": 32, "bits": 4, "mode": "mxfp4"})", "MLX mode \"mxfp4\""},
           {R"({"group_size": 48, "bits": 4})", "group_size: expected 32, 64 or 128, got 48"},
           {R"({"group_size": "64", "bits": 4})", "group_size: expected an integer"},
           {R"({"quant_method": "awq", "bits": 4, "group_size": 128})", "quant_method \"awq\""}}) {
    auto r = formats::HfConfig::parse(R"({"model_type": "llama", "quantization_config": )" + json + "}", "",
                                      "dir");
    ASSERT_FALSE(r.ok()) << json;
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
  }
  auto untyped = formats::HfConfig::parse(R"({"hidden_size": 4})", "", "dir");
  ASSERT_FALSE(untyped.ok());
  EXPECT_NE(untyped.error().message.find("model_type: is missing"), std::string::npos);
}

TEST(HfConfig, GenerationConfigWinsForSpecialIds) {
  auto c = formats::HfConfig::parse(R"({"model_type": "llama", "bos_token_id": 1, "eos_token_id": 2})",
                                    R"({"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]})",
                                    "dir");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(*c->bos_token_id(), std::optional<int64_t>(128000));
  EXPECT_EQ(*c->eos_token_ids(), (std::vector<int64_t>{128001, 128008, 128009}));
  auto plain = formats::HfConfig::parse(R"({"model_type": "llama", "eos_token_id": 2})", "", "dir");
  EXPECT_EQ(*plain->eos_token_ids(), (std::vector<int64_t>{2}));
}

TEST(HfRegistry, ModelTypesFindTheirArchitecture) {
  ASSERT_NE(find_architecture_for_model_type("mistral"), nullptr);
  EXPECT_EQ(find_architecture_for_model_type("mistral")->name, "llama");
  EXPECT_EQ(find_architecture_for_model_type("llama")->name, "llama");
  EXPECT_EQ(find_architecture_for_model_type("no-such-model"), nullptr);
  EXPECT_EQ(find_hf_adapter("llama"), &kLlamaHf);
}

// The name table's coverage rules.

struct FakeCheckpoint {
  std::vector<formats::SafetensorsTensor> storage;
  std::map<std::string, const formats::SafetensorsTensor*, std::less<>> map;
  explicit FakeCheckpoint(const std::vector<std::string>& names, std::string dtype = "F32") {
    storage.reserve(names.size());
    for (const std::string& n : names) {
      formats::SafetensorsTensor t;
      t.name = n;
      t.dtype = dtype;
      t.graph_dtype = dtype == "F32" ? std::optional(graph::DType::F32) : std::nullopt;
      t.shape = {1};
      storage.push_back(t);
      map.emplace(n, &storage.back());
    }
  }
};

std::vector<std::string> llama_names(int layers, bool lm_head) {
  std::vector<std::string> n{"model.embed_tokens.weight", "model.norm.weight"};
  if (lm_head) n.push_back("lm_head.weight");
  for (int i = 0; i < layers; ++i)
    for (const char* s :
         {"input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
          "post_attention_layernorm", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
      n.push_back(fmt::format("model.layers.{}.{}.weight", i, s));
  return n;
}

TEST(HfBind, MapsEveryNameToItsCanonicalForm) {
  auto names = llama_names(2, true);
  names.push_back("model.layers.1.self_attn.rotary_emb.inv_freq");  // ignored buffer
  FakeCheckpoint ck(names);
  auto w = bind_hf_tensors(ck.map, kLlamaHf.tensors, 2, false, "hf: dir");
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->size(), 3u + 2 * 9);
  EXPECT_EQ(w->count("blk.1.attn_q.weight"), 1u);
  EXPECT_EQ(w->count("output.weight"), 1u);
  EXPECT_EQ(w->count("token_embd.weight"), 1u);
}

TEST(HfBind, TiedEmbeddingsNeedNoLmHeadAndIgnoreOne) {
  FakeCheckpoint without(llama_names(1, false));
  auto w = bind_hf_tensors(without.map, kLlamaHf.tensors, 1, true, "hf: dir");
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(w->count("output.weight"), 0u);
  FakeCheckpoint with(llama_names(1, true));
  EXPECT_EQ(bind_hf_tensors(with.map, kLlamaHf.tensors, 1, true, "hf: dir")->count("output.weight"), 0u);
  // Untied without lm_head: missing, never silently tied.
  auto untied = bind_hf_tensors(without.map, kLlamaHf.tensors, 1, false, "hf: dir");
  ASSERT_FALSE(untied.ok());
  EXPECT_NE(untied.error().message.find("1 missing: lm_head.weight"), std::string::npos)
      << untied.error().message;
}

TEST(HfBind, ReportsAllMissingAndUnexpectedAtOnce) {
  auto names = llama_names(2, true);
  std::erase(names, "model.layers.0.mlp.up_proj.weight");
  std::erase(names, "model.layers.1.self_attn.k_proj.weight");
  names.push_back("model.layers.2.mlp.up_proj.weight");   // beyond num_hidden_layers
  names.push_back("model.layers.01.mlp.up_proj.weight");  // not a layer index
  names.push_back("model.layers.0.self_attn.q_proj.bias");
  FakeCheckpoint ck(names);
  auto w = bind_hf_tensors(ck.map, kLlamaHf.tensors, 2, false, "hf: dir");
  ASSERT_FALSE(w.ok());
  const std::string& m = w.error().message;
  EXPECT_EQ(w.error().code, ErrorCode::InvalidFile);
  for (const char* part :
       {"2 missing", "model.layers.0.mlp.up_proj.weight", "model.layers.1.self_attn.k_proj.weight",
        "3 unexpected", "model.layers.2.mlp.up_proj.weight", "model.layers.01.mlp.up_proj.weight",
        "model.layers.0.self_attn.q_proj.bias"})
    EXPECT_NE(m.find(part), std::string::npos) << "missing '" << part << "' in: " << m;
}

TEST(HfBind, LayerCountBeyondTheCheckpointIsRefusedBeforeEnumerating) {
  FakeCheckpoint ck(llama_names(1, true));
  auto w = bind_hf_tensors(ck.map, kLlamaHf.tensors, 2'000'000'000, false, "hf: dir");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("2000000000 layers"), std::string::npos) << w.error().message;
}

TEST(HfBind, UnusableDtypeIsUnsupported) {
  FakeCheckpoint ck(llama_names(1, true), "I64");
  auto w = bind_hf_tensors(ck.map, kLlamaHf.tensors, 1, false, "hf: dir");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code, ErrorCode::Unsupported);
  EXPECT_NE(w.error().message.find("'model.embed_tokens.weight' (I64)"), std::string::npos)
      << w.error().message;
}

}  // namespace
}  // namespace glass::models

namespace glass::models {
namespace {

// SmolLM3: Llama's keys under "smollm3", and only the NoPE pattern llama.cpp fixes (every 4th layer).
Result<HfNormalized> smollm3_with(const char* patch) {
  auto j = nlohmann::json::parse(kStoriesConfig);
  j.merge_patch(nlohmann::json::parse(R"({"model_type": "smollm3", "num_hidden_layers": 8,
    "no_rope_layer_interval": 4, "no_rope_layers": [1, 1, 1, 0, 1, 1, 1, 0], "use_sliding_window": false})"));
  j.merge_patch(nlohmann::json::parse(patch));
  auto config = formats::HfConfig::parse(j.dump(), "", "dir");
  if (!config) return config.error();
  HfNormalized out;
  if (auto st = kSmolLm3Hf.normalize(*config, out); !st) return st.error();
  return out;
}

TEST(SmolLm3HfConfig, KeysAndTheNoPePattern) {
  auto n = smollm3_with("{}");
  ASSERT_TRUE(n.ok()) << n.error().message;
  auto f = n->metadata.build("dir/config.json");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f->get_string("general.architecture"), "smollm3");
  EXPECT_EQ(*f->get_u32("smollm3.block_count"), 8u);
  EXPECT_EQ(*f->get_u32("smollm3.attention.head_count_kv"), 4u);
  EXPECT_TRUE(smollm3_with(R"({"no_rope_layers": null})").ok());  // transformers' default: the same
  for (const char* bad : {R"({"no_rope_layers": [1, 1, 0, 1, 1, 1, 0, 1]})",
                          R"({"no_rope_layer_interval": 3})", R"({"use_sliding_window": true})"}) {
    auto r = smollm3_with(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::Unsupported) << r.error().message;
  }
  auto short_list = smollm3_with(R"({"no_rope_layers": [1, 1, 1]})");
  ASSERT_FALSE(short_list.ok());
  EXPECT_NE(short_list.error().message.find("no_rope_layers"), std::string::npos);
}

}  // namespace
}  // namespace glass::models
