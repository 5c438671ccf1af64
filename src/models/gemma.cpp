#include "models/gemma.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "models/blocks.h"

namespace glass::models {

graph::RopeAttrs GemmaShape::rope(int64_t layer) const {
  const bool is_local = local[static_cast<size_t>(layer)];
  return graph::RopeAttrs{static_cast<int>(n_rot), graph::RopeMode::NeoX,
                          is_local ? rope_base_local : rope_base_global, is_local ? 1.0f : rope_scale_global};
}

int64_t GemmaShape::window(int64_t layer) const {
  return local[static_cast<size_t>(layer)] ? sliding_window : 0;
}

int64_t GemmaShape::local_window() const {
  return std::find(local.begin(), local.end(), true) != local.end() ? sliding_window : 0;
}

float GemmaShape::attn_scale() const { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }

std::string GemmaShape::summary() const {
  std::string kinds;
  for (bool l : local) kinds += l ? 'L' : 'G';
  return fmt::format(
      "{} layers ({}), dim {}, {} heads ({} kv), head_dim {}, ffn {}, vocab {}, window {}, rope base {:g} "
      "global / {:g} local",
      n_layers, kinds, dim, n_heads, n_kv_heads, head_dim, ffn_dim, vocab_size, sliding_window,
      rope_base_global, rope_base_local);
}

Status GemmaShape::validate(const char* arch) const {
  auto bad = [&](const std::string& what) {
    return make_error(ErrorCode::InvalidFile, fmt::format("{}: {}", arch, what));
  };
  if (n_layers <= 0 || dim <= 0 || n_heads <= 0 || n_kv_heads <= 0 || head_dim <= 0 || ffn_dim <= 0 ||
      vocab_size <= 0 || n_ctx_train <= 0)
    return bad(
        fmt::format("{0}.block_count, {0}.embedding_length, {0}.attention.head_count(_kv), "
                    "{0}.attention.key_length, {0}.feed_forward_length and {0}.context_length must be "
                    "positive",
                    arch));
  if (n_heads % n_kv_heads != 0)
    return bad(fmt::format("{}.attention.head_count = {} is not a multiple of head_count_kv = {}", arch,
                           n_heads, n_kv_heads));
  if (n_rot <= 0 || n_rot % 2 != 0 || n_rot > head_dim)
    return bad(fmt::format("{}.rope.dimension_count = {} must be even and at most head_dim {}", arch, n_rot,
                           head_dim));
  if (!(rms_eps > 0.0f) || !(rope_base_global > 0.0f) || !(rope_base_local > 0.0f) ||
      !(rope_scale_global > 0.0f))
    return bad(
        fmt::format("{0}.attention.layer_norm_rms_epsilon, {0}.rope.freq_base(_swa) and the rope "
                    "scaling factor must be positive",
                    arch));
  for (bool l : local)
    if (l && sliding_window <= 0)
      return bad(
          fmt::format("{}.attention.sliding_window must be positive: the model has local layers", arch));
  return {};
}

GemmaShape read_gemma_shape(HparamReader& r, const WeightIndex& w, int64_t default_period) {
  GemmaShape s;
  s.n_layers = r.required_int("block_count");
  s.dim = r.required_int("embedding_length");
  s.n_heads = r.required_int("attention.head_count");
  s.n_kv_heads = r.optional_int("attention.head_count_kv", s.n_heads);
  s.head_dim = r.optional_int("attention.key_length", s.n_heads > 0 ? s.dim / s.n_heads : 0);
  if (r.optional_int("attention.value_length", s.head_dim) != s.head_dim)
    r.fail(fmt::format("{} must equal {} (one head_dim for K and V)", r.key("attention.value_length"),
                       r.key("attention.key_length")));
  const std::vector<int64_t> ffn = r.per_layer_int("feed_forward_length", s.n_layers);
  s.ffn_dim = ffn.empty() ? 0 : ffn.front();
  for (int64_t f : ffn)
    if (f != s.ffn_dim)
      r.fail(fmt::format("{}: per-layer widths that differ are not supported", r.key("feed_forward_length")));
  s.n_ctx_train = r.required_int("context_length");
  s.n_rot = r.optional_int("rope.dimension_count", s.head_dim);
  s.rms_eps = r.required_float("attention.layer_norm_rms_epsilon");
  s.rope_base_global = r.optional_float("rope.freq_base", 10000.0f);
  s.rope_base_local = r.optional_float("rope.freq_base_swa", 10000.0f);  // llama.cpp's default
  if (r.has("rope.scaling.type")) {
    // Gemma 3 (4B and up) scales positions linearly on its global layers only.
    const float factor = r.optional_float("rope.scaling.factor", 1.0f);
    if (!(factor > 0.0f))
      r.fail(fmt::format("{} must be positive", r.key("rope.scaling.factor")));
    else
      s.rope_scale_global = 1.0f / factor;
  }
  s.sliding_window = r.optional_int("attention.sliding_window", 0);
  s.local = r.sliding_layers(s.n_layers, default_period);
  s.vocab_size = r.optional_int("vocab_size", r.tensor_rows(w, "token_embd.weight"));
  return s;
}

GemmaWeights declare_gemma_weights(graph::Builder& b, const WeightIndex& w, const GemmaShape& s,
                                   bool qk_norm) {
  auto blk = [](int64_t i, const char* what) { return fmt::format("blk.{}.{}.weight", i, what); };
  const int64_t q_dim = s.n_heads * s.head_dim, kv_dim = s.n_kv_heads * s.head_dim;
  GemmaWeights g;
  g.token_embd = weight(b, w, "token_embd.weight", {s.vocab_size, s.dim});
  g.output_norm = weight(b, w, "output_norm.weight", {s.dim});
  g.output = optional_weight(b, w, "output.weight", {s.vocab_size, s.dim}).value_or(g.token_embd);
  for (int64_t i = 0; i < s.n_layers; ++i) {
    GemmaLayer l;
    l.attn_norm = weight(b, w, blk(i, "attn_norm"), {s.dim});
    l.wq = weight(b, w, blk(i, "attn_q"), {q_dim, s.dim});
    l.wk = weight(b, w, blk(i, "attn_k"), {kv_dim, s.dim});
    l.wv = weight(b, w, blk(i, "attn_v"), {kv_dim, s.dim});
    l.wo = weight(b, w, blk(i, "attn_output"), {s.dim, q_dim});
    l.post_attn_norm = weight(b, w, blk(i, "post_attention_norm"), {s.dim});
    if (qk_norm) {
      l.q_norm = weight(b, w, blk(i, "attn_q_norm"), {s.head_dim});
      l.k_norm = weight(b, w, blk(i, "attn_k_norm"), {s.head_dim});
    }
    l.ffn_norm = weight(b, w, blk(i, "ffn_norm"), {s.dim});
    l.gate = weight(b, w, blk(i, "ffn_gate"), {s.ffn_dim, s.dim});
    l.up = weight(b, w, blk(i, "ffn_up"), {s.ffn_dim, s.dim});
    l.down = weight(b, w, blk(i, "ffn_down"), {s.dim, s.ffn_dim});
    l.post_ffn_norm = weight(b, w, blk(i, "post_ffw_norm"), {s.dim});
    g.layers.push_back(l);
  }
  return g;
}

Result<graph::Graph> build_gemma(const GemmaShape& s, const GemmaVariant& v, const WeightIndex& w,
                                 const BuildOptions& opt) {
  using graph::Tensor;
  graph::Builder b;
  const Step step = declare_step(b, opt, s.local_window());
  const GemmaWeights gw = declare_gemma_weights(b, w, s, v.qk_norm);

  // Embedding scaled by sqrt(dim).
  Tensor x = (b.embedding(gw.token_embd, step.tokens) * b.scalar(std::sqrt(static_cast<float>(s.dim))))
                 .named("token_embd");  // [T, dim]
  for (int64_t i = 0; i < s.n_layers; ++i) {
    const std::string layer = fmt::format("blk.{}", i);
    const GemmaLayer& l = gw.layers[static_cast<size_t>(i)];
    // Attention: q and k (Gemma 3: RMS-normalised per head) rotated with the layer kind's RoPE
    // base; local layers see only the last `sliding_window` positions; Gemma 2 caps the scores.
    const Tensor h = b.rms_norm(x, l.attn_norm, s.rms_eps).named(layer + ".attn_norm");
    Tensor q = project_heads(b, h, l.wq, s.n_heads, s.head_dim);     // [T, n_heads, head_dim]
    Tensor k = project_heads(b, h, l.wk, s.n_kv_heads, s.head_dim);  // [T, n_kv_heads, head_dim]
    if (v.qk_norm) {
      q = b.rms_norm(q, l.q_norm, s.rms_eps).named(layer + ".q_norm");
      k = b.rms_norm(k, l.k_norm, s.rms_eps).named(layer + ".k_norm");
    }
    q = b.rope(q, step.positions, s.rope(i)).named(layer + ".q_rope");
    k = b.rope(k, step.positions, s.rope(i)).named(layer + ".k_rope");
    const Tensor val = project_heads(b, h, l.wv, s.n_kv_heads, s.head_dim).named(layer + ".v");
    const KvCache kv =
        write_kv(b, layer, {s.n_kv_heads, s.head_dim}, k, val, step, opt.kv_dtype, s.window(i));
    const graph::AttentionAttrs attn{s.attn_scale(), {}, s.window(i), v.attn_softcap};
    const Tensor a = attend(b, layer, q, s.n_heads, s.head_dim, kv, step, attn, l.wo);
    x = (x + b.rms_norm(a, l.post_attn_norm, s.rms_eps).named(layer + ".post_attention_norm"))
            .named(layer + ".attn_residual");
    // GeGLU MLP between its pre- and post-norm.
    const Tensor f = geglu_ffn(b, layer, l.gate, l.up, l.down,
                               b.rms_norm(x, l.ffn_norm, s.rms_eps).named(layer + ".ffn_norm"));
    x = (x + b.rms_norm(f, l.post_ffn_norm, s.rms_eps).named(layer + ".post_ffw_norm")).named(layer + ".out");
  }
  gemma_logits(b, step, x, gw.output_norm, gw.output, s.rms_eps, v.final_softcap);
  return b.finish();
}

graph::Tensor per_layer_inputs(graph::Builder& b, const PerLayerInputWeights& w, const Step& step,
                               graph::Tensor x0, int64_t n_layers, int64_t ple_dim, int64_t dim,
                               float rms_eps) {
  const graph::Shape per_layer{graph::Dim::symbol(graph::Sym::T), graph::Dim::constant(n_layers),
                               graph::Dim::constant(ple_dim)};
  const graph::Tensor tok = b.reshape(b.embedding(w.token_embd, step.tokens), per_layer) *
                            b.scalar(std::sqrt(static_cast<float>(ple_dim)));
  const graph::Tensor proj =
      b.reshape(b.matmul(x0, w.model_proj), per_layer) * b.scalar(1.0f / std::sqrt(static_cast<float>(dim)));
  return ((tok + b.rms_norm(proj, w.proj_norm, rms_eps)) * b.scalar(1.0f / std::sqrt(2.0f)))
      .named("per_layer_inputs");
}

void gemma_logits(graph::Builder& b, const Step& step, graph::Tensor x, graph::Tensor output_norm,
                  graph::Tensor output, float rms_eps, float final_softcap) {
  graph::Tensor logits =
      b.matmul(b.rms_norm(select_output_rows(b, step, x), output_norm, rms_eps).named("output_norm"), output)
          .named("output");
  if (final_softcap > 0.0f) logits = b.softcap(logits, final_softcap).named("final_softcap");
  b.output("logits", logits.named("logits"));  // [O, vocab_size]
}

}  // namespace glass::models
