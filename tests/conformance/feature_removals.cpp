#include "feature_removals.h"

#include <algorithm>
#include <map>

#include "formats/gguf.h"
#include "graph/rewrite.h"
#include "models/gemma3n.h"
#include "models/llama.h"

namespace glass::conformance {
namespace {

using graph::Builder;
using graph::Node;
using graph::Op;
using graph::Tensor;

GraphRewrite on_nodes(std::function<bool(const Node&)> match, graph::NodeEmitter emit) {
  return [match, emit](const graph::Graph& g) {
    return graph::rewrite_nodes(g, [&](Builder& b, const Node& n, const std::vector<Tensor>& in) {
      return match(n) ? emit(b, n, in) : graph::copy_node(b, n, in);
    });
  };
}

Tensor with_attrs(Builder& b, const Node& n, const std::vector<Tensor>& in, graph::Attrs attrs) {
  Node copy = n;
  copy.attrs = std::move(attrs);
  return graph::copy_node(b, copy, in);
}

GraphRewrite on_attention(std::function<void(graph::AttentionAttrs&)> change) {
  return on_nodes([](const Node& n) { return n.op == Op::Attention; },
                  [change](Builder& b, const Node& n, const std::vector<Tensor>& in) {
                    auto a = std::get<graph::AttentionAttrs>(n.attrs);
                    change(a);
                    return with_attrs(b, n, in, a);
                  });
}

// The node is replaced by its input `i` (same shape): the feature it computed is skipped.
graph::NodeEmitter pass_input(size_t i) {
  return [i](Builder&, const Node&, const std::vector<Tensor>& in) { return in.at(i); };
}

// Nodes named "<layer><target>" are replaced by the node named "<layer><source>" emitted earlier
// (same shape): the computation between them is skipped.
GraphRewrite skip_to(std::string target, std::string source) {
  return [target, source](const graph::Graph& g) {
    std::map<std::string, Tensor> emitted;
    return graph::rewrite_nodes(g, [&](Builder& b, const Node& n, const std::vector<Tensor>& in) {
      Tensor t = graph::copy_node(b, n, in);
      if (n.name.ends_with(target)) {
        const auto it = emitted.find(n.name.substr(0, n.name.size() - target.size()) + source);
        if (it != emitted.end()) t = it->second;
      }
      if (!n.name.empty()) emitted[n.name] = t;
      return t;
    });
  };
}

// The graph of `model_path` built again by `build` (a family's builder with one feature changed),
// for the 48-token references.
GraphRewrite rebuilt(const std::string& model_path,
                     std::function<Result<graph::Graph>(const formats::GgufFile&, const models::WeightIndex&,
                                                        const models::BuildOptions&)>
                         build) {
  return [model_path, build](const graph::Graph&) -> Result<graph::Graph> {
    auto file = formats::GgufFile::open(model_path);
    if (!file) return file.error();
    models::BuildOptions opt;
    opt.min_ctx = 48;
    return build(*file, models::weight_index(*file), opt);
  };
}

}  // namespace

Mutation sliding_window_removed() {
  return {"sliding window removed", on_attention([](graph::AttentionAttrs& a) { a.window = 0; })};
}

Mutation attention_softcap_removed() {
  return {"attention softcap removed", on_attention([](graph::AttentionAttrs& a) { a.softcap = 0.0f; })};
}

Mutation final_softcap_removed() {
  return {"final softcap removed",
          on_nodes([](const Node& n) { return n.op == Op::Softcap; }, pass_input(0))};
}

Mutation rope_base_per_kind_removed() {
  return {"RoPE base per layer kind removed", [](const graph::Graph& g) {
            float largest = 0.0f;
            for (const Node& n : g.nodes)
              if (n.op == Op::Rope)
                largest = std::max(largest, std::get<graph::RopeAttrs>(n.attrs).freq_base);
            return on_nodes([](const Node& n) { return n.op == Op::Rope; },
                            [largest](Builder& b, const Node& n, const std::vector<Tensor>& in) {
                              auto r = std::get<graph::RopeAttrs>(n.attrs);
                              r.freq_base = largest;
                              return with_attrs(b, n, in, r);
                            })(g);
          }};
}

Mutation altup_correction_removed() {
  // blk.N.altup_correct = coefs * innovation + predictions: keep the predictions.
  return {"AltUp correction removed",
          on_nodes([](const Node& n) { return n.op == Op::Add && n.name.ends_with(".altup_correct"); },
                   pass_input(1))};
}

Mutation laurel_removed() {
  // blk.N.laurel = x + rms_norm(R L x): keep x.
  return {
      "LAuReL removed",
      on_nodes([](const Node& n) { return n.op == Op::Add && n.name.ends_with(".laurel"); }, pass_input(0))};
}

Mutation activation_sparsity_removed() {
  return {"activation sparsity removed", skip_to(".ffn_gate_sparse", ".ffn_gate")};
}

Mutation per_layer_inputs_removed() {
  return {"per-layer inputs removed", skip_to(".streams", ".altup_correct")};
}

Mutation kv_sharing_removed(const std::string& model_path) {
  return {"KV sharing removed",
          rebuilt(model_path,
                  [](const formats::GgufFile& file, const models::WeightIndex& w,
                     const models::BuildOptions& opt) -> Result<graph::Graph> {
                    auto c = models::gemma3n_config_from_gguf(file, w);
                    if (!c) return c.error();
                    c->n_kv_layers = c->shape.n_layers;  // every layer computes and caches its own K/V
                    return models::build_gemma3n(*c, w, opt);
                  })};
}

Mutation nope_removed(const std::string& model_path) {
  return {"NoPE layers removed", rebuilt(model_path,
                                         [](const formats::GgufFile& file, const models::WeightIndex& w,
                                            const models::BuildOptions& opt) -> Result<graph::Graph> {
                                           auto c = models::llama_config_from_gguf(file, w, "smollm3");
                                           if (!c) return c.error();
                                           return models::build_llama(
                                               *c, w, opt,
                                               models::LlamaVariant{.arch = "smollm3", .no_rope_period = 0});
                                         })};
}

Mutation conv_history_removed() {
  // short_conv(rows of x, w): becomes the step's x times its own tap, w[:, L-1] (LFM2's B*x, Qwen 3.5's
  // qkv).
  return {"short-conv history removed", [](const graph::Graph& g) {
            std::map<std::string, Tensor> emitted;
            return graph::rewrite_nodes(g, [&](Builder& b, const Node& n, const std::vector<Tensor>& in) {
              Tensor t = graph::copy_node(b, n, in);
              if (n.op == Op::ShortConv) {  // in[0]: kv_write(state, this step's values, slots)
                const Tensor values{&b, b.node(in[0].id).inputs[1]};
                const graph::Shape& ws = in[1].shape();
                t = values * b.reshape(b.slice(in[1], 1, ws[1].value - 1, graph::Dim::constant(1)),
                                       graph::Shape{ws[0]});
              }
              if (!n.name.empty()) emitted[n.name] = t;
              return t;
            });
          }};
}

Mutation delta_decay_removed() {
  return {"DeltaNet decay removed", on_nodes([](const Node& n) { return n.name.ends_with(".g"); },
                                             [](Builder& b, const Node&, const std::vector<Tensor>& in) {
                                               return in[0] * b.scalar(0.0f);
                                             })};
}

Mutation attention_output_gate_removed() {
  return {"attention output gate removed",
          on_nodes([](const Node& n) { return n.op == Op::Mul && n.name.ends_with(".attn_gated"); },
                   pass_input(0))};
}

Mutation proportional_rope_removed() {
  return {"RoPE frequency divisors removed",
          on_nodes([](const Node& n) { return n.op == Op::Rope && n.inputs.size() == 3; },
                   [](Builder& b, const Node& n, const std::vector<Tensor>& in) {
                     return b.rope(in[0], in[1], std::get<graph::RopeAttrs>(n.attrs));
                   })};
}

Mutation v_norm_removed() {
  return {"V norm removed",
          on_nodes([](const Node& n) { return n.op == Op::RmsNorm && n.name.ends_with(".v_norm"); },
                   pass_input(0))};
}

Mutation gemma4_per_layer_inputs_removed() {
  return {"per-layer inputs removed",
          on_nodes([](const Node& n) { return n.op == Op::Add && n.name.ends_with(".per_layer_residual"); },
                   pass_input(0))};
}

Mutation layer_output_scale_removed() {
  return {"layer output scale removed",
          on_nodes([](const Node& n) { return n.op == Op::Mul && n.name.ends_with(".out"); }, pass_input(0))};
}

Mutation experts_removed() {
  return {"experts removed",
          on_nodes(
              [](const Node& n) { return n.op == Op::RmsNorm && n.name.ends_with(".post_ffw_norm_2"); },
              [](Builder& b, const Node&, const std::vector<Tensor>& in) { return in[0] * b.scalar(0.0f); })};
}

Mutation expert_scale_removed() {
  return {"per-expert scale removed",
          on_nodes([](const Node& n) { return n.op == Op::Moe && n.inputs.size() == 6; },
                   [](Builder& b, const Node& n, const std::vector<Tensor>& in) {
                     return b.moe(in[0], in[1], in[2], in[3], in[4], std::get<graph::MoeAttrs>(n.attrs));
                   })};
}

Mutation expert_activation_swapped() {
  return {"experts' activation as plain SwiGLU",
          on_nodes([](const Node& n) { return n.op == Op::Moe; },
                   [](Builder& b, const Node& n, const std::vector<Tensor>& in) {
                     auto m = std::get<graph::MoeAttrs>(n.attrs);
                     m.activation = graph::MoeActivation::SwiGlu;
                     return with_attrs(b, n, in, m);
                   })};
}

Mutation attention_sinks_removed() {
  return {"attention sinks removed",
          on_nodes([](const Node& n) { return n.op == Op::Attention && n.inputs.size() == 7; },
                   [](Builder& b, const Node& n, const std::vector<Tensor>& in) {
                     return b.attention(in[0], in[1], in[2], in[3], in[4], in[5],
                                        std::get<graph::AttentionAttrs>(n.attrs));
                   })};
}

}  // namespace glass::conformance
