// Qwen 3.5 (Qwen Team 2026; the Qwen3-Next architecture at dense sizes): a hybrid of Gated DeltaNet
// linear attention (Yang et al. 2024) and gated full attention, three of the former to one of the
// latter. Every layer is pre-norm, then the post-attention norm before a SwiGLU MLP:
//   * Gated DeltaNet: x W_qkv runs through a causal depthwise conv1d (width ssm.conv_kernel) and
//     SiLU, then splits into q and k (ssm.group_count key heads, L2-normed) and v (ssm.time_step_rank
//     value heads); the delta rule (graph/ops/delta_net.cpp) keeps a [D, D] state per value head with
//     the decay exp(A * softplus(x W_alpha + dt)) and the write strength sigmoid(x W_beta); its
//     output is RMS-normed per head, gated by SiLU(x W_z) and projected out;
//   * attention: q and a gate from one projection (per head [q | gate]), q/k RMSNorm per head, RoPE
//     on the first rope.dimension_count dims (M-RoPE whose text positions are equal in every section,
//     so rotate-half RoPE), GQA, the output times sigmoid(gate), then W_o.
// The conv1d's state is its last inputs: rows of the sliding-window pool (as LFM2's); the DeltaNet
// state a slot per sequence (kv/recurrent.h), checkpointed where prefixes can be resumed.
// Serves GGUF general.architecture "qwen35" and "qwen35moe" (the MoE sizes: a softmax top-k mixture
// of SwiGLU experts, renormalised, plus a shared expert gated by sigmoid(x w_gate)). Not covered:
// the vision tower; the MTP (next-token prediction) layers are skipped until speculative decoding
// drafts with them.
#include "models/qwen35.h"

#include <fmt/format.h>

#include "models/blocks.h"

namespace glass::models {
namespace {

std::string blk(int64_t i, const char* what, const char* part = ".weight") {
  return fmt::format("blk.{}.{}{}", i, what, part);
}

struct Qwen35Experts {
  int64_t count = 0, used = 0, ffn = 0, shared_ffn = 0;
};

struct Qwen35Config {
  DecoderConfig c;  // the attention layers' geometry; n_layers without the MTP layers
  std::optional<Qwen35Experts> moe;
  std::vector<bool> delta;  // per layer: Gated DeltaNet (else attention)
  int64_t conv_kernel = 0, head_dim = 0, k_heads = 0, v_heads = 0;
  int64_t n_mtp = 0;  // nextn_predict_layers, stored after the others
};

Result<Qwen35Config> read_config(const formats::GgufFile& file, const WeightIndex& w, bool moe) {
  HparamReader hp(file, moe ? "qwen35moe" : "qwen35");
  auto c = read_decoder_config(hp, w, /*read_ffn=*/!moe);
  if (!c) return c.error();
  Qwen35Config q{*c};
  if (moe) {
    q.moe = Qwen35Experts{hp.required_int("expert_count"), hp.required_int("expert_used_count"),
                          hp.required_int("expert_feed_forward_length"),
                          hp.optional_int("expert_shared_feed_forward_length", 0)};
    if (auto st = hp.status(); !st) return st.error();
    if (q.moe->count < 1 || q.moe->used < 1 || q.moe->used > q.moe->count || q.moe->ffn < 1 ||
        q.moe->shared_ffn < 0)
      return make_error(
          ErrorCode::InvalidFile,
          fmt::format("qwen35moe: {} = {} of {} = {} experts (width {}, shared {}) do not make a "
                      "mixture",
                      hp.key("expert_used_count"), q.moe->used, hp.key("expert_count"), q.moe->count,
                      q.moe->ffn, q.moe->shared_ffn));
  }
  q.conv_kernel = hp.required_int("ssm.conv_kernel");
  q.head_dim = hp.required_int("ssm.state_size");
  q.k_heads = hp.required_int("ssm.group_count");
  q.v_heads = hp.required_int("ssm.time_step_rank");
  const int64_t inner = hp.required_int("ssm.inner_size");
  q.n_mtp = hp.optional_int("nextn_predict_layers", 0);
  const int64_t interval = hp.optional_int("full_attention_interval", 4);
  if (auto st = hp.status(); !st) return st.error();
  auto bad = [&](const std::string& what) {
    return make_error(ErrorCode::InvalidFile, hp.arch() + ": " + what);
  };
  if (q.conv_kernel < 1 || q.conv_kernel > 64)
    return bad(fmt::format("{} = {} must be within 1 .. 64", hp.key("ssm.conv_kernel"), q.conv_kernel));
  if (q.head_dim < 1 || q.k_heads < 1 || q.v_heads < 1 || q.v_heads % q.k_heads != 0)
    return bad(fmt::format("{} = {} must be a positive multiple of {} = {} (and {} positive)",
                           hp.key("ssm.time_step_rank"), q.v_heads, hp.key("ssm.group_count"), q.k_heads,
                           hp.key("ssm.state_size")));
  if (inner != q.head_dim * q.v_heads)
    return make_error(
        ErrorCode::Unsupported,
        fmt::format("{}: {} = {} is not {} x {} (value heads as wide as key heads)", hp.arch(),
                    hp.key("ssm.inner_size"), inner, hp.key("ssm.state_size"), hp.key("ssm.time_step_rank")));
  if (q.n_mtp < 0 || q.n_mtp >= q.c.n_layers)
    return bad(fmt::format("{} = {} must be below {} = {}", hp.key("nextn_predict_layers"), q.n_mtp,
                           hp.key("block_count"), q.c.n_layers));
  q.c.n_layers -= q.n_mtp;
  if (interval < 1)
    return bad(fmt::format("{} = {} must be positive", hp.key("full_attention_interval"), interval));
  // M-RoPE: text tokens take the same position in the first three sections and 0 in the fourth, so
  // only a rope without a fourth section is the rotate-half RoPE built here.
  if (hp.has("rope.dimension_sections")) {
    auto sections = file.get_i32_array(hp.key("rope.dimension_sections"));
    if (!sections) return sections.error();
    if (sections->size() == 4 && (*sections)[3] != 0)
      return make_error(ErrorCode::Unsupported,
                        fmt::format("{}: {} has a fourth section of {} (text positions rotate the first "
                                    "three only)",
                                    hp.arch(), hp.key("rope.dimension_sections"), (*sections)[3]));
  }
  if (const formats::GgufValue* layers = file.find(hp.key("attention.recurrent_layers")); layers != nullptr) {
    if (layers->type != formats::GgufValueType::ARRAY || layers->elem_type != formats::GgufValueType::BOOL ||
        layers->count < static_cast<uint64_t>(q.c.n_layers))
      return bad(fmt::format("{} must be a bool per layer ({} layers)", hp.key("attention.recurrent_layers"),
                             q.c.n_layers));
    for (int64_t i = 0; i < q.c.n_layers; ++i)
      q.delta.push_back(layers->element(static_cast<uint64_t>(i)).u64 != 0);
  } else {
    for (int64_t i = 0; i < q.c.n_layers; ++i) q.delta.push_back((i + 1) % interval != 0);
  }
  return q;
}

Result<ModelGraph> build_qwen35(const formats::GgufFile& file, const WeightIndex& w, const BuildOptions& opt,
                                bool moe) {
  using graph::Dim;
  using graph::Shape;
  using graph::Tensor;
  auto cfg = read_config(file, w, moe);
  if (!cfg) return cfg.error();
  const Qwen35Config& q = *cfg;
  const DecoderConfig& c = q.c;
  const int64_t D = q.head_dim, key_dim = q.k_heads * D, value_dim = q.v_heads * D;
  const int64_t conv_dim = 2 * key_dim + value_dim, hd = c.head_dim;
  const Dim T = Dim::symbol(graph::Sym::T);

  graph::Builder b;
  // The conv1d's rows: the last conv_kernel positions; the DeltaNet states: a slot per sequence.
  const Step step = declare_step(b, opt, /*window=*/q.conv_kernel, /*recurrent=*/true);
  const Tensor token_embd = weight(b, w, "token_embd.weight", {c.vocab_size, c.dim});
  const graph::RopeAttrs rope{static_cast<int>(c.n_rot), graph::RopeMode::NeoX, c.rope_freq_base,
                              c.rope_freq_scale};

  auto gated_delta_net = [&](const std::string& layer, int64_t i, Tensor xn) {
    const Tensor mixed =
        b.matmul(xn, weight(b, w, blk(i, "attn_qkv"), {conv_dim, c.dim})).named(layer + ".qkv");
    const Tensor z = b.matmul(xn, weight(b, w, blk(i, "attn_gate"), {value_dim, c.dim})).named(layer + ".z");
    const Tensor beta =
        sigmoid(b, b.matmul(xn, weight(b, w, blk(i, "ssm_beta"), {q.v_heads, c.dim}))).named(layer + ".beta");
    const Tensor alpha = b.matmul(xn, weight(b, w, blk(i, "ssm_alpha"), {q.v_heads, c.dim})) +
                         weight(b, w, blk(i, "ssm_dt", ".bias"), {q.v_heads});
    const Tensor g =
        (softplus(b, alpha) * weight(b, w, blk(i, "ssm_a", ""), {q.v_heads})).named(layer + ".g");
    // Causal conv1d over the sequence's last conv_kernel inputs, through the windowed pool.
    const CacheInputs& pool = *step.windowed;
    const Tensor rows = b.state(layer + ".conv_state", Shape{Dim::symbol(pool.rows), Dim::constant(conv_dim)},
                                graph::DType::F32);
    const Tensor written = b.kv_write(rows, mixed, pool.slots).named(layer + ".conv_state.write");
    b.update_state(rows, written);
    const Tensor conv =
        b.silu(b.short_conv(written, weight(b, w, blk(i, "ssm_conv1d"), {conv_dim, q.conv_kernel}),
                            step.positions, step.seq_ids, pool.block_tables,
                            graph::BlockGatherAttrs{pool.block_size, Dim::symbol(graph::Sym::S)}))
            .named(layer + ".conv");
    auto heads = [&](int64_t at, int64_t n) {
      return b.reshape(b.slice(conv, 1, at, Dim::constant(n * D)),
                       Shape{T, Dim::constant(n), Dim::constant(D)});
    };
    const Tensor qh = l2_norm(b, heads(0, q.k_heads), c.rms_eps).named(layer + ".q");
    const Tensor kh = l2_norm(b, heads(key_dim, q.k_heads), c.rms_eps).named(layer + ".k");
    const Tensor vh = heads(2 * key_dim, q.v_heads).named(layer + ".v");
    // The delta rule over each sequence's state slot: outputs first, then the slots advanced.
    const Tensor states = b.state(
        layer + ".ssm_state",
        Shape{Dim::symbol(graph::Sym::R), Dim::constant(q.v_heads), Dim::constant(D), Dim::constant(D)},
        graph::DType::F32);
    // GGUF files tile the key heads over the value heads; HF checkpoints group them.
    const graph::DeltaNetAttrs heads_order{.grouped_heads = opt.hf_layout};
    const Tensor o =
        b.delta_net(qh, kh, vh, g, beta, states, step.seq_ids, *step.recurrent_slots, heads_order)
            .named(layer + ".delta");
    b.update_state(states, b.delta_net_state(states, kh, vh, g, beta, step.seq_ids, *step.recurrent_slots, o,
                                             heads_order)
                               .named(layer + ".ssm_state.write"));
    // Per-head RMSNorm, gated by SiLU(z), then out.
    const Tensor gated = b.rms_norm(o, weight(b, w, blk(i, "ssm_norm"), {D}), c.rms_eps) *
                         b.silu(b.reshape(z, Shape{T, Dim::constant(q.v_heads), Dim::constant(D)}));
    return b
        .matmul(b.reshape(gated, Shape{T, Dim::constant(value_dim)}),
                weight(b, w, blk(i, "ssm_out"), {c.dim, value_dim}))
        .named(layer + ".delta_out");
  };

  auto gated_attention = [&](const std::string& layer, int64_t i, Tensor xn) {
    const Tensor qg =
        b.reshape(b.matmul(xn, weight(b, w, blk(i, "attn_q"), {2 * c.n_heads * hd, c.dim})),
                  Shape{T, Dim::constant(c.n_heads), Dim::constant(2 * hd)});  // per head [q | gate]
    const Tensor qn =
        b.rms_norm(b.slice(qg, 2, 0, Dim::constant(hd)), weight(b, w, blk(i, "attn_q_norm"), {hd}), c.rms_eps)
            .named(layer + ".q_norm");
    const Tensor gate =
        b.reshape(b.slice(qg, 2, hd, Dim::constant(hd)), Shape{T, Dim::constant(c.n_heads * hd)});
    const Tensor kn =
        b.rms_norm(project_heads(b, xn, weight(b, w, blk(i, "attn_k"), {c.n_kv_heads * hd, c.dim}),
                                 c.n_kv_heads, hd),
                   weight(b, w, blk(i, "attn_k_norm"), {hd}), c.rms_eps)
            .named(layer + ".k_norm");
    const Tensor v =
        project_heads(b, xn, weight(b, w, blk(i, "attn_v"), {c.n_kv_heads * hd, c.dim}), c.n_kv_heads, hd);
    const KvCache kv =
        write_kv(b, layer, {c.n_kv_heads, hd}, b.rope(kn, step.positions, rope).named(layer + ".k_rope"), v,
                 step, opt.kv_dtype, 0);
    graph::AttentionAttrs attrs{1.0f / std::sqrt(static_cast<float>(hd)), Dim::symbol(graph::Sym::S)};
    attrs.block_size = step.full.block_size;
    const Tensor o = b.attention(b.rope(qn, step.positions, rope).named(layer + ".q_rope"), kv.k, kv.v,
                                 step.positions, step.seq_ids, step.full.block_tables, attrs)
                         .named(layer + ".attn");
    const Tensor gated = (b.reshape(o, Shape{T, Dim::constant(c.n_heads * hd)}) * sigmoid(b, gate))
                             .named(layer + ".attn_gated");
    return b.matmul(gated, weight(b, w, blk(i, "attn_output"), {c.dim, c.n_heads * hd}))
        .named(layer + ".attn_out");
  };

  // The MoE sizes' FFN: the routed experts plus the shared one, gated per token.
  auto experts = [&](const std::string& layer, int64_t i, Tensor hn) {
    const Qwen35Experts& e = *q.moe;
    const MoeWeights mw{weight(b, w, blk(i, "ffn_gate_inp"), {e.count, c.dim}),
                        weight(b, w, blk(i, "ffn_gate_exps"), {e.count, e.ffn, c.dim}),
                        weight(b, w, blk(i, "ffn_up_exps"), {e.count, e.ffn, c.dim}),
                        weight(b, w, blk(i, "ffn_down_exps"), {e.count, c.dim, e.ffn})};
    const Tensor out = moe_ffn(b, layer, mw, graph::MoeAttrs{static_cast<int>(e.used), true}, hn);
    if (e.shared_ffn == 0) return out;
    const Tensor shared =
        swiglu_ffn(b, layer + ".shexp", weight(b, w, blk(i, "ffn_gate_shexp"), {e.shared_ffn, c.dim}),
                   weight(b, w, blk(i, "ffn_up_shexp"), {e.shared_ffn, c.dim}),
                   weight(b, w, blk(i, "ffn_down_shexp"), {c.dim, e.shared_ffn}), hn);
    // The shared expert's gate: x . w_gate per token (a reduction of the row, not a one-column
    // matmul, so that a token's value never depends on what else the step holds).
    const Tensor gate = b.reduce_sum(hn * weight(b, w, blk(i, "ffn_gate_inp_shexp"), {c.dim}));  // [T, 1]
    return (out + shared * sigmoid(b, gate)).named(layer + ".ffn_moe_shared");
  };

  Tensor x = b.embedding(token_embd, step.tokens).named("token_embd");  // [T, dim]
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string layer = fmt::format("blk.{}", i);
    const Tensor xn =
        b.rms_norm(x, weight(b, w, blk(i, "attn_norm"), {c.dim}), c.rms_eps).named(layer + ".attn_norm");
    Tensor h =
        x + (q.delta[static_cast<size_t>(i)] ? gated_delta_net(layer, i, xn) : gated_attention(layer, i, xn));
    if (i == c.n_layers - 1) h = select_output_rows(b, step, h);  // only wanted tokens go on
    const Tensor hn = b.rms_norm(h, weight(b, w, blk(i, "post_attention_norm"), {c.dim}), c.rms_eps)
                          .named(layer + ".ffn_norm");
    x = (h + (q.moe ? experts(layer, i, hn)
                    : swiglu_ffn(b, layer, weight(b, w, blk(i, "ffn_gate"), {c.ffn_dim, c.dim}),
                                 weight(b, w, blk(i, "ffn_up"), {c.ffn_dim, c.dim}),
                                 weight(b, w, blk(i, "ffn_down"), {c.dim, c.ffn_dim}), hn)))
            .named(layer + ".out");
  }
  b.output("logits", lm_head(b, w, x, token_embd, c.vocab_size, c.dim, c.rms_eps));
  auto g = b.finish();
  if (!g) return g.error();
  int64_t n_delta = 0;
  for (bool d : q.delta) n_delta += d ? 1 : 0;
  return finish_model_graph(
      std::move(*g), c.vocab_size, c.n_ctx_train, c.n_layers, opt,
      fmt::format("{}: {} layers ({} Gated DeltaNet: {} key / {} value heads x {}, conv {}; {} attention: "
                  "{} heads ({} kv) x {}, rope {} dims base {:g}), dim {}, ffn {}, vocab {}{}",
                  moe ? "qwen35moe" : "qwen35", c.n_layers, n_delta, q.k_heads, q.v_heads, D, q.conv_kernel,
                  c.n_layers - n_delta, c.n_heads, c.n_kv_heads, hd, c.n_rot, c.rope_freq_base, c.dim,
                  c.ffn_dim, c.vocab_size,
                  (q.moe ? fmt::format("; {} experts (top {}) x {}, shared {}", q.moe->count, q.moe->used,
                                       q.moe->ffn, q.moe->shared_ffn)
                         : std::string()) +
                      (q.n_mtp > 0 ? fmt::format("; {} MTP layer(s) skipped", q.n_mtp) : "")),
      /*window=*/q.conv_kernel);
}

}  // namespace

Result<ModelGraph> qwen35_from_gguf(const formats::GgufFile& file, const WeightIndex& w,
                                    const BuildOptions& opt) {
  return build_qwen35(file, w, opt, /*moe=*/false);
}

Result<ModelGraph> qwen35moe_from_gguf(const formats::GgufFile& file, const WeightIndex& w,
                                       const BuildOptions& opt) {
  return build_qwen35(file, w, opt, /*moe=*/true);
}

}  // namespace glass::models
