// The cpu backend's fusions on whole llama graphs (through the public API): the rewrite log names
// each fusion with its count (`glass graph --after-rewrites` prints the same lines), and logits with
// fusion agree with logits without it (LoadOptions.fuse = false) in prefill, decode and chunked
// evaluation. The fused kernels make the same gemm calls on the same activation copies, so the
// only difference allowed is float rounding of the epilogues: max abs 1e-5.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "glass/llm.h"
#include "support/fixtures.h"

namespace glass {
namespace {

struct Expected {
  std::string path;
  std::vector<std::string> fused;    // lines present with fusion
  std::vector<std::string> unfused;  // lines present without
};

std::vector<std::string> rewrite_lines(const Model& m) {
  auto text = m.graph(GraphFormat::Text, true);
  EXPECT_TRUE(text.ok()) << (text.ok() ? "" : text.error().message);
  std::vector<std::string> lines;
  if (!text.ok()) return lines;
  size_t at = 0;
  while (at < text->size()) {
    const size_t end = std::min(text->find('\n', at), text->size());
    const std::string line = text->substr(at, end - at);
    if (line.rfind("rewrite ", 0) == 0) lines.push_back(line.substr(8));
    at = end + 1;
  }
  return lines;
}

// Logits of `ids` evaluated `chunk` tokens per call.
std::vector<float> logits(const Model& m, const std::vector<int32_t>& ids, size_t chunk) {
  auto session = m.new_session();
  EXPECT_TRUE(session.ok());
  if (!session.ok()) return {};
  const auto vocab = static_cast<size_t>(m.info().vocab_size);
  std::vector<float> out(ids.size() * vocab);
  for (size_t done = 0; done < ids.size();) {
    const size_t c = std::min(ids.size() - done, chunk);
    auto st = (*session)->eval(std::span<const int32_t>(ids.data() + done, c),
                               std::span<float>(out.data() + done * vocab, c * vocab));
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    done += c;
  }
  return out;
}

void check(const Expected& e) {
  SCOPED_TRACE(e.path);
  std::shared_ptr<Model> models[2];
  for (int fuse = 0; fuse < 2; ++fuse) {
    LoadOptions opt;
    opt.backend = "cpu";
    opt.n_threads = 2;
    opt.fuse = fuse == 1;
    auto m = load_llm(e.path, opt);
    ASSERT_TRUE(m.ok()) << m.error().message;
    models[fuse] = *m;
    const std::vector<std::string> lines = rewrite_lines(**m);
    for (const std::string& want : fuse == 1 ? e.fused : e.unfused)
      EXPECT_NE(std::find(lines.begin(), lines.end(), want), lines.end())
          << "missing '" << want << "' (fuse " << fuse << ")";
    if (fuse == 0) {
      for (const std::string& l : lines) EXPECT_EQ(l.rfind("fuse_", 0), std::string::npos) << l;
    }
  }
  std::vector<int32_t> ids;
  for (int i = 0; i < 23; ++i)
    ids.push_back((1 + i * 37) % static_cast<int32_t>(models[0]->info().vocab_size));
  for (size_t chunk : {ids.size(), size_t{1}, size_t{5}}) {
    const std::vector<float> plain = logits(*models[0], ids, chunk);
    const std::vector<float> fused = logits(*models[1], ids, chunk);
    ASSERT_EQ(plain.size(), fused.size());
    double max_abs = 0;
    for (size_t i = 0; i < plain.size(); ++i)
      max_abs = std::max(max_abs, static_cast<double>(std::fabs(plain[i] - fused[i])));
    EXPECT_LE(max_abs, 1e-5) << "chunk " << chunk;
  }
}

// The lines every llama of n layers has, fused and not (f32 weights: no activation copies).
Expected llama(const std::string& path, int layers) {
  const auto n = [](int count) { return std::to_string(count) + (count == 1 ? " node" : " nodes"); };
  Expected e{path, {}, {}};
  const std::vector<std::string> common{
      "fused: rms_norm×weight kernel for " + n(2 * layers + 1),
      "attention: streaming online-softmax kernel (" + n(layers) + ")",
      "in_place: rope writes over its input (" + n(2 * layers) + ")",
  };
  e.fused = common;
  e.fused.push_back("fuse_matmul_residual: " + std::to_string(2 * layers) + " add(matmul) -> matmul_add");
  e.fused.push_back("fuse_gate_up: " + std::to_string(layers) + " swiglu(matmul, matmul) -> matmul_swiglu");
  e.fused.push_back("in_place: matmul_add writes over its residual (" + n(2 * layers) + ")");
  e.unfused = common;
  e.unfused.push_back("fused: swiglu kernel for " + n(layers));
  e.unfused.push_back("in_place: add writes over its input (" + n(2 * layers) + ")");
  e.unfused.push_back("in_place: swiglu writes over its input (" + n(layers) + ")");
  return e;
}

TEST(CpuFusionLlama, BundledStories260K) {
  check(llama((test::source_dir() / "models/stories260K.gguf").string(), 5));
}

class CpuFusionLlamaQuant : public test::WithSharedFixtures {};

TEST_F(CpuFusionLlamaQuant, SyntheticQ8_0AndQ4_K_M) {
  for (const auto& [type, act] : {std::pair{"q8_0", "q8_0"}, std::pair{"q4_k_m", "q8_k"}}) {
    Expected e =
        llama((fixtures_ / "models/synthetic" / (std::string("llama-gqa-") + type + ".gguf")).string(), 2);
    const std::string qkv =
        std::string("shared_activation_quant: 3 matmuls read one ") + act + " copy of 'blk.0.attn_norm' (x2)";
    e.fused.push_back(qkv);
    e.unfused.push_back(qkv);
    e.unfused.push_back(std::string("shared_activation_quant: 2 matmuls read one ") + act +
                        " copy of 'blk.0.ffn_norm' (x2)");
    check(e);
  }
}

}  // namespace
}  // namespace glass
