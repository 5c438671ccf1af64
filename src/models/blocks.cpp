#include "models/blocks.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace glass::models {

using graph::Dim;
using graph::DType;
using graph::Shape;
using graph::Sym;
using graph::Tensor;

StateKind state_kind(const std::string& name) {
  return name.ends_with(".cache_k") ? StateKind::Keys : StateKind::Values;
}

Step declare_step(graph::Builder& b, const BuildOptions& opt, int64_t window, bool recurrent) {
  const Shape per_token{Dim::symbol(Sym::T)};
  const int64_t block_size = std::max<int64_t>(1, opt.kv_block_size);
  auto pool = [&](const std::string& prefix, Sym rows) {
    return CacheInputs{
        b.input(prefix + "slots", per_token, DType::I32),
        b.input(prefix + "block_tables", Shape{Dim::symbol(Sym::N), Dim::symbol(Sym::M)}, DType::I32), rows,
        block_size};
  };
  Step s;
  s.tokens = b.input("tokens", per_token, DType::I32);
  s.positions = b.input("positions", per_token, DType::I32);
  s.seq_ids = b.input("seq_ids", per_token, DType::I32);
  s.full = pool("", Sym::C);
  if (window > 0) s.windowed = pool("window_", Sym::W);
  if (recurrent) s.recurrent_slots = b.input("recurrent_slots", Shape{Dim::symbol(Sym::N)}, DType::I32);
  s.output_rows = b.input("output_rows", Shape{Dim::symbol(Sym::O)}, DType::I32);
  return s;
}

namespace {

Shape heads_shape(int64_t n_heads, int64_t head_dim) {
  return Shape{Dim::symbol(Sym::T), Dim::constant(n_heads), Dim::constant(head_dim)};
}

}  // namespace

QkvHeads project_qkv(graph::Builder& b, const std::string& layer, const AttentionWeights& w,
                     const AttentionShape& s, Tensor x, const std::optional<QkvBiases>& biases) {
  auto project = [&](Tensor wt, std::optional<Tensor> bias, int64_t n_heads, const char* name) {
    Tensor y = b.matmul(x, wt);  // [T, n_heads*head_dim]
    if (bias) y = (y + *bias).named(layer + "." + name + "_bias");
    return b.reshape(y, heads_shape(n_heads, s.head_dim)).named(layer + "." + name);
  };
  return {project(w.wq, biases ? std::optional(biases->bq) : std::nullopt, s.n_heads, "q"),
          project(w.wk, biases ? std::optional(biases->bk) : std::nullopt, s.n_kv_heads, "k"),
          project(w.wv, biases ? std::optional(biases->bv) : std::nullopt, s.n_kv_heads, "v")};
}

QkvHeads project_qkv_fused(graph::Builder& b, const std::string& layer, Tensor wqkv, const AttentionShape& s,
                           Tensor x) {
  const int64_t q_dim = s.n_heads * s.head_dim, kv_dim = s.n_kv_heads * s.head_dim;
  const Tensor qkv = b.matmul(x, wqkv).named(layer + ".qkv");  // [T, q_dim + 2 kv_dim]
  return {
      b.reshape(b.slice(qkv, 1, 0, Dim::constant(q_dim)), heads_shape(s.n_heads, s.head_dim))
          .named(layer + ".q"),
      b.reshape(b.slice(qkv, 1, q_dim, Dim::constant(kv_dim)), heads_shape(s.n_kv_heads, s.head_dim))
          .named(layer + ".k"),
      b.reshape(b.slice(qkv, 1, q_dim + kv_dim, Dim::constant(kv_dim)), heads_shape(s.n_kv_heads, s.head_dim))
          .named(layer + ".v")};
}

QkvHeads qk_norm(graph::Builder& b, const std::string& layer, QkvHeads h, Tensor q_norm, Tensor k_norm,
                 float eps) {
  h.q = b.rms_norm(h.q, q_norm, eps).named(layer + ".q_norm");
  h.k = b.rms_norm(h.k, k_norm, eps).named(layer + ".k_norm");
  return h;
}

Tensor self_attention(graph::Builder& b, const std::string& layer, const AttentionWeights& w,
                      const AttentionShape& s, Tensor x, const Step& step, DType kv_dtype) {
  return attend(b, layer, project_qkv(b, layer, w, s, x), w.wo, s, step, kv_dtype);
}

Tensor attend(graph::Builder& b, const std::string& layer, const QkvHeads& h, Tensor wo,
              const AttentionShape& s, const Step& step, DType kv_dtype) {
  const Dim T = Dim::symbol(Sym::T);
  const Dim Hkv = Dim::constant(s.n_kv_heads), D = Dim::constant(s.head_dim);
  const Shape cache_shape{Dim::symbol(step.full.rows), Hkv, D};

  const bool rotates = s.rope.n_rot > 0;
  const Tensor q = rotates ? b.rope(h.q, step.positions, s.rope, s.rope_freqs).named(layer + ".q_rope") : h.q;
  const Tensor k = rotates ? b.rope(h.k, step.positions, s.rope, s.rope_freqs).named(layer + ".k_rope") : h.k;
  const Tensor v = h.v;

  const Tensor k_cache = b.state(layer + ".cache_k", cache_shape, kv_dtype);  // [C, n_kv_heads, head_dim]
  const Tensor v_cache = b.state(layer + ".cache_v", cache_shape, kv_dtype);
  const Tensor k_all = b.kv_write(k_cache, k, step.full.slots).named(layer + ".cache_k.write");
  const Tensor v_all = b.kv_write(v_cache, v, step.full.slots).named(layer + ".cache_v.write");
  b.update_state(k_cache, k_all);
  b.update_state(v_cache, v_all);

  graph::AttentionAttrs attn{1.0f / std::sqrt(static_cast<float>(s.head_dim)), Dim::symbol(Sym::S)};
  attn.block_size = step.full.block_size;
  const Tensor o = b.attention(q, k_all, v_all, step.positions, step.seq_ids, step.full.block_tables, attn)
                       .named(layer + ".attn");
  const Tensor flat = b.reshape(o, Shape{T, Dim::constant(s.n_heads * s.head_dim)});  // [T, n_heads*head_dim]
  return b.matmul(flat, wo).named(layer + ".attn_out");
}

Tensor swiglu_ffn(graph::Builder& b, const std::string& layer, Tensor gate, Tensor up, Tensor down,
                  Tensor x) {
  const Tensor h = b.swiglu(b.matmul(x, gate), b.matmul(x, up)).named(layer + ".ffn_act");  // [T, ffn_dim]
  return b.matmul(h, down).named(layer + ".ffn_out");
}

Tensor fused_swiglu_ffn(graph::Builder& b, const std::string& layer, Tensor gate_up, Tensor down, int64_t ffn,
                        Tensor x) {
  const Tensor gu = b.matmul(x, gate_up).named(layer + ".ffn_gate_up");  // [T, 2 ffn]
  const Tensor h = b.swiglu(b.slice(gu, 1, 0, Dim::constant(ffn)), b.slice(gu, 1, ffn, Dim::constant(ffn)))
                       .named(layer + ".ffn_act");  // [T, ffn]
  return b.matmul(h, down).named(layer + ".ffn_out");
}

Tensor select_output_rows(graph::Builder& b, const Step& step, Tensor x) {
  return b.gather(x, step.output_rows).named("output_rows");
}

Tensor lm_head(graph::Builder& b, const WeightIndex& w, Tensor x, Tensor token_embd, int64_t vocab_size,
               int64_t dim, float rms_eps) {
  const Tensor output_norm = weight(b, w, "output_norm.weight", {dim});
  const Tensor output = optional_weight(b, w, "output.weight", {vocab_size, dim}).value_or(token_embd);
  return b.matmul(b.rms_norm(x, output_norm, rms_eps).named("output_norm"), output).named("logits");
}

Tensor softmax(graph::Builder& b, Tensor x) {
  const Tensor e = b.exp(x - b.reduce_max(x));
  return e / b.reduce_sum(e);
}

Tensor sigmoid(graph::Builder& b, Tensor x) { return b.recip(b.scalar(1.0f) + b.exp(b.neg(x))); }

Tensor softplus(graph::Builder& b, Tensor x) {
  return b.where(b.less_equal(x, b.scalar(20.0f)), b.log1p(b.exp(x)), x);
}

Tensor l2_norm(graph::Builder& b, Tensor x, float eps) {
  const Tensor norm = b.sqrt(b.reduce_sum(x * x));
  const Tensor e = b.scalar(eps);
  return x * b.recip(b.where(b.less_equal(norm, e), e, norm));
}

Tensor moe_ffn(graph::Builder& b, const std::string& layer, const MoeWeights& w,
               const graph::MoeAttrs& routing, Tensor x) {
  const Tensor probs =
      softmax(b, b.matmul(x, w.router).named(layer + ".ffn_router")).named(layer + ".ffn_probs");
  return b.moe(x, probs, w.gate_exps, w.up_exps, w.down_exps, routing).named(layer + ".ffn_moe");  // [T, dim]
}

}  // namespace glass::models

namespace glass::models {

Tensor project_heads(graph::Builder& b, Tensor x, Tensor w, int64_t n, int64_t head_dim) {
  return b.reshape(b.matmul(x, w), Shape{Dim::symbol(Sym::T), Dim::constant(n), Dim::constant(head_dim)});
}

KvCache write_kv(graph::Builder& b, const std::string& layer, const KvShape& s, Tensor k, Tensor v,
                 const Step& step, DType kv_dtype, int64_t window) {
  const CacheInputs& pool = step.pool_for(window);
  const Shape cache_shape{Dim::symbol(pool.rows), Dim::constant(s.n_kv_heads), Dim::constant(s.head_dim)};
  const Tensor k_cache = b.state(layer + ".cache_k", cache_shape, kv_dtype);  // [C, n_kv_heads, head_dim]
  const Tensor v_cache = b.state(layer + ".cache_v", cache_shape, kv_dtype);
  const KvCache out{b.kv_write(k_cache, k, pool.slots).named(layer + ".cache_k.write"),
                    b.kv_write(v_cache, v, pool.slots).named(layer + ".cache_v.write")};
  b.update_state(k_cache, out.k);
  b.update_state(v_cache, out.v);
  return out;
}

Tensor attend(graph::Builder& b, const std::string& layer, Tensor q, int64_t n_heads, int64_t head_dim,
              const KvCache& kv, const Step& step, graph::AttentionAttrs attrs, Tensor wo,
              std::optional<Tensor> sinks) {
  attrs.kv_len = Dim::symbol(Sym::S);
  const CacheInputs& pool = step.pool_for(attrs.window);
  attrs.block_size = pool.block_size;
  const Tensor o = b.attention(q, kv.k, kv.v, step.positions, step.seq_ids, pool.block_tables, attrs, sinks)
                       .named(layer + ".attn");  // [T, n_heads, head_dim]
  const Tensor flat = b.reshape(o, Shape{Dim::symbol(Sym::T), Dim::constant(n_heads * head_dim)});
  return b.matmul(flat, wo).named(layer + ".attn_out");
}

Tensor geglu_ffn(graph::Builder& b, const std::string& layer, Tensor gate, Tensor up, Tensor down, Tensor x) {
  const Tensor h = b.geglu(b.matmul(x, gate), b.matmul(x, up)).named(layer + ".ffn_act");  // [T, ffn_dim]
  return b.matmul(h, down).named(layer + ".ffn_out");
}

}  // namespace glass::models

namespace glass::models {

void index_states(ModelGraph& m) {
  // A state is the windowed pool's when its kv_write takes the window_slots input.
  // A state is a recurrent pool of slots when a delta_net_state writes it.
  std::set<graph::NodeId> windowed, recurrent;
  for (const graph::Node& n : m.graph.nodes) {
    if (n.op == graph::Op::KvWrite && m.graph.node(n.inputs[2]).name == "window_slots")
      windowed.insert(n.inputs[0]);
    if (n.op == graph::Op::DeltaNetState) recurrent.insert(n.inputs[0]);
  }
  m.state_kinds.clear();
  m.state_windowed.clear();
  m.state_recurrent.clear();
  for (graph::NodeId id : m.graph.leaves(graph::Op::State)) {
    m.state_kinds.push_back(state_kind(m.graph.node(id).name));
    m.state_windowed.push_back(windowed.contains(id));
    m.state_recurrent.push_back(recurrent.contains(id));
  }
}

ModelGraph finish_model_graph(graph::Graph g, int64_t vocab_size, int64_t n_ctx_train, int64_t n_layers,
                              const BuildOptions& opt, std::string summary, int64_t window) {
  ModelGraph m;
  m.graph = std::move(g);
  m.vocab_size = vocab_size;
  m.n_ctx_train = n_ctx_train;
  m.n_ctx = choose_context(opt, n_ctx_train);
  m.block_size = std::max<int64_t>(1, opt.kv_block_size);
  m.n_layers = n_layers;
  index_states(m);
  if (std::find(m.state_windowed.begin(), m.state_windowed.end(), true) != m.state_windowed.end())
    m.window = window;
  m.summary = std::move(summary);
  return m;
}

}  // namespace glass::models
