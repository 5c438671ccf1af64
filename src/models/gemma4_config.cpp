// Gemma 4's hyper-parameters (metadata keys, with llama.cpp's defaults) and its tensor table. See
// gemma4.cpp for the model.
#include <fmt/format.h>

#include <algorithm>

#include "models/blocks.h"
#include "models/gemma4.h"
#include "models/hparam_reader.h"

namespace glass::models {
namespace {

constexpr const char* kArch = "gemma4";

std::string blk(int64_t i, const char* what) { return fmt::format("blk.{}.{}.weight", i, what); }

Status check(const Gemma4Config& c) {
  auto bad = [](const std::string& what) {
    return make_error(ErrorCode::InvalidFile, fmt::format("{}: {}", kArch, what));
  };
  if (c.n_layers <= 0 || c.dim <= 0 || c.n_heads <= 0 || c.vocab_size <= 0 || c.n_ctx_train <= 0)
    return bad(
        fmt::format("{0}.block_count, {0}.embedding_length, {0}.attention.head_count and "
                    "{0}.context_length must be positive",
                    kArch));
  for (const auto* k : {&c.local, &c.global}) {
    const char* which = k == &c.local ? "_swa" : "";
    if (k->head_dim <= 0)
      return bad(fmt::format("{}.attention.key_length{} = {} must be positive", kArch, which, k->head_dim));
    if (k->n_rot <= 0 || k->n_rot % 2 != 0 || k->n_rot > k->head_dim)
      return bad(fmt::format("{}.rope.dimension_count{} = {} must be even and at most the head size {}",
                             kArch, which, k->n_rot, k->head_dim));
    if (!(k->rope_base > 0.0f) || !(k->rope_scale > 0.0f))
      return bad(
          fmt::format("{}.rope.freq_base{} and the rope scaling factor must be positive", kArch, which));
  }
  if (!(c.rms_eps > 0.0f))
    return bad(fmt::format("{}.attention.layer_norm_rms_epsilon must be positive", kArch));
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const int64_t kv = c.n_kv_heads[static_cast<size_t>(i)], ffn = c.ffn_dim[static_cast<size_t>(i)];
    if (kv <= 0 || c.n_heads % kv != 0)
      return bad(fmt::format("layer {}: {}.attention.head_count_kv = {} must divide head_count {}", i, kArch,
                             kv, c.n_heads));
    if (ffn <= 0) return bad(fmt::format("layer {}: {}.feed_forward_length must be positive", i, kArch));
    if (c.is_local[static_cast<size_t>(i)] && c.sliding_window <= 0)
      return bad(fmt::format("{}.attention.sliding_window must be positive: layer {} is local", kArch, i));
  }
  if (c.n_kv_layers <= 0 || c.n_kv_layers > c.n_layers)
    return bad(fmt::format("{}.attention.shared_kv_layers leaves {} cache-owning layers of {}", kArch,
                           c.n_kv_layers, c.n_layers));
  for (int64_t i = c.n_kv_layers; i < c.n_layers; ++i) {
    const int64_t src = c.kv_source(i);
    if (src < 0 || c.is_local[static_cast<size_t>(src)] != c.is_local[static_cast<size_t>(i)] ||
        c.n_kv_heads[static_cast<size_t>(src)] != c.n_kv_heads[static_cast<size_t>(i)])
      return bad(
          fmt::format("layer {} shares the KV cache of layer {}, which is not a cache-owning layer of the "
                      "same kind and KV-head count ({}.attention.shared_kv_layers, "
                      "sliding_window_pattern)",
                      i, src, kArch));
  }
  if (c.ple_dim < 0) return bad(fmt::format("{}.embedding_length_per_layer_input must be >= 0", kArch));
  if (!(c.final_softcap >= 0.0f)) return bad(fmt::format("{}.final_logit_softcapping must be >= 0", kArch));
  const auto moe = std::find(c.is_moe.begin(), c.is_moe.end(), true);
  if (moe != c.is_moe.end() &&
      (c.n_expert <= 0 || c.n_expert_used <= 0 || c.n_expert_used > c.n_expert || c.expert_ffn_dim <= 0))
    return bad(fmt::format(
        "the file has expert layers ({}) but {}.expert_count = {}, expert_used_count = {} "
        "and expert_feed_forward_length = {} do not describe them",
        blk(moe - c.is_moe.begin(), "ffn_gate_inp"), kArch, c.n_expert, c.n_expert_used, c.expert_ffn_dim));
  return {};
}

}  // namespace

int64_t Gemma4Config::kv_source(int64_t layer) const {
  if (layer < n_kv_layers) return layer;
  return n_kv_layers - (is_local[static_cast<size_t>(layer)] ? 2 : 1);
}

int64_t Gemma4Config::local_window() const {
  return std::find(is_local.begin(), is_local.end(), true) != is_local.end() ? sliding_window : 0;
}

std::string Gemma4Config::summary() const {
  std::string kinds;
  for (bool l : is_local) kinds += l ? 'L' : 'G';
  return fmt::format(
      "{}: {} layers ({}), dim {}, {} heads, head_dim {} local / {} global, window {}, rope base {:g} local "
      "/ "
      "{:g} global, per-layer inputs {}, {} cache-owning layers, final softcap {:g}",
      kArch, n_layers, kinds, dim, n_heads, local.head_dim, global.head_dim, sliding_window, local.rope_base,
      global.rope_base, ple_dim, n_kv_layers, final_softcap);
}

Result<Gemma4Config> gemma4_config_from_gguf(const formats::GgufFile& f, const WeightIndex& w) {
  HparamReader r(f, kArch);
  Gemma4Config c;
  c.n_layers = r.required_int("block_count");
  const int64_t n = std::max<int64_t>(c.n_layers, 0);
  c.dim = r.required_int("embedding_length");
  const std::vector<int64_t> heads = r.per_layer_int("attention.head_count", n);
  c.n_heads = heads.empty() ? 0 : heads.front();
  if (std::any_of(heads.begin(), heads.end(), [&](int64_t h) { return h != c.n_heads; }))
    r.fail(fmt::format("{}: per-layer query-head counts that differ are not supported",
                       r.key("attention.head_count")));
  c.n_kv_heads = r.has("attention.head_count_kv") ? r.per_layer_int("attention.head_count_kv", n)
                                                  : std::vector<int64_t>(static_cast<size_t>(n), c.n_heads);
  c.ffn_dim = r.per_layer_int("feed_forward_length", n);
  c.n_ctx_train = r.required_int("context_length");
  c.rms_eps = r.required_float("attention.layer_norm_rms_epsilon");

  c.global.head_dim = r.optional_int("attention.key_length", c.n_heads > 0 ? c.dim / c.n_heads : 0);
  c.local.head_dim = r.optional_int("attention.key_length_swa", c.global.head_dim);
  if (r.optional_int("attention.value_length", c.global.head_dim) != c.global.head_dim ||
      r.optional_int("attention.value_length_swa", c.local.head_dim) != c.local.head_dim)
    r.fail(fmt::format("{} must equal {} and {} must equal {} (Gemma 4 stores K and V in one head size)",
                       r.key("attention.value_length"), r.key("attention.key_length"),
                       r.key("attention.value_length_swa"), r.key("attention.key_length_swa")));
  c.global.n_rot = r.optional_int("rope.dimension_count", c.global.head_dim);
  c.local.n_rot = r.optional_int("rope.dimension_count_swa", c.global.n_rot);
  c.global.rope_base = r.optional_float("rope.freq_base", 10000.0f);
  c.local.rope_base = r.optional_float("rope.freq_base_swa", 10000.0f);  // llama.cpp's default
  if (r.has("rope.scaling.type")) {
    const float factor = r.optional_float("rope.scaling.factor", 1.0f);
    if (!(factor > 0.0f))
      r.fail(fmt::format("{} must be positive", r.key("rope.scaling.factor")));
    else
      c.global.rope_scale = 1.0f / factor;
  }
  c.sliding_window = r.optional_int("attention.sliding_window", 0);
  if (!r.has("attention.sliding_window_pattern"))
    r.fail(fmt::format("key '{}' is missing (Gemma 4 files name each layer's kind)",
                       r.key("attention.sliding_window_pattern")));
  c.is_local = r.sliding_layers(n, 1);
  c.ple_dim = r.optional_int("embedding_length_per_layer_input", 0);
  c.n_kv_layers = c.n_layers - r.optional_int("attention.shared_kv_layers", 0);
  c.final_softcap = r.optional_float("final_logit_softcapping", 0.0f);
  c.vocab_size = r.optional_int("vocab_size", r.tensor_rows(w, "token_embd.weight"));
  c.n_expert = r.optional_int("expert_count", 0);
  c.n_expert_used = r.optional_int("expert_used_count", 0);
  c.expert_ffn_dim = r.optional_int("expert_feed_forward_length", 0);
  for (int64_t i = 0; i < n; ++i) c.is_moe.push_back(w.contains(blk(i, "ffn_gate_inp")));
  if (auto st = r.status(); !st) return st.error();
  if (auto st = check(c); !st) return st.error();
  return c;
}

Gemma4Weights declare_gemma4_weights(graph::Builder& b, const WeightIndex& w, const Gemma4Config& c) {
  Gemma4Weights g;
  g.token_embd = weight(b, w, "token_embd.weight", {c.vocab_size, c.dim});
  g.output_norm = weight(b, w, "output_norm.weight", {c.dim});
  g.output = optional_weight(b, w, "output.weight", {c.vocab_size, c.dim}).value_or(g.token_embd);
  const int64_t ple_all = c.n_layers * c.ple_dim;
  if (c.ple_dim > 0) {
    g.per_layer_token_embd = weight(b, w, "per_layer_token_embd.weight", {c.vocab_size, ple_all});
    g.per_layer_model_proj = weight(b, w, "per_layer_model_proj.weight", {ple_all, c.dim});
    g.per_layer_proj_norm = weight(b, w, "per_layer_proj_norm.weight", {c.ple_dim});
  }
  if (std::find(c.is_local.begin(), c.is_local.end(), false) != c.is_local.end())
    g.rope_freqs = weight(b, w, "rope_freqs.weight", {c.global.n_rot / 2});
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const Gemma4Kind& k = c.kind(i);
    const int64_t q_dim = c.n_heads * k.head_dim, kv_dim = c.n_kv_heads[static_cast<size_t>(i)] * k.head_dim;
    const int64_t ffn = c.ffn_dim[static_cast<size_t>(i)];
    Gemma4Layer l;
    l.attn_norm = weight(b, w, blk(i, "attn_norm"), {c.dim});
    l.wq = weight(b, w, blk(i, "attn_q"), {q_dim, c.dim});
    l.q_norm = weight(b, w, blk(i, "attn_q_norm"), {k.head_dim});
    if (c.kv_source(i) == i) {
      l.wk = weight(b, w, blk(i, "attn_k"), {kv_dim, c.dim});
      l.k_norm = weight(b, w, blk(i, "attn_k_norm"), {k.head_dim});
      l.wv = optional_weight(b, w, blk(i, "attn_v"), {kv_dim, c.dim});
    }
    l.wo = weight(b, w, blk(i, "attn_output"), {c.dim, q_dim});
    l.post_attn_norm = weight(b, w, blk(i, "post_attention_norm"), {c.dim});
    l.ffn_norm = weight(b, w, blk(i, "ffn_norm"), {c.dim});
    l.gate = weight(b, w, blk(i, "ffn_gate"), {ffn, c.dim});
    l.up = weight(b, w, blk(i, "ffn_up"), {ffn, c.dim});
    l.down = weight(b, w, blk(i, "ffn_down"), {c.dim, ffn});
    l.post_ffn_norm = weight(b, w, blk(i, "post_ffw_norm"), {c.dim});
    if (c.ple_dim > 0) {
      l.inp_gate = weight(b, w, blk(i, "inp_gate"), {c.ple_dim, c.dim});
      l.proj = weight(b, w, blk(i, "proj"), {c.dim, c.ple_dim});
      l.post_norm = weight(b, w, blk(i, "post_norm"), {c.dim});
    }
    l.out_scale = optional_weight(b, w, blk(i, "layer_output_scale"), {1});
    if (c.is_moe[static_cast<size_t>(i)]) {
      const int64_t e = c.n_expert, f = c.expert_ffn_dim;
      l.router = weight(b, w, blk(i, "ffn_gate_inp"), {e, c.dim});
      l.router_scale = weight(b, w, fmt::format("blk.{}.ffn_gate_inp.scale", i), {c.dim});
      l.pre_moe_norm = weight(b, w, blk(i, "pre_ffw_norm_2"), {c.dim});
      l.post_mlp_norm = weight(b, w, blk(i, "post_ffw_norm_1"), {c.dim});
      l.post_moe_norm = weight(b, w, blk(i, "post_ffw_norm_2"), {c.dim});
      l.fused_gate_up = w.contains(blk(i, "ffn_gate_up_exps"));
      if (l.fused_gate_up) {
        l.gate_exps = l.up_exps = weight(b, w, blk(i, "ffn_gate_up_exps"), {e, 2 * f, c.dim});
      } else {
        l.gate_exps = weight(b, w, blk(i, "ffn_gate_exps"), {e, f, c.dim});
        l.up_exps = weight(b, w, blk(i, "ffn_up_exps"), {e, f, c.dim});
      }
      l.down_exps = weight(b, w, blk(i, "ffn_down_exps"), {e, c.dim, f});
      l.down_exps_scale = optional_weight(b, w, fmt::format("blk.{}.ffn_down_exps.scale", i), {e});
    }
    g.layers.push_back(l);
  }
  return g;
}

}  // namespace glass::models
