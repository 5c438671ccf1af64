#include "graph/printer.h"

#include <fmt/format.h>

namespace glass::graph {
namespace {

std::string type_string(const Node& n) {
  return fmt::format("{}{}", dtype_name(n.dtype), shape_to_string(n.shape));
}

struct AttrPrinter {
  std::string operator()(const NoAttrs&) const { return ""; }
  std::string operator()(const LeafAttrs&) const { return ""; }
  std::string operator()(const ConstantAttrs& c) const {
    std::string s = "{values=[";
    for (size_t i = 0; i < c.values.size() && i < 4; ++i)
      s += fmt::format("{}{:g}", i ? ", " : "", c.values[i]);
    return s + (c.values.size() > 4 ? ", ...]}" : "]}");
  }
  std::string operator()(const PermuteAttrs& p) const {
    return fmt::format("{{perm=[{}]}}", fmt::join(p.perm, ", "));
  }
  std::string operator()(const SliceAttrs& s) const {
    return fmt::format("{{axis={}, start={}, length={}}}", s.axis, s.start, dim_to_string(s.length));
  }
  std::string operator()(const ConcatAttrs& c) const { return fmt::format("{{axis={}}}", c.axis); }
  std::string operator()(const RmsNormAttrs& r) const { return fmt::format("{{eps={:g}}}", r.eps); }
  std::string operator()(const RopeAttrs& r) const {
    return fmt::format("{{n_rot={}, mode={}, freq_base={:g}, freq_scale={:g}}}", r.n_rot,
                       r.mode == RopeMode::Normal ? "normal" : "neox", r.freq_base, r.freq_scale);
  }
  std::string operator()(const AttentionAttrs& a) const {
    std::string extra;
    if (a.window != 0) extra += fmt::format(", window={}", a.window);
    if (a.softcap != 0.0f) extra += fmt::format(", softcap={:g}", a.softcap);
    return fmt::format("{{scale={:g}, kv_len={}{}, block_size={}}}", a.scale, dim_to_string(a.kv_len), extra,
                       a.block_size);
  }
  std::string operator()(const BlockGatherAttrs& a) const {
    return fmt::format("{{block_size={}, len={}}}", a.block_size, dim_to_string(a.len));
  }
  std::string operator()(const MoeAttrs& m) const {
    return fmt::format("{{n_used={}, normalize={}{}{}}}", m.n_used, m.normalize,
                       m.activation == MoeActivation::GeGlu       ? ", geglu"
                       : m.activation == MoeActivation::SwiGluOai ? ", swiglu_oai"
                                                                  : "",
                       m.fused_gate_up ? ", fused" : "");
  }
  std::string operator()(const SoftcapAttrs& s) const { return fmt::format("{{cap={:g}}}", s.cap); }
  std::string operator()(const DeltaNetAttrs& d) const {
    return d.grouped_heads ? "{heads=grouped}" : "{heads=tiled}";
  }
};

}  // namespace

std::string attrs_to_string(const Attrs& attrs) { return std::visit(AttrPrinter{}, attrs); }

std::string to_text(const Graph& g) {
  std::string out = fmt::format("graph: {} nodes, hash {:016x}\n", g.nodes.size(), g.hash());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    std::string line = fmt::format("%{} = {}", i, op_name(n.op));
    if (is_leaf(n.op) && n.op != Op::Constant) {
      line += fmt::format(" \"{}\"", n.name);
    } else {
      std::vector<std::string> ins;
      for (NodeId in : n.inputs) ins.push_back(fmt::format("%{}", in));
      line += fmt::format("({})", fmt::join(ins, ", "));
    }
    const std::string attrs = attrs_to_string(n.attrs);
    if (!attrs.empty()) line += " " + attrs;
    line += " : " + type_string(n);
    if (!is_leaf(n.op) && !n.name.empty()) line += "  # " + n.name;
    out += line + "\n";
  }
  for (const Output& o : g.outputs) out += fmt::format("output {} = %{}\n", o.name, o.node);
  for (const StateUpdate& u : g.state_updates)
    out += fmt::format("state {} <- %{}\n", g.node(u.state).name, u.value);
  return out;
}

std::string to_dot(const Graph& g) {
  std::string out = "digraph glass {\n  rankdir=TB;\n  node [shape=box, fontname=monospace, fontsize=10];\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const char* style = n.op == Op::Parameter ? ", style=filled, fillcolor=\"#e8f0fe\""
                        : n.op == Op::State   ? ", style=filled, fillcolor=\"#fde7e7\""
                        : n.op == Op::Input   ? ", style=filled, fillcolor=\"#e6f4ea\""
                                              : "";
    std::string label = fmt::format("%{} {}", i, op_name(n.op));
    if (!n.name.empty()) label += "\\n" + n.name;
    const std::string attrs = attrs_to_string(n.attrs);
    if (!attrs.empty()) label += "\\n" + attrs;
    label += "\\n" + type_string(n);
    out += fmt::format("  n{} [label=\"{}\"{}];\n", i, label, style);
    for (NodeId in : n.inputs) out += fmt::format("  n{} -> n{};\n", in, i);
  }
  for (const Output& o : g.outputs)
    out +=
        fmt::format("  out_{0} [label=\"output {0}\", shape=ellipse];\n  n{1} -> out_{0};\n", o.name, o.node);
  for (const StateUpdate& u : g.state_updates)
    out += fmt::format("  n{} -> n{} [style=dashed, label=\"update\"];\n", u.value, u.state);
  return out + "}\n";
}

}  // namespace glass::graph
