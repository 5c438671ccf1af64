// Loading rules of the qwen2 / qwen3 / phi3 / qwen3moe families on tiny metadata-only files with
// hand-made tensor indexes: hyper-parameters come from metadata, a missing or inconsistent key or
// tensor is an error naming it, unsupported variants fail at load, and the graphs hold the nodes
// their papers describe. (Every logit against llama.cpp: tests/conformance, synthetic-arch.)
#include <gtest/gtest.h>

#include <map>

#include "formats/gguf.h"
#include "models/architecture.h"
#include "support/gguf_writer.h"

namespace glass::models {
namespace {

using test::GgufWriter;
using Kvs = std::map<std::string, GgufWriter::Value>;

constexpr int64_t kDim = 8, kHeads = 2, kKv = 1, kHeadDim = 8, kFfn = 16, kVocab = 10, kExperts = 4,
                  kExpertFfn = 4;

Kvs base_kvs(const std::string& arch) {
  Kvs kv;
  kv["general.architecture"] = GgufWriter::string(arch);
  kv[arch + ".block_count"] = GgufWriter::u32(1);
  kv[arch + ".context_length"] = GgufWriter::u32(64);
  kv[arch + ".embedding_length"] = GgufWriter::u32(kDim);
  kv[arch + ".feed_forward_length"] = GgufWriter::u32(kFfn);
  kv[arch + ".attention.head_count"] = GgufWriter::u32(kHeads);
  kv[arch + ".attention.head_count_kv"] = GgufWriter::u32(kKv);
  kv[arch + ".attention.key_length"] = GgufWriter::u32(kHeadDim);
  kv[arch + ".attention.layer_norm_rms_epsilon"] = GgufWriter::f32(1e-6f);
  kv[arch + ".rope.freq_base"] = GgufWriter::f32(1e6f);
  if (arch == "qwen3moe") {
    kv[arch + ".expert_count"] = GgufWriter::u32(kExperts);
    kv[arch + ".expert_used_count"] = GgufWriter::u32(2);
    kv[arch + ".expert_feed_forward_length"] = GgufWriter::u32(kExpertFfn);
  }
  if (arch == "phi3") kv[arch + ".rope.dimension_count"] = GgufWriter::u32(6);
  return kv;
}

WeightIndex base_weights(const std::string& arch) {
  const int64_t q = kHeads * kHeadDim, kv = kKv * kHeadDim;
  WeightIndex w;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    w[name] = WeightInfo{std::move(shape)};
  };
  add("token_embd.weight", {kVocab, kDim});
  add("output_norm.weight", {kDim});
  add("blk.0.attn_norm.weight", {kDim});
  add("blk.0.ffn_norm.weight", {kDim});
  add("blk.0.attn_output.weight", {kDim, q});
  if (arch == "phi3") {
    add("blk.0.attn_qkv.weight", {q + 2 * kv, kDim});
    add("blk.0.ffn_up.weight", {2 * kFfn, kDim});
    add("blk.0.ffn_down.weight", {kDim, kFfn});
    add("output.weight", {kVocab, kDim});
    return w;
  }
  add("blk.0.attn_q.weight", {q, kDim});
  add("blk.0.attn_k.weight", {kv, kDim});
  add("blk.0.attn_v.weight", {kv, kDim});
  if (arch == "qwen2") {
    add("blk.0.attn_q.bias", {q});
    add("blk.0.attn_k.bias", {kv});
    add("blk.0.attn_v.bias", {kv});
  } else {
    add("blk.0.attn_q_norm.weight", {kHeadDim});
    add("blk.0.attn_k_norm.weight", {kHeadDim});
  }
  if (arch == "qwen3moe") {
    add("blk.0.ffn_gate_inp.weight", {kExperts, kDim});
    add("blk.0.ffn_gate_exps.weight", {kExperts, kExpertFfn, kDim});
    add("blk.0.ffn_up_exps.weight", {kExperts, kExpertFfn, kDim});
    add("blk.0.ffn_down_exps.weight", {kExperts, kDim, kExpertFfn});
  } else {
    add("blk.0.ffn_gate.weight", {kFfn, kDim});
    add("blk.0.ffn_up.weight", {kFfn, kDim});
    add("blk.0.ffn_down.weight", {kDim, kFfn});
  }
  return w;
}

Result<ModelGraph> build(const std::string& arch, const Kvs& kvs, const WeightIndex& w) {
  GgufWriter writer;
  for (const auto& [k, v] : kvs) writer.kv(k, v);
  static int n = 0;
  const auto path =
      test::write_temp_file(writer.build().bytes, "qwen_family_" + std::to_string(n++) + ".gguf");
  auto file = formats::GgufFile::open(path);
  if (!file) return file.error();
  const Architecture* a = find_architecture(arch);
  if (a == nullptr) return make_error(ErrorCode::Unsupported, "no architecture " + arch);
  return a->from_gguf(*file, w, BuildOptions{});
}

int count_named(const graph::Graph& g, graph::Op op, const std::string& suffix) {
  int n = 0;
  for (const graph::Node& node : g.nodes) n += node.op == op && node.name.ends_with(suffix) ? 1 : 0;
  return n;
}

TEST(QwenFamilies, RegisteredWithTheirHfModelTypes) {
  for (auto [gguf, hf] : {std::pair{"qwen2", "qwen2"}, std::pair{"qwen3", "qwen3"}, std::pair{"phi3", "phi3"},
                          std::pair{"qwen3moe", "qwen3_moe"}}) {
    const Architecture* a = find_architecture(gguf);
    ASSERT_NE(a, nullptr) << gguf;
    EXPECT_NE(std::find(a->hf_model_types.begin(), a->hf_model_types.end(), hf), a->hf_model_types.end())
        << gguf;
  }
}

TEST(QwenFamilies, GraphsHoldEachFamilysNodes) {
  for (const char* arch : {"qwen2", "qwen3", "phi3", "qwen3moe"}) {
    auto m = build(arch, base_kvs(arch), base_weights(arch));
    ASSERT_TRUE(m.ok()) << arch << ": " << m.error().message;
    const graph::Graph& g = m->graph;
    const std::string a = arch;
    EXPECT_EQ(count_named(g, graph::Op::Add, ".q_bias"), a == "qwen2" ? 1 : 0) << arch;
    EXPECT_EQ(count_named(g, graph::Op::RmsNorm, ".q_norm"), a == "qwen3" || a == "qwen3moe" ? 1 : 0) << arch;
    EXPECT_EQ(count_named(g, graph::Op::Moe, ".ffn_moe"), a == "qwen3moe" ? 1 : 0) << arch;
    EXPECT_EQ(count_named(g, graph::Op::MatMul, ".qkv"), a == "phi3" ? 1 : 0) << arch;
    for (const graph::Node& n : g.nodes)
      if (n.op == graph::Op::Rope) {
        const auto& r = std::get<graph::RopeAttrs>(n.attrs);
        EXPECT_EQ(r.mode, graph::RopeMode::NeoX) << arch;
        EXPECT_EQ(r.n_rot, a == "phi3" ? 6 : kHeadDim) << arch;
        EXPECT_EQ(r.freq_base, 1e6f) << arch;
      }
  }
}

TEST(QwenFamilies, ExpertRoutingFromMetadata) {
  auto m = build("qwen3moe", base_kvs("qwen3moe"), base_weights("qwen3moe"));
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_NE(m->summary.find("4 experts (top 2, renormalised) x ffn 4"), std::string::npos) << m->summary;
  Kvs kv = base_kvs("qwen3moe");
  kv["qwen3moe.expert_weights_norm"] = GgufWriter::boolean(false);
  kv["qwen3moe.expert_used_count"] = GgufWriter::u32(3);
  auto raw = build("qwen3moe", kv, base_weights("qwen3moe"));
  ASSERT_TRUE(raw.ok()) << raw.error().message;
  for (const graph::Node& n : raw->graph.nodes)
    if (n.op == graph::Op::Moe) {
      EXPECT_EQ(std::get<graph::MoeAttrs>(n.attrs).n_used, 3);
      EXPECT_FALSE(std::get<graph::MoeAttrs>(n.attrs).normalize);
    }
}

struct BadCase {
  std::string arch;
  std::vector<std::string> drop_keys;
  Kvs set_keys;
  std::vector<std::string> drop_tensors;
  std::string add_tensor;
  std::string expected;  // in the message
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.arch << " -> " << c.expected; }

class QwenBadLoad : public ::testing::TestWithParam<BadCase> {};

TEST_P(QwenBadLoad, FailsNamingTheProblem) {
  const BadCase& c = GetParam();
  Kvs kv = base_kvs(c.arch);
  for (const auto& k : c.drop_keys) kv.erase(k);
  for (const auto& [k, v] : c.set_keys) kv[k] = v;
  WeightIndex w = base_weights(c.arch);
  for (const auto& t : c.drop_tensors) w.erase(t);
  if (!c.add_tensor.empty()) w[c.add_tensor] = WeightInfo{{kHeadDim / 2}};
  auto m = build(c.arch, kv, w);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find(c.expected), std::string::npos) << m.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, QwenBadLoad,
    ::testing::Values(
        BadCase{"qwen2", {"qwen2.block_count"}, {}, {}, "", "qwen2.block_count"},
        BadCase{"qwen2", {}, {}, {"blk.0.attn_k.bias"}, "", "blk.0.attn_k.bias"},
        BadCase{"qwen3",
                {"qwen3.attention.layer_norm_rms_epsilon"},
                {},
                {},
                "",
                "qwen3.attention.layer_norm_rms_epsilon"},
        BadCase{"qwen3", {}, {}, {"blk.0.attn_q_norm.weight"}, "", "blk.0.attn_q_norm.weight"},
        BadCase{"qwen3",
                {},
                {{"qwen3.attention.value_length", GgufWriter::u32(4)}},
                {},
                "",
                "qwen3.attention.value_length"},
        BadCase{"phi3", {}, {}, {"blk.0.attn_qkv.weight"}, "", "blk.0.attn_qkv.weight"},
        BadCase{"phi3",
                {},
                {{"phi3.rope.dimension_count", GgufWriter::u32(7)}},
                {},
                "",
                "phi3.rope.dimension_count"},
        BadCase{"phi3", {}, {}, {}, "rope_factors_long.weight", "rope_factors_long.weight"},
        BadCase{"qwen3moe", {"qwen3moe.expert_count"}, {}, {}, "", "qwen3moe.expert_count"},
        BadCase{"qwen3moe",
                {"qwen3moe.expert_feed_forward_length"},
                {},
                {},
                "",
                "qwen3moe.expert_feed_forward_length"},
        BadCase{"qwen3moe",
                {},
                {{"qwen3moe.expert_used_count", GgufWriter::u32(5)}},
                {},
                "",
                "qwen3moe.expert_used_count"},
        BadCase{"qwen3moe",
                {},
                {{"qwen3moe.expert_gating_func", GgufWriter::u32(2)}},
                {},
                "",
                "qwen3moe.expert_gating_func"},
        BadCase{"qwen3moe",
                {},
                {{"qwen3moe.expert_shared_count", GgufWriter::u32(1)}},
                {},
                "",
                "qwen3moe.expert_shared_count"},
        BadCase{"qwen3moe", {}, {}, {"blk.0.ffn_down_exps.weight"}, "", "blk.0.ffn_down_exps.weight"}));

}  // namespace
}  // namespace glass::models
