// gpt-oss (OpenAI 2025, "gpt-oss-120b & gpt-oss-20b Model Card"): a decoder whose every layer is
// attention then a mixture of experts:
//  * attention with q/k/v/o biases and a learned sink logit per head (it takes part in each row's
//    softmax and adds no value), GQA, alternating layers: even ones see a sliding window of the last
//    sliding_window positions (128), odd ones everything; RoPE with YaRN scaling (models/yarn.h);
//  * the experts read the post-attention-normed residual: router with a bias, softmax over the chosen
//    top-k logits (the renormalised top-k of the softmax), experts with biases on gate, up and down,
//    and the clamped SwiGLU (graph/ops/formulas.h swiglu_oai);
//  * an untied LM head.
// Serves GGUF general.architecture "gpt-oss" (llama.cpp's openai-moe). The experts may be any type
// glass runs; MXFP4 (the converter's) is not one yet and is refused at load naming the tensor.
#include "models/gptoss.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "models/blocks.h"
#include "models/hparam_reader.h"
#include "models/yarn.h"

namespace glass::models {
namespace {

using graph::Dim;
using graph::Shape;
using graph::Tensor;

constexpr const char* kArch = "gpt-oss";

struct GptOssConfig {
  int64_t n_layers = 0, dim = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, vocab_size = 0, n_ctx_train = 0;
  int64_t n_expert = 0, n_expert_used = 0, expert_ffn_dim = 0;
  float rms_eps = 1e-5f;
  int64_t sliding_window = 0;
  std::vector<bool> local;  // per layer: sliding window
  YarnParams yarn;          // n_rot = head_dim
  float rope_base_local = 10000.0f;

  int64_t window(int64_t layer) const { return local[static_cast<size_t>(layer)] ? sliding_window : 0; }
  // The windowed pool's window: sliding_window when some layer slides, else 0.
  int64_t local_window() const {
    return std::find(local.begin(), local.end(), true) != local.end() ? sliding_window : 0;
  }
};

Result<GptOssConfig> config_from_gguf(const formats::GgufFile& f, const WeightIndex& w) {
  HparamReader r(f, kArch);
  GptOssConfig c;
  c.n_layers = r.required_int("block_count");
  c.dim = r.required_int("embedding_length");
  c.n_heads = r.required_int("attention.head_count");
  c.n_kv_heads = r.optional_int("attention.head_count_kv", c.n_heads);
  c.head_dim = r.optional_int("attention.key_length", c.n_heads > 0 ? c.dim / c.n_heads : 0);
  if (r.optional_int("attention.value_length", c.head_dim) != c.head_dim ||
      r.optional_int("rope.dimension_count", c.head_dim) != c.head_dim)
    r.fail(fmt::format("{} and {} must equal {} (gpt-oss rotates whole heads of one size)",
                       r.key("attention.value_length"), r.key("rope.dimension_count"),
                       r.key("attention.key_length")));
  c.n_ctx_train = r.required_int("context_length");
  c.rms_eps = r.required_float("attention.layer_norm_rms_epsilon");
  c.n_expert = r.required_int("expert_count");
  c.n_expert_used = r.required_int("expert_used_count");
  c.expert_ffn_dim = r.required_int("expert_feed_forward_length");
  c.sliding_window = r.required_int("attention.sliding_window");
  c.local = r.sliding_layers(c.n_layers, 2);  // llama.cpp's default period 2: even layers slide
  c.yarn.n_rot = c.head_dim;
  c.yarn.freq_base = r.optional_float("rope.freq_base", 10000.0f);
  c.rope_base_local = r.optional_float("rope.freq_base_swa", c.yarn.freq_base);
  const std::string scaling = r.optional_string("rope.scaling.type", "none");
  if (scaling == "yarn") {
    c.yarn.factor = r.required_float("rope.scaling.factor");
    c.yarn.n_ctx_orig = r.optional_int("rope.scaling.original_context_length", c.n_ctx_train);
    c.yarn.beta_fast = r.optional_float("rope.scaling.yarn_beta_fast", 32.0f);
    c.yarn.beta_slow = r.optional_float("rope.scaling.yarn_beta_slow", 1.0f);
  } else if (scaling != "none") {
    r.fail(
        fmt::format("{} = '{}' (glass runs gpt-oss with yarn or none)", r.key("rope.scaling.type"), scaling));
  }
  c.yarn.attn_factor = r.optional_float("rope.scaling.attn_factor", 1.0f);
  c.vocab_size = r.optional_int("vocab_size", r.tensor_rows(w, "token_embd.weight"));
  if (auto st = r.status(); !st) return st.error();
  auto bad = [](const std::string& what) {
    return make_error(ErrorCode::InvalidFile, fmt::format("{}: {}", kArch, what));
  };
  if (c.n_layers <= 0 || c.dim <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.head_dim <= 0 ||
      c.head_dim % 2 != 0 || c.n_heads % c.n_kv_heads != 0 || c.vocab_size <= 0 || c.n_ctx_train <= 0)
    return bad(
        fmt::format("block_count, embedding_length, head counts (query a multiple of KV), an even "
                    "key_length, vocab_size and context_length must be positive"));
  if (c.n_expert <= 0 || c.n_expert_used <= 0 || c.n_expert_used > c.n_expert || c.expert_ffn_dim <= 0)
    return bad(
        fmt::format("{0}.expert_count = {1}, {0}.expert_used_count = {2} and "
                    "{0}.expert_feed_forward_length = {3} do not describe experts",
                    kArch, c.n_expert, c.n_expert_used, c.expert_ffn_dim));
  if (c.sliding_window <= 0) return bad(fmt::format("{}.attention.sliding_window must be positive", kArch));
  if (!(c.rms_eps > 0.0f) || !(c.yarn.freq_base > 0.0f) || !(c.rope_base_local > 0.0f) ||
      !(c.yarn.factor > 0.0f) || !(c.yarn.attn_factor > 0.0f) ||
      (scaling == "yarn" && c.yarn.n_ctx_orig <= 0))
    return bad("the norm epsilon, RoPE bases and YaRN factors must be positive");
  return c;
}

std::string blk(int64_t i, const char* what) { return fmt::format("blk.{}.{}", i, what); }

Result<graph::Graph> build_gptoss(const GptOssConfig& c, const WeightIndex& w, const BuildOptions& opt) {
  graph::Builder b;
  const Step step = declare_step(b, opt, c.local_window());
  const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  const int64_t E = c.n_expert, F = c.expert_ffn_dim, D = c.dim;
  const Tensor token_embd = weight(b, w, "token_embd.weight", {c.vocab_size, D});
  const Tensor output_norm = weight(b, w, "output_norm.weight", {D});
  const Tensor output = optional_weight(b, w, "output.weight", {c.vocab_size, D}).value_or(token_embd);
  // YaRN for the global layers (and the local ones, whose base llama.cpp lets differ).
  auto rope_for = [&](bool local) {
    YarnParams p = c.yarn;
    if (local) p.freq_base = c.rope_base_local;
    return yarn_rope(p);
  };
  const YarnRope yarn_global = rope_for(false), yarn_local = rope_for(true);
  auto divisors = [&](const YarnRope& y) {
    return b.constant(y.divisors, graph::make_shape({static_cast<int64_t>(y.divisors.size())}));
  };
  const Tensor div_global = divisors(yarn_global), div_local = divisors(yarn_local);

  Tensor x = b.embedding(token_embd, step.tokens).named("token_embd");  // [T, dim]
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string layer = fmt::format("blk.{}", i);
    const bool local = c.local[static_cast<size_t>(i)];
    const YarnRope& yarn = local ? yarn_local : yarn_global;
    const graph::RopeAttrs rope{static_cast<int>(c.head_dim), graph::RopeMode::NeoX,
                                local ? c.rope_base_local : c.yarn.freq_base, 1.0f};
    auto rotate = [&](Tensor t, const char* name) {
      Tensor r = b.rope(t, step.positions, rope, local ? div_local : div_global);
      if (yarn.scale != 1.0f) r = r * b.scalar(yarn.scale);
      return r.named(layer + name);
    };
    // Attention with biases and sinks.
    const Tensor h =
        b.rms_norm(x, weight(b, w, blk(i, "attn_norm.weight"), {D}), c.rms_eps).named(layer + ".attn_norm");
    auto projected = [&](const char* what, int64_t rows, int64_t heads) {
      const Tensor y = b.matmul(h, weight(b, w, blk(i, (std::string(what) + ".weight").c_str()), {rows, D})) +
                       weight(b, w, blk(i, (std::string(what) + ".bias").c_str()), {rows});
      return b.reshape(y, Shape{Dim::symbol(graph::Sym::T), Dim::constant(heads), Dim::constant(c.head_dim)});
    };
    const Tensor q = rotate(projected("attn_q", q_dim, c.n_heads), ".q_rope");
    const Tensor k = rotate(projected("attn_k", kv_dim, c.n_kv_heads), ".k_rope");
    const Tensor v = projected("attn_v", kv_dim, c.n_kv_heads).named(layer + ".v");
    const KvCache kv = write_kv(b, layer, {c.n_kv_heads, c.head_dim}, k, v, step, opt.kv_dtype, c.window(i));
    const graph::AttentionAttrs attrs{1.0f / std::sqrt(static_cast<float>(c.head_dim)), {}, c.window(i)};
    const Tensor sinks = weight(b, w, blk(i, "attn_sinks.weight"), {c.n_heads});
    const Tensor a = attend(b, layer, q, c.n_heads, c.head_dim, kv, step, attrs,
                            weight(b, w, blk(i, "attn_output.weight"), {D, q_dim}), sinks) +
                     weight(b, w, blk(i, "attn_output.bias"), {D});
    x = (x + a).named(layer + ".attn_residual");

    // The experts on the post-attention-normed residual.
    const Tensor f = b.rms_norm(x, weight(b, w, blk(i, "post_attention_norm.weight"), {D}), c.rms_eps)
                         .named(layer + ".post_attention_norm");
    const Tensor logits = (b.matmul(f, weight(b, w, blk(i, "ffn_gate_inp.weight"), {E, D})) +
                           weight(b, w, blk(i, "ffn_gate_inp.bias"), {E}))
                              .named(layer + ".ffn_router");
    const graph::MoeAttrs moe{static_cast<int>(c.n_expert_used), true, graph::MoeActivation::SwiGluOai,
                              false};
    const Tensor y = b.moe_biased(f, softmax(b, logits).named(layer + ".ffn_probs"),
                                  weight(b, w, blk(i, "ffn_gate_exps.weight"), {E, F, D}),
                                  weight(b, w, blk(i, "ffn_up_exps.weight"), {E, F, D}),
                                  weight(b, w, blk(i, "ffn_down_exps.weight"), {E, D, F}),
                                  weight(b, w, blk(i, "ffn_gate_exps.bias"), {E, F}),
                                  weight(b, w, blk(i, "ffn_up_exps.bias"), {E, F}),
                                  weight(b, w, blk(i, "ffn_down_exps.bias"), {E, D}), moe)
                         .named(layer + ".ffn_moe");
    x = (x + y).named(layer + ".out");
  }
  const Tensor logits = b.matmul(
      b.rms_norm(select_output_rows(b, step, x), output_norm, c.rms_eps).named("output_norm"), output);
  b.output("logits", logits.named("logits"));
  return b.finish();
}

}  // namespace

Result<ModelGraph> gptoss_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                    const BuildOptions& opt) {
  auto c = config_from_gguf(file, weights);
  if (!c) return c.error();
  auto g = build_gptoss(*c, weights, opt);
  if (!g) return g.error();
  std::string kinds;
  for (bool l : c->local) kinds += l ? 'L' : 'G';
  return finish_model_graph(
      std::move(*g), c->vocab_size, c->n_ctx_train, c->n_layers, opt,
      fmt::format("{}: {} layers ({}), dim {}, {} heads ({} kv) of {}, window {}, {} experts (top {}) of {}, "
                  "rope base {:g}, YaRN factor {:g} over {}",
                  kArch, c->n_layers, kinds, c->dim, c->n_heads, c->n_kv_heads, c->head_dim,
                  c->sliding_window, c->n_expert, c->n_expert_used, c->expert_ffn_dim, c->yarn.freq_base,
                  c->yarn.factor, c->yarn.n_ctx_orig),
      c->local_window());
}

}  // namespace glass::models
