// LFM2 (Liquid AI 2025, "LFM2 Technical Report"): a hybrid of gated short convolutions and grouped-
// query attention. Every layer is pre-norm with a SwiGLU MLP; its operator is either
//   * a gated short convolution: in_proj splits into B, C and x; B*x runs through a causal
//     depthwise convolution over the sequence's last L positions (L = shortconv.l_cache, 3 in the
//     released models); C gates the result; out_proj. Its state between steps is the last L - 1
//     values of B*x, kept as rows of the sliding-window pool (window L), so prefix reuse, rollback
//     and forking are the paged cache's;
//   * or attention with per-head q/k RMSNorm and rotate-half RoPE over the full cache.
// Which one a layer is: attention.head_count_kv per layer, 0 for the convolutions (as llama.cpp).
// Serves GGUF general.architecture "lfm2" (HF model_type "lfm2"). Not covered: LFM2-MoE ("lfm2moe"),
// sliding-window attention layers (attention.sliding_window > 0), the vision and audio towers.
#include "models/lfm2.h"

#include <fmt/format.h>

#include "models/blocks.h"

namespace glass::models {
namespace {

std::string blk(int64_t i, const char* what) { return fmt::format("blk.{}.{}.weight", i, what); }

struct Lfm2Config {
  DecoderConfig c;         // n_kv_heads: the attention layers'
  std::vector<bool> conv;  // per layer: a short convolution (else attention)
  int64_t conv_width = 0;  // L: the taps of each channel's convolution
};

Result<Lfm2Config> read_config(const formats::GgufFile& file, const WeightIndex& w) {
  HparamReader hp(file, "lfm2");
  std::vector<int64_t> kv_heads;
  auto c = read_decoder_config(hp, w, /*read_ffn=*/true, &kv_heads);
  if (!c) return c.error();
  Lfm2Config l{*c, {}, hp.required_int("shortconv.l_cache")};
  if (auto st = hp.status(); !st) return st.error();
  if (l.conv_width < 1 || l.conv_width > 64)
    return make_error(ErrorCode::InvalidFile, fmt::format("lfm2: {} = {} must be within 1 .. 64",
                                                          hp.key("shortconv.l_cache"), l.conv_width));
  if (hp.optional_int("attention.sliding_window", 0) > 0)
    return make_error(ErrorCode::Unsupported,
                      fmt::format("lfm2: {} > 0 (sliding-window attention layers) is not supported",
                                  hp.key("attention.sliding_window")));
  for (int64_t h : kv_heads) l.conv.push_back(h == 0);
  return l;
}

}  // namespace

Result<ModelGraph> lfm2_from_gguf(const formats::GgufFile& file, const WeightIndex& w,
                                  const BuildOptions& opt) {
  using graph::Dim;
  using graph::Tensor;
  auto cfg = read_config(file, w);
  if (!cfg) return cfg.error();
  const DecoderConfig& c = cfg->c;
  const int64_t L = cfg->conv_width, q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;

  graph::Builder b;
  const Step step = declare_step(b, opt, /*window=*/L);  // the convolutions' rows: the last L positions
  const Tensor token_embd = weight(b, w, "token_embd.weight", {c.vocab_size, c.dim});
  const AttentionShape attn{c.n_heads, c.n_kv_heads, c.head_dim,
                            graph::RopeAttrs{static_cast<int>(c.n_rot), graph::RopeMode::NeoX,
                                             c.rope_freq_base, c.rope_freq_scale}};

  // The gated short convolution: out_proj(C * conv(B * x)).
  auto short_conv_block = [&](const std::string& layer, int64_t i, Tensor xn) {
    const Tensor bcx = b.matmul(xn, weight(b, w, blk(i, "shortconv.in_proj"), {3 * c.dim, c.dim}))
                           .named(layer + ".conv_in");  // [T, 3 dim]: B | C | x
    auto part = [&](int64_t k) { return b.slice(bcx, 1, k * c.dim, Dim::constant(c.dim)); };
    const Tensor bx = (part(0) * part(2)).named(layer + ".conv_bx");
    const CacheInputs& pool = *step.windowed;
    const Tensor rows =
        b.state(layer + ".conv_state", graph::Shape{Dim::symbol(pool.rows), Dim::constant(c.dim)},
                graph::DType::F32);  // [W, dim]: every sequence's last values of B*x
    const Tensor written = b.kv_write(rows, bx, pool.slots).named(layer + ".conv_state.write");
    b.update_state(rows, written);
    // The taps are F32 (as the converter writes them; an HF checkpoint's are widened at load).
    const Tensor conv = b.short_conv(written, weight(b, w, blk(i, "shortconv.conv"), {c.dim, L}),
                                     step.positions, step.seq_ids, pool.block_tables,
                                     graph::BlockGatherAttrs{pool.block_size, Dim::symbol(graph::Sym::S)})
                            .named(layer + ".conv");
    return b
        .matmul((part(1) * conv).named(layer + ".conv_gated"),
                weight(b, w, blk(i, "shortconv.out_proj"), {c.dim, c.dim}))
        .named(layer + ".conv_out");
  };
  // Attention with per-head q/k RMSNorm before RoPE.
  auto attention_block = [&](const std::string& layer, int64_t i, Tensor xn) {
    const AttentionWeights aw{
        weight(b, w, blk(i, "attn_q"), {q_dim, c.dim}), weight(b, w, blk(i, "attn_k"), {kv_dim, c.dim}),
        weight(b, w, blk(i, "attn_v"), {kv_dim, c.dim}), weight(b, w, blk(i, "attn_output"), {c.dim, q_dim})};
    const QkvHeads qkv = qk_norm(b, layer, project_qkv(b, layer, aw, attn, xn),
                                 weight(b, w, blk(i, "attn_q_norm"), {c.head_dim}),
                                 weight(b, w, blk(i, "attn_k_norm"), {c.head_dim}), c.rms_eps);
    return attend(b, layer, qkv, aw.wo, attn, step, opt.kv_dtype);
  };

  Tensor x = b.embedding(token_embd, step.tokens).named("token_embd");  // [T, dim]
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string layer = fmt::format("blk.{}", i);
    const Tensor xn =
        b.rms_norm(x, weight(b, w, blk(i, "attn_norm"), {c.dim}), c.rms_eps).named(layer + ".attn_norm");
    Tensor h = x + (cfg->conv[static_cast<size_t>(i)] ? short_conv_block(layer, i, xn)
                                                      : attention_block(layer, i, xn));
    if (i == c.n_layers - 1) h = select_output_rows(b, step, h);  // only wanted tokens go on
    const Tensor hn =
        b.rms_norm(h, weight(b, w, blk(i, "ffn_norm"), {c.dim}), c.rms_eps).named(layer + ".ffn_norm");
    x = (h + swiglu_ffn(b, layer, weight(b, w, blk(i, "ffn_gate"), {c.ffn_dim, c.dim}),
                        weight(b, w, blk(i, "ffn_up"), {c.ffn_dim, c.dim}),
                        weight(b, w, blk(i, "ffn_down"), {c.dim, c.ffn_dim}), hn))
            .named(layer + ".out");
  }
  // The final norm is token_embd_norm in LFM2's GGUF files (llama.cpp's name for it).
  const Tensor out_norm = weight(b, w, "token_embd_norm.weight", {c.dim});
  const Tensor output = optional_weight(b, w, "output.weight", {c.vocab_size, c.dim}).value_or(token_embd);
  b.output("logits",
           b.matmul(b.rms_norm(x, out_norm, c.rms_eps).named("output_norm"), output).named("logits"));
  auto g = b.finish();
  if (!g) return g.error();
  int64_t n_conv = 0;
  for (bool v : cfg->conv) n_conv += v ? 1 : 0;
  return finish_model_graph(
      std::move(*g), c.vocab_size, c.n_ctx_train, c.n_layers, opt,
      fmt::format(
          "lfm2: {} layers ({} short convolutions of width {}, {} attention), dim {}, {} heads ({} kv), "
          "head_dim {}, ffn {}, vocab {}, rope base {:g}",
          c.n_layers, n_conv, L, c.n_layers - n_conv, c.dim, c.n_heads, c.n_kv_heads, c.head_dim, c.ffn_dim,
          c.vocab_size, c.rope_freq_base),
      /*window=*/L);
}

}  // namespace glass::models
