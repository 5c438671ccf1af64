// Llama family (Touvron et al. 2023, "LLaMA" and "Llama 2"): pre-norm decoder with RMSNorm, rotary
// positions, grouped-query attention and a SwiGLU MLP.
// Serves GGUF general.architecture "llama" (HF model_type "llama", "mistral"): Llama 2/3, TinyLlama,
// SmolLM2, Mistral-style models. Variants: GQA (n_kv_heads < n_heads), linear RoPE scaling,
// Llama 3 frequency factors (rope_freqs.weight), tied embeddings (no output.weight).
#include "models/llama.h"

#include <fmt/format.h>

#include "models/blocks.h"

namespace glass::models {
namespace {

// GGUF key templates ("{}" is the architecture name) and whether each is required.
struct Key {
  const char* gguf;
  bool required;
};
constexpr Key kBlockCount{"{}.block_count", true};
constexpr Key kEmbeddingLength{"{}.embedding_length", true};
constexpr Key kHeadCount{"{}.attention.head_count", true};
constexpr Key kHeadCountKv{"{}.attention.head_count_kv", false};  // default: head_count
constexpr Key kKeyLength{"{}.attention.key_length", false};       // default: dim / heads
constexpr Key kFfnLength{"{}.feed_forward_length", true};
constexpr Key kContextLength{"{}.context_length", true};
constexpr Key kRmsEps{"{}.attention.layer_norm_rms_epsilon", true};
constexpr Key kRopeDims{"{}.rope.dimension_count", false};  // default: head_dim
constexpr Key kRopeBase{"{}.rope.freq_base", false};        // default: 10000
constexpr Key kRopeScalingType{"{}.rope.scaling.type", false};
constexpr Key kRopeScalingFactor{"{}.rope.scaling.factor", false};
constexpr Key kVocabSize{"{}.vocab_size", false};  // default: rows of token_embd.weight

constexpr const char* kArch = "llama";

std::string key(const Key& k) { return fmt::format(fmt::runtime(k.gguf), kArch); }

Result<int64_t> read_int(const formats::GgufFile& f, const Key& k, int64_t fallback) {
  if (!k.required && f.find(key(k)) == nullptr) return fallback;
  auto v = f.get_u32(key(k));
  if (!v) return v.error();
  return static_cast<int64_t>(*v);
}

Result<float> read_float(const formats::GgufFile& f, const Key& k, float fallback) {
  if (!k.required && f.find(key(k)) == nullptr) return fallback;
  return f.get_f32(key(k));
}

// Tensor names, GGUF's canonical form. Shapes are [out, in] (row-major), in config terms.
std::string blk(int64_t i, const char* what) { return fmt::format("blk.{}.{}.weight", i, what); }

}  // namespace

Status LlamaConfig::validate() const {
  auto bad = [](const std::string& what) { return make_error(ErrorCode::InvalidFile, "llama: " + what); };
  if (n_layers <= 0 || dim <= 0 || n_heads <= 0 || n_kv_heads <= 0 || ffn_dim <= 0 || head_dim <= 0)
    return bad(fmt::format("{}, {}, {}, {} and {} must be positive", key(kBlockCount), key(kEmbeddingLength),
                           key(kHeadCount), key(kHeadCountKv), key(kFfnLength)));
  if (n_heads % n_kv_heads != 0)
    return bad(fmt::format("{} = {} is not a multiple of {} = {}", key(kHeadCount), n_heads,
                           key(kHeadCountKv), n_kv_heads));
  if (n_rot <= 0 || n_rot % 2 != 0 || n_rot > head_dim)
    return bad(fmt::format("{} = {} must be even and at most head_dim {}", key(kRopeDims), n_rot, head_dim));
  if (!(rms_eps > 0.0f) || !(rope_freq_base > 0.0f) || !(rope_freq_scale > 0.0f))
    return bad(
        fmt::format("{}, {} and the rope scaling factor must be positive", key(kRmsEps), key(kRopeBase)));
  if (n_ctx_train <= 0) return bad(fmt::format("{} must be positive", key(kContextLength)));
  return {};
}

Result<LlamaConfig> llama_config_from_gguf(const formats::GgufFile& f, const WeightIndex& weights) {
  LlamaConfig c;
  struct IntField {
    int64_t* field;
    const Key& key;
    int64_t fallback;
  };
  for (const IntField& i : {IntField{&c.n_layers, kBlockCount, 0}, IntField{&c.dim, kEmbeddingLength, 0},
                            IntField{&c.n_heads, kHeadCount, 0}, IntField{&c.ffn_dim, kFfnLength, 0},
                            IntField{&c.n_ctx_train, kContextLength, 0}}) {
    auto v = read_int(f, i.key, i.fallback);
    if (!v) return v.error();
    *i.field = *v;
  }
  auto kv = read_int(f, kHeadCountKv, c.n_heads);
  if (!kv) return kv.error();
  c.n_kv_heads = *kv;
  if (c.n_heads <= 0 || c.dim % c.n_heads != 0)
    return make_error(ErrorCode::InvalidFile,
                      fmt::format("llama: {} = {} is not divisible by {} = {}", key(kEmbeddingLength), c.dim,
                                  key(kHeadCount), c.n_heads));
  auto hd = read_int(f, kKeyLength, c.dim / c.n_heads);
  if (!hd) return hd.error();
  c.head_dim = *hd;
  auto rot = read_int(f, kRopeDims, c.head_dim);
  if (!rot) return rot.error();
  c.n_rot = *rot;
  auto eps = read_float(f, kRmsEps, 0.0f);
  if (!eps) return eps.error();
  c.rms_eps = *eps;
  auto base = read_float(f, kRopeBase, 10000.0f);
  if (!base) return base.error();
  c.rope_freq_base = *base;
  if (f.find(key(kRopeScalingType)) != nullptr) {
    auto type = f.get_string(key(kRopeScalingType));
    if (!type) return type.error();
    if (*type == "linear") {
      auto factor = read_float(f, kRopeScalingFactor, 1.0f);
      if (!factor) return factor.error();
      if (!(*factor > 0.0f))
        return make_error(ErrorCode::InvalidFile, "llama: rope.scaling.factor must be positive");
      c.rope_freq_scale = 1.0f / *factor;
    } else if (*type != "none") {
      return make_error(ErrorCode::Unsupported,
                        fmt::format("llama: {} '{}' is not supported (supported: none, linear)",
                                    key(kRopeScalingType), *type));
    }
  }
  const auto embd = weights.find("token_embd.weight");
  if (embd == weights.end() || embd->second.shape.size() != 2)
    return make_error(ErrorCode::InvalidFile, "llama: tensor 'token_embd.weight' is missing or not 2-D");
  auto vocab = read_int(f, kVocabSize, embd->second.shape[0]);
  if (!vocab) return vocab.error();
  c.vocab_size = *vocab;
  if (auto st = c.validate(); !st) return st.error();
  return c;
}

Result<graph::Graph> build_llama(const LlamaConfig& c, const WeightIndex& w, const BuildOptions& opt) {
  using graph::Tensor;
  graph::Builder b;
  const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  const int64_t n_ctx = choose_context(opt, c.n_ctx_train);

  // HF checkpoints keep q/k rows in rotate-half order (architecture.h, BuildOptions::hf_layout).
  const graph::RopeMode rope_mode = opt.hf_layout ? graph::RopeMode::NeoX : graph::RopeMode::Normal;
  const Step step = declare_step(b, opt, n_ctx);
  const Tensor token_embd = weight(b, w, "token_embd.weight", {c.vocab_size, c.dim});
  const Tensor output_norm = weight(b, w, "output_norm.weight", {c.dim});
  const Tensor output = optional_weight(b, w, "output.weight", {c.vocab_size, c.dim}).value_or(token_embd);
  AttentionShape attn{
      c.n_heads, c.n_kv_heads, c.head_dim,
      graph::RopeAttrs{static_cast<int>(c.n_rot), rope_mode, c.rope_freq_base, c.rope_freq_scale},
      optional_weight(b, w, "rope_freqs.weight", {c.n_rot / 2})};

  Tensor x = b.embedding(token_embd, step.tokens).named("token_embd");  // [T, dim]
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string layer = fmt::format("blk.{}", i);
    const AttentionWeights aw{
        weight(b, w, blk(i, "attn_q"), {q_dim, c.dim}), weight(b, w, blk(i, "attn_k"), {kv_dim, c.dim}),
        weight(b, w, blk(i, "attn_v"), {kv_dim, c.dim}), weight(b, w, blk(i, "attn_output"), {c.dim, q_dim})};
    const Tensor attn_norm = weight(b, w, blk(i, "attn_norm"), {c.dim});
    const Tensor ffn_norm = weight(b, w, blk(i, "ffn_norm"), {c.dim});
    const Tensor gate = weight(b, w, blk(i, "ffn_gate"), {c.ffn_dim, c.dim});
    const Tensor up = weight(b, w, blk(i, "ffn_up"), {c.ffn_dim, c.dim});
    const Tensor down = weight(b, w, blk(i, "ffn_down"), {c.dim, c.ffn_dim});

    Tensor h = x + self_attention(b, layer, aw, attn,
                                  b.rms_norm(x, attn_norm, c.rms_eps).named(layer + ".attn_norm"), step,
                                  opt.kv_dtype);
    // Past the last attention every op is per token: only the tokens whose logits are wanted go on.
    if (i == c.n_layers - 1) h = select_output_rows(b, step, h);
    x = (h +
         swiglu_ffn(b, layer, gate, up, down, b.rms_norm(h, ffn_norm, c.rms_eps).named(layer + ".ffn_norm")))
            .named(layer + ".out");
  }
  const Tensor logits =
      b.matmul(b.rms_norm(x, output_norm, c.rms_eps).named("output_norm"), output).named("logits");
  b.output("logits", logits);  // [O, vocab_size]
  return b.finish();
}

Result<ModelGraph> llama_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                   const BuildOptions& opt) {
  auto c = llama_config_from_gguf(file, weights);
  if (!c) return c.error();
  auto g = build_llama(*c, weights, opt);
  if (!g) return g.error();
  ModelGraph m;
  m.graph = std::move(*g);
  m.vocab_size = c->vocab_size;
  m.n_ctx_train = c->n_ctx_train;
  m.n_ctx = choose_context(opt, c->n_ctx_train);
  m.cache = cache_geometry(opt, m.n_ctx);
  m.n_layers = c->n_layers;
  index_states(m);
  m.summary = fmt::format(
      "llama: {} layers, dim {}, {} heads ({} kv), head_dim {}, ffn {}, vocab {}, rope {} dims base {:g}",
      c->n_layers, c->dim, c->n_heads, c->n_kv_heads, c->head_dim, c->ffn_dim, c->vocab_size, c->n_rot,
      c->rope_freq_base);
  return m;
}

}  // namespace glass::models
