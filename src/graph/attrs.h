#pragma once
// Typed attributes of graph nodes: one struct per op family, held in a variant. Shapes and dtypes
// are not attributes: every node carries its inferred output shape and dtype.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "graph/shape.h"

namespace glass::graph {

struct NoAttrs {
  bool operator==(const NoAttrs&) const = default;
};

// Input, Parameter and State: the name a caller binds data to (GGUF tensor names for parameters).
struct LeafAttrs {
  std::string name;
  bool operator==(const LeafAttrs&) const = default;
};

// A small literal tensor (scalars, frequency tables), row-major.
struct ConstantAttrs {
  std::vector<float> values;
  bool operator==(const ConstantAttrs&) const = default;
};

struct PermuteAttrs {
  std::vector<int> perm;  // output axis i is input axis perm[i]
  bool operator==(const PermuteAttrs&) const = default;
};

struct SliceAttrs {
  int axis = 0;
  int64_t start = 0;
  Dim length;
  bool operator==(const SliceAttrs&) const = default;
};

struct ConcatAttrs {
  int axis = 0;
  bool operator==(const ConcatAttrs&) const = default;
};

struct RmsNormAttrs {
  float eps = 1e-5f;
  bool operator==(const RmsNormAttrs&) const = default;
};

enum class RopeMode : uint8_t { Normal, NeoX };  // Normal rotates (x[2i], x[2i+1]); NeoX (x[i], x[i+n/2])

struct RopeAttrs {
  int n_rot = 0;  // leading dimensions of each head that rotate; the rest pass through
  RopeMode mode = RopeMode::Normal;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;  // linear position scaling: 1 / factor
  bool operator==(const RopeAttrs&) const = default;
};

// Attention over a paged KV cache: each query reads its own sequence's keys through that
// sequence's row of the block table (graph/ops/attention.cpp).
struct AttentionAttrs {
  float scale = 1.0f;  // applied to q.k, usually 1/sqrt(head_dim)
  Dim kv_len;          // the most keys any query of the step reads (its sequence's length)
  // Sliding window (local attention): > 0 hides keys at positions <= q_pos - window, so a query
  // sees the `window` latest positions, its own included. 0: no window.
  int64_t window = 0;
  // Logit soft-capping (Gemma 2): > 0 replaces scale * q.k by softcap(scale * q.k, softcap) before
  // the mask and softmax (the formula of the softcap op). 0: none.
  float softcap = 0.0f;
  int64_t block_size = 1;  // cache rows per block of the block table
  bool operator==(const AttentionAttrs&) const = default;
};

// gather_blocks: each token's sequence's cache rows at logical indices [0, len), read through the
// block table (block_size rows per block).
struct BlockGatherAttrs {
  int64_t block_size = 1;
  Dim len;
  bool operator==(const BlockGatherAttrs&) const = default;
};

// Mixture-of-experts routing: each token uses the n_used experts of highest router probability,
// weighted by those probabilities (renormalised to sum 1 when `normalize`). The experts' gated
// activation is SwiGLU (Mixtral, Qwen) or GeGLU with tanh-GELU (Gemma 4); `fused_gate_up`: the gate
// input holds every expert's [gate | up] rows ([n_expert, 2 ffn, dim], the up input is the same
// tensor), as Gemma 4's converter writes ffn_gate_up_exps.
// SwiGluOai (gpt-oss): min(g, 7) * sigmoid(1.702 min(g, 7)) * (clamp(u, -7, 7) + 1).
enum class MoeActivation : uint8_t { SwiGlu, GeGlu, SwiGluOai };
struct MoeAttrs {
  int n_used = 1;
  bool normalize = true;
  MoeActivation activation = MoeActivation::SwiGlu;
  bool fused_gate_up = false;
  bool operator==(const MoeAttrs&) const = default;
};

// softcap(x) = cap * tanh(x / cap): a smooth clamp of logits to (-cap, cap) (Gemma 2).
struct SoftcapAttrs {
  float cap = 1.0f;
  bool operator==(const SoftcapAttrs&) const = default;
};

// The gated delta rule (graph/ops/delta_net.cpp): which key head a value head reads. Tiled (GGUF:
// value head h reads key head h % Hk, as llama.cpp's converter reorders them) or grouped (HF
// checkpoints: the Hv / Hk value heads of key head g are consecutive, h reads h / (Hv / Hk)).
struct DeltaNetAttrs {
  bool grouped_heads = false;
  bool operator==(const DeltaNetAttrs&) const = default;
};

using Attrs =
    std::variant<NoAttrs, LeafAttrs, ConstantAttrs, PermuteAttrs, SliceAttrs, ConcatAttrs, RmsNormAttrs,
                 RopeAttrs, AttentionAttrs, MoeAttrs, SoftcapAttrs, BlockGatherAttrs, DeltaNetAttrs>;

}  // namespace glass::graph
