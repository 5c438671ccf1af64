#pragma once
// Validation and shape/dtype inference, one function per op family (graph/ops/<family>.cpp), and
// the reference decompositions of composite ops into primitives.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "glass/result.h"
#include "graph/builder.h"
#include "graph/graph.h"

namespace glass::graph {

struct TypeInfo {
  Shape shape;
  DType dtype = DType::F32;
};

// What inference sees of a node: its op, attributes, declared shape/dtype (leaves, reshape, cast)
// and its inputs. `label` names the node in error messages.
struct InferArgs {
  const Node& node;
  std::vector<const Node*> inputs;
  std::string label;
};

Result<TypeInfo> infer(const InferArgs& a);

Error node_error(const InferArgs& a, const std::string& what);
bool dims_equal(const Dim& x, const Dim& y);

Result<TypeInfo> infer_leaf(const InferArgs& a);
Result<TypeInfo> infer_elementwise(const InferArgs& a);
Result<TypeInfo> infer_reduce(const InferArgs& a);
Result<TypeInfo> infer_matmul(const InferArgs& a);
Result<TypeInfo> infer_layout(const InferArgs& a);
Result<TypeInfo> infer_row_write(const InferArgs& a, bool allow_convert);
Result<TypeInfo> infer_norm(const InferArgs& a);
Result<TypeInfo> infer_rope(const InferArgs& a);
Result<TypeInfo> infer_attention(const InferArgs& a);
Result<TypeInfo> infer_activation(const InferArgs& a);
Result<TypeInfo> infer_embedding(const InferArgs& a);
Result<TypeInfo> infer_moe(const InferArgs& a);
Result<TypeInfo> infer_fused_matmul(const InferArgs& a);
Result<TypeInfo> infer_short_conv(const InferArgs& a);
Result<TypeInfo> infer_delta_net(const InferArgs& a);

// Composite op -> primitives. `in` are the node's inputs already present in `b`. Returns the
// tensor standing for the node's output.
// The per-pair inverse frequencies of rope, shared by its decomposition and kernels.
std::vector<float> rope_inv_freq(const RopeAttrs& r);

Tensor decompose(Builder& b, const Node& n, const std::vector<Tensor>& in, const Bindings& max = {});
Tensor decompose_rms_norm(Builder& b, const Node& n, const std::vector<Tensor>& in);
Tensor decompose_rope(Builder& b, const Node& n, const std::vector<Tensor>& in);
Tensor decompose_attention(Builder& b, const Node& n, const std::vector<Tensor>& in, const Bindings& max);
Tensor decompose_kv_write(Builder& b, const Node& n, const std::vector<Tensor>& in);
Tensor decompose_activation(Builder& b, const Node& n, const std::vector<Tensor>& in);
// cap * tanh(x / cap) from primitives: the softcap op's decomposition, also used by attention's.
Tensor decompose_softcap(Builder& b, Tensor x, float cap);
Tensor decompose_embedding(Builder& b, const Node& n, const std::vector<Tensor>& in);
Tensor decompose_moe(Builder& b, const Node& n, const std::vector<Tensor>& in);
Tensor decompose_fused_matmul(Builder& b, const Node& n, const std::vector<Tensor>& in);
// For decompositions that read a sequence through a block table: the positions 0 .. S-1 as an f32
// row [S], as many as a table row of `table_width` blocks holds, or S's bound in `max` where the
// width is the session's. Without a bound it records an error naming the node (what: "attention")
// and returns nothing.
std::optional<Tensor> sequence_positions(Builder& b, const Node& n, std::string_view what,
                                         const Dim& table_width, int64_t block_size, const Dim& S,
                                         const Bindings& max);
Tensor decompose_short_conv(Builder& b, const Node& n, const std::vector<Tensor>& in, const Bindings& max);
// silu(g) and gelu(g) (tanh form) from primitives: the activations' decompositions, shared with the
// fused matmuls'.
Tensor decompose_silu(Builder& b, Tensor g);
Tensor decompose_gelu(Builder& b, Tensor g);

}  // namespace glass::graph
