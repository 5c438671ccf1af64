#include "graph/serialize.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "graph/builder.h"

namespace glass::graph {
namespace {

using nlohmann::json;

json dim_json(const Dim& d) { return d.is_symbolic() ? json(std::string(sym_name(d.sym))) : json(d.value); }

json shape_json(const Shape& s) {
  json a = json::array();
  for (const Dim& d : s) a.push_back(dim_json(d));
  return a;
}

struct AttrWriter {
  json operator()(const NoAttrs&) const { return json::object(); }
  json operator()(const LeafAttrs& l) const { return {{"name", l.name}}; }
  json operator()(const ConstantAttrs& c) const { return {{"values", c.values}}; }
  json operator()(const PermuteAttrs& p) const { return {{"perm", p.perm}}; }
  json operator()(const SliceAttrs& s) const {
    return {{"axis", s.axis}, {"start", s.start}, {"length", dim_json(s.length)}};
  }
  json operator()(const ConcatAttrs& c) const { return {{"axis", c.axis}}; }
  json operator()(const RmsNormAttrs& r) const { return {{"eps", r.eps}}; }
  json operator()(const RopeAttrs& r) const {
    return {{"n_rot", r.n_rot},
            {"mode", r.mode == RopeMode::Normal ? "normal" : "neox"},
            {"freq_base", r.freq_base},
            {"freq_scale", r.freq_scale}};
  }
  json operator()(const AttentionAttrs& a) const {
    json j = {{"scale", a.scale}, {"kv_len", dim_json(a.kv_len)}};
    if (a.window != 0) j["window"] = a.window;  // written only when set: older graphs keep their hash
    if (a.softcap != 0.0f) j["softcap"] = a.softcap;
    j["block_size"] = a.block_size;
    return j;
  }
  json operator()(const BlockGatherAttrs& a) const {
    return {{"block_size", a.block_size}, {"len", dim_json(a.len)}};
  }
  json operator()(const MoeAttrs& m) const {
    return {{"n_used", m.n_used},
            {"normalize", m.normalize},
            {"activation", m.activation == MoeActivation::GeGlu       ? "geglu"
                           : m.activation == MoeActivation::SwiGluOai ? "swiglu_oai"
                                                                      : "swiglu"},
            {"fused_gate_up", m.fused_gate_up}};
  }
  json operator()(const SoftcapAttrs& s) const { return {{"cap", s.cap}}; }
  json operator()(const DeltaNetAttrs& d) const { return {{"grouped_heads", d.grouped_heads}}; }
};

Error bad(const std::string& what) { return make_error(ErrorCode::InvalidFile, "graph json: " + what); }

Result<Dim> read_dim(const json& j) {
  if (j.is_number_integer()) return Dim::constant(j.get<int64_t>());
  if (j.is_string()) {
    if (auto s = sym_from_name(j.get<std::string>())) return Dim::symbol(*s);
    return bad("unknown symbol '" + j.get<std::string>() + "'");
  }
  return bad("a dimension must be an integer or a symbol name");
}

Result<Shape> read_shape(const json& j) {
  if (!j.is_array() || j.size() > static_cast<size_t>(kMaxRank))
    return bad("shape must be an array of rank <= 4");
  Shape s;
  for (const json& d : j) {
    auto dim = read_dim(d);
    if (!dim) return dim.error();
    s.push_back(*dim);
  }
  return s;
}

Result<Attrs> read_attrs(Op op, const json& j) {
  switch (op) {
    case Op::Input:
    case Op::Parameter:
    case Op::State:
      return Attrs{LeafAttrs{j.at("name").get<std::string>()}};
    case Op::Constant:
      return Attrs{ConstantAttrs{j.at("values").get<std::vector<float>>()}};
    case Op::Permute:
      return Attrs{PermuteAttrs{j.at("perm").get<std::vector<int>>()}};
    case Op::Slice: {
      auto len = read_dim(j.at("length"));
      if (!len) return len.error();
      return Attrs{SliceAttrs{j.at("axis").get<int>(), j.at("start").get<int64_t>(), *len}};
    }
    case Op::Concat:
      return Attrs{ConcatAttrs{j.at("axis").get<int>()}};
    case Op::RmsNorm:
      return Attrs{RmsNormAttrs{j.at("eps").get<float>()}};
    case Op::Rope: {
      const std::string mode = j.at("mode").get<std::string>();
      if (mode != "normal" && mode != "neox") return bad("unknown rope mode '" + mode + "'");
      return Attrs{RopeAttrs{j.at("n_rot").get<int>(), mode == "normal" ? RopeMode::Normal : RopeMode::NeoX,
                             j.at("freq_base").get<float>(), j.at("freq_scale").get<float>()}};
    }
    case Op::Attention: {
      auto len = read_dim(j.at("kv_len"));
      if (!len) return len.error();
      return Attrs{AttentionAttrs{j.at("scale").get<float>(), *len, j.value("window", int64_t{0}),
                                  j.value("softcap", 0.0f), j.at("block_size").get<int64_t>()}};
    }
    case Op::GatherBlocks:
    case Op::ShortConv: {
      auto len = read_dim(j.at("len"));
      if (!len) return len.error();
      return Attrs{BlockGatherAttrs{j.at("block_size").get<int64_t>(), *len}};
    }
    case Op::Moe: {
      const std::string act = j.value("activation", std::string("swiglu"));
      return Attrs{MoeAttrs{j.at("n_used").get<int>(), j.at("normalize").get<bool>(),
                            act == "geglu"        ? MoeActivation::GeGlu
                            : act == "swiglu_oai" ? MoeActivation::SwiGluOai
                                                  : MoeActivation::SwiGlu,
                            j.value("fused_gate_up", false)}};
    }
    case Op::Softcap:
      return Attrs{SoftcapAttrs{j.at("cap").get<float>()}};
    case Op::DeltaNet:
    case Op::DeltaNetState:
      return Attrs{DeltaNetAttrs{j.value("grouped_heads", false)}};
    default:
      return Attrs{NoAttrs{}};
  }
}

Result<Graph> parse_graph(const json& doc) {
  if (!doc.is_object() || doc.value("format", "") != "glass.graph")
    return bad("not a glass graph (format field)");
  const json& ver = doc.at("version");
  if (!ver.is_number_integer() || ver.get<int64_t>() != kGraphFormatVersion)
    return bad(fmt::format("unsupported graph format version {} (this build reads version {})", ver.dump(),
                           kGraphFormatVersion));
  Builder b;
  for (const json& jn : doc.at("nodes")) {
    const std::string op_str = jn.at("op").get<std::string>();
    auto op = op_from_name(op_str);
    if (!op) return bad("unknown op '" + op_str + "'");
    auto shape = read_shape(jn.at("shape"));
    if (!shape) return shape.error();
    auto dtype = dtype_from_name(jn.at("dtype").get<std::string>());
    if (!dtype) return bad("unknown dtype '" + jn.at("dtype").get<std::string>() + "'");
    auto attrs = read_attrs(*op, jn.value("attrs", json::object()));
    if (!attrs) return attrs.error();
    const Tensor t = b.add_node(*op, jn.at("inputs").get<std::vector<NodeId>>(), std::move(*attrs), *shape,
                                *dtype, jn.value("name", ""));
    if (!b.ok()) break;
    if (!(b.node(t.id).shape == *shape) || b.node(t.id).dtype != *dtype)
      return bad(fmt::format("node %{}: stored type {}{} differs from inferred {}{}", t.id,
                             dtype_name(*dtype), shape_to_string(*shape), dtype_name(b.node(t.id).dtype),
                             shape_to_string(b.node(t.id).shape)));
  }
  auto g = b.finish();
  if (!g) return g.error();
  const auto n = static_cast<NodeId>(g->nodes.size());
  auto valid = [n](NodeId id) { return id >= 0 && id < n; };
  for (const json& o : doc.at("outputs")) {
    const NodeId id = o.at("node").get<NodeId>();
    if (!valid(id)) return bad("output refers to a missing node");
    g->outputs.push_back(Output{o.at("name").get<std::string>(), id});
  }
  for (const json& u : doc.at("state_updates")) {
    StateUpdate su{u.at("state").get<NodeId>(), u.at("value").get<NodeId>()};
    if (!valid(su.state) || !valid(su.value) || g->node(su.state).op != Op::State)
      return bad("state update refers to a missing node or a non-state");
    g->state_updates.push_back(su);
  }
  return std::move(*g);
}

}  // namespace

std::string to_json(const Graph& g, int indent) {
  json nodes = json::array();
  for (const Node& n : g.nodes) {
    json jn = {{"op", std::string(op_name(n.op))},
               {"inputs", n.inputs},
               {"shape", shape_json(n.shape)},
               {"dtype", std::string(dtype_name(n.dtype))}};
    if (!n.name.empty()) jn["name"] = n.name;
    json attrs = std::visit(AttrWriter{}, n.attrs);
    if (!attrs.empty()) jn["attrs"] = std::move(attrs);
    nodes.push_back(std::move(jn));
  }
  json outputs = json::array();
  for (const Output& o : g.outputs) outputs.push_back({{"name", o.name}, {"node", o.node}});
  json updates = json::array();
  for (const StateUpdate& u : g.state_updates) updates.push_back({{"state", u.state}, {"value", u.value}});
  const json doc = {{"format", "glass.graph"},
                    {"version", kGraphFormatVersion},
                    {"nodes", std::move(nodes)},
                    {"outputs", std::move(outputs)},
                    {"state_updates", std::move(updates)}};
  return doc.dump(indent);
}

Result<Graph> from_json(const std::string& text) {
  try {
    return parse_graph(json::parse(text));
  } catch (const json::exception& e) {
    return bad(e.what());
  }
}

}  // namespace glass::graph
