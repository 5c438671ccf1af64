#include "support/tiny_hf_llama.h"

#include <fmt/format.h>

#include <cstring>
#include <random>
#include <vector>

#include "formats/half.h"
#include "support/gguf_writer.h"
#include "support/safetensors_writer.h"

namespace glass::test {
namespace {

constexpr int kDim = 16, kHeads = 4, kKvHeads = 2, kHeadDim = 4, kFfn = 24, kCtx = 64;

const char* kTokenizerJson = R"({"version": "1.0",
 "added_tokens": [
  {"id": 0, "content": "<unk>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
  {"id": 1, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
  {"id": 2, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
 "normalizer": null, "pre_tokenizer": null, "post_processor": null, "decoder": null,
 "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "continuing_subword_prefix": null,
  "end_of_word_suffix": null, "fuse_unk": true, "byte_fallback": false,
  "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "c": 3, "a": 4, "b": 5, "ca": 6, "ab": 7},
  "merges": ["c a", "a b"]}})";

// GGUF row order of an HF q/k matrix: within each head, HF row t * hd/2 + j (t = half, j = pair)
// becomes row 2j + t (llama.cpp's converter permutes so that RoPE rotates adjacent pairs).
std::vector<float> to_interleaved(const std::vector<float>& hf, int n_heads, int cols) {
  std::vector<float> out(hf.size());
  for (int h = 0; h < n_heads; ++h)
    for (int t = 0; t < 2; ++t)
      for (int j = 0; j < kHeadDim / 2; ++j)
        for (int c = 0; c < cols; ++c)
          out[static_cast<size_t>(((h * kHeadDim) + 2 * j + t) * cols + c)] =
              hf[static_cast<size_t>(((h * kHeadDim) + t * kHeadDim / 2 + j) * cols + c)];
  return out;
}

}  // namespace

TinyHf write_tiny_hf_llama(const TinyHfSpec& spec, const std::string& name) {
  TinyHf out;
  out.dir = make_temp_dir(name);
  out.gguf = out.dir.parent_path() / (name + ".gguf");
  write_text(
      out.dir / "config.json",
      fmt::format(R"({{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": {},
  "intermediate_size": {}, "num_hidden_layers": {}, "num_attention_heads": {}, "num_key_value_heads": {},
  "hidden_act": "silu", "vocab_size": {}, "max_position_embeddings": {}, "rms_norm_eps": 1e-05,
  "rope_theta": 10000.0, "tie_word_embeddings": {}, "bos_token_id": 1, "eos_token_id": 2{}{}}})",
                  kDim, kFfn, spec.n_layers, kHeads, kKvHeads, spec.vocab_rows, kCtx,
                  spec.tied ? "true" : "false", spec.extra_config.empty() ? "" : ", ", spec.extra_config));
  write_text(out.dir / "tokenizer.json", kTokenizerJson);
  write_text(out.dir / "tokenizer_config.json",
             R"({"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true})");

  GgufWriter g;
  g.kv("general.architecture", GgufWriter::string("llama"));
  g.kv("llama.block_count", GgufWriter::u32(static_cast<uint32_t>(spec.n_layers)));
  g.kv("llama.context_length", GgufWriter::u32(kCtx));
  g.kv("llama.embedding_length", GgufWriter::u32(kDim));
  g.kv("llama.feed_forward_length", GgufWriter::u32(kFfn));
  g.kv("llama.attention.head_count", GgufWriter::u32(kHeads));
  g.kv("llama.attention.head_count_kv", GgufWriter::u32(kKvHeads));
  g.kv("llama.attention.layer_norm_rms_epsilon", GgufWriter::f32(1e-5f));
  g.kv("tokenizer.ggml.model", GgufWriter::string("llama"));
  g.kv("tokenizer.ggml.tokens",
       GgufWriter::string_array({"<unk>", "<s>", "</s>", "c", "a", "b", "ca", "ab"}));
  g.kv("tokenizer.ggml.scores", GgufWriter::f32_array({0, 0, 0, -1, -2, -3, -0.5f, -0.7f}));
  g.kv("tokenizer.ggml.token_type", GgufWriter::i32_array({2, 3, 3, 1, 1, 1, 1, 1}));
  g.kv("tokenizer.ggml.bos_token_id", GgufWriter::u32(1));
  g.kv("tokenizer.ggml.eos_token_id", GgufWriter::u32(2));

  SafetensorsWriter st;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  auto tensor = [&](const std::string& hf, const std::string& gguf, std::vector<int64_t> shape,
                    int rope_heads = 0, bool ones = false) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = ones ? 1.0f + normal(rng) : normal(rng);
    if (spec.drop_tensors.count(hf) == 0 && spec.f16 && shape.size() == 2) {
      std::vector<uint8_t> bytes(2 * v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        const uint16_t h = formats::f32_to_f16(v[i]);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
      }
      st.tensor({hf, "F16", shape, std::move(bytes), std::nullopt});
    } else if (spec.drop_tensors.count(hf) == 0) {
      st.tensor_f32(hf, shape, v);
    }
    if (!gguf.empty())
      g.tensor_f32(gguf, shape,
                   rope_heads > 0 ? to_interleaved(v, rope_heads, static_cast<int>(shape[1])) : v);
  };
  tensor("model.embed_tokens.weight", "token_embd.weight", {spec.vocab_rows, kDim});
  tensor("model.norm.weight", "output_norm.weight", {kDim}, 0, true);
  if (!spec.tied) tensor("lm_head.weight", "output.weight", {spec.vocab_rows, kDim});
  for (int i = 0; i < spec.n_layers; ++i) {
    auto hf = [&](const char* s) { return fmt::format("model.layers.{}.{}.weight", i, s); };
    auto gg = [&](const char* s) { return fmt::format("blk.{}.{}.weight", i, s); };
    tensor(hf("input_layernorm"), gg("attn_norm"), {kDim}, 0, true);
    tensor(hf("self_attn.q_proj"), gg("attn_q"), {kHeads * kHeadDim, kDim}, kHeads);
    tensor(hf("self_attn.k_proj"), gg("attn_k"), {kKvHeads * kHeadDim, kDim}, kKvHeads);
    tensor(hf("self_attn.v_proj"), gg("attn_v"), {kKvHeads * kHeadDim, kDim});
    tensor(hf("self_attn.o_proj"), gg("attn_output"), {kDim, kHeads * kHeadDim});
    tensor(hf("post_attention_layernorm"), gg("ffn_norm"), {kDim}, 0, true);
    tensor(hf("mlp.gate_proj"), gg("ffn_gate"), {kFfn, kDim});
    tensor(hf("mlp.up_proj"), gg("ffn_up"), {kFfn, kDim});
    tensor(hf("mlp.down_proj"), gg("ffn_down"), {kDim, kFfn});
  }
  write_bytes(out.dir / "model.safetensors", st.build());
  write_bytes(out.gguf, g.build().bytes);
  return out;
}

}  // namespace glass::test
