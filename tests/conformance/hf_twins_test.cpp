// HF directories of every family against their GGUF twins. gguf_to_hf.py (beside this file, an
// independent oracle: numpy only, its own GGUF reader and safetensors writer, never glass) turns
// each F32 GGUF of fixtures/models/synthetic-arch into the HF checkpoint llama.cpp's converter
// would have made it from, into the build tree. Then:
//  * glass loads the directory and its logits equal the GGUF twin's (F32: <= 1e-4 max abs) and meet
//    the fixture's llama.cpp reference (and the exact-GELU one) at the README's bars;
//  * `glass quantize HF_DIR` (models/hf_to_gguf.h) at F32 writes the fixture's tensors byte for byte
//    with its hyper-parameter keys, and at Q8_0 / Q4_K_M gives the logits of quantizing the GGUF twin.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "formats/npy.h"
#include "formats/quantize_file.h"
#include "models/hf_to_gguf.h"
#include "references.h"
#include "runtime/verify.h"
#include "support/fixtures.h"

namespace glass {
namespace {

struct Twin {
  std::string arch;
  std::filesystem::path gguf, hf;
  conformance::Reference ref;
  std::filesystem::path mlx, mlx_dequantized;  // with make_twin(skip, group)
  std::filesystem::path bf16, bf16_f32;        // with make_twin(skip, 0, true)
};

class HfTwins : public test::WithSharedFixtures, public ::testing::WithParamInterface<const char*> {
 protected:
  // Runs the oracle for this family into the build tree; empty with `skip` set when it cannot run.
  // Each test writes its own folder (ctest runs them in parallel).
  std::optional<Twin> make_twin(std::string& skip, int mlx_group = 0, bool bf16 = false) {
    const std::string arch = GetParam();
    out_ = std::filesystem::path(GLASS_HF_TWINS_DIR) /
           (arch + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    const std::filesystem::path& out = out_;
    std::filesystem::remove_all(out);
    // The 2026 families' fixtures are the repository's (tests/fixtures), the others the shared set's.
    const bool in_repo =
        arch == "smollm3" || arch == "lfm2" || arch == "qwen35" || arch == "gemma4" || arch == "gemma4moe";
    const std::string set = in_repo ? "synthetic-2026" : "synthetic-arch";
    const std::filesystem::path root = in_repo ? test::source_dir() / "tests/fixtures" : fixtures_;
    const std::string cmd = fmt::format(
        "'{}' '{}' --fixtures '{}' --models '{}' --set {} --out '{}' --arch {} --mlx-group {}{}",
        GLASS_TEST_PYTHON, (test::source_dir() / "tests/conformance/gguf_to_hf.py").string(),
        fixtures_.string(), root.string(), set, out.string(), arch, mlx_group, bf16 ? " --bf16" : "");
    const int status = std::system(cmd.c_str());
    std::ifstream in(out / "index.json");
    const auto index = nlohmann::json::parse(in, nullptr, false);
    if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 77) {
      skip =
          index.is_object() ? index.value("skip_reason", "gguf_to_hf.py skipped") : "gguf_to_hf.py skipped";
      return std::nullopt;
    }
    EXPECT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
    if (!index.is_object() || !index.contains("twins") || index["twins"].size() != 1) {
      ADD_FAILURE() << cmd << ": no twin in " << (out / "index.json");
      return std::nullopt;
    }
    const auto& t = index["twins"][0];
    Twin twin{arch, t["gguf"].get<std::string>(), t["hf"].get<std::string>(), {}, {}, {}};
    if (mlx_group > 0) {
      twin.mlx = t.value("mlx", "");
      twin.mlx_dequantized = t.value("mlx_dequantized", "");
    }
    if (bf16) {
      twin.bf16 = t.value("bf16", "");
      twin.bf16_f32 = t.value("bf16_f32", "");
    }
    for (conformance::Reference& r : conformance::find_references(root, set))
      if (r.name == arch + "-f32") twin.ref = std::move(r);
    if (twin.ref.tokens.empty()) ADD_FAILURE() << "no reference for " << arch << "-f32";
    return twin;
  }

  std::string backend() const {
    const auto b = conformance::available_backends();
    return std::find(b.begin(), b.end(), "cpu") != b.end() ? "cpu" : "ref";
  }

  Result<std::vector<float>> logits(const std::filesystem::path& model, const std::vector<int32_t>& tokens,
                                    const std::string& mode_name = "prefill", std::string on = "") {
    LoadOptions lo{.backend = on.empty() ? backend() : on};
    lo.min_ctx = static_cast<int64_t>(tokens.size());
    lo.n_batch = static_cast<int64_t>(tokens.size());
    auto m = load_llm(model.string(), lo);
    if (!m) return m.error();
    auto mode = verify::parse_mode(mode_name, static_cast<int64_t>(tokens.size()));
    if (!mode) return mode.error();
    return verify::eval_logits(**m, tokens, *mode);
  }

  std::filesystem::path out_;
};

constexpr int64_t kVocab = 512;

TEST_P(HfTwins, SameLogitsAsTheGgufTwinAndTheReference) {
  std::string skip;
  const auto twin = make_twin(skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(twin && !HasFailure());
  const std::vector<int32_t>& tokens = twin->ref.tokens;
  auto gguf = logits(twin->gguf, tokens);
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  for (const char* mode : {"prefill", "decode"}) {
    auto hf = logits(twin->hf, tokens, mode);
    ASSERT_TRUE(hf.ok()) << twin->arch << ": " << hf.error().message;
    const verify::Metrics vs_gguf = verify::compare(*hf, *gguf, kVocab);
    // The 2026 families are held to issue 52's 1e-5 (measured: smollm3 9.5e-7, lfm2 7.2e-7, qwen35 2.4e-6).
    const bool family_2026 = twin->arch == "smollm3" || twin->arch == "lfm2" || twin->arch == "qwen35" ||
                             twin->arch.starts_with("gemma4");
    EXPECT_LE(vs_gguf.max_abs, family_2026 ? 1e-5 : 1e-4) << twin->arch << " " << mode << ": HF vs GGUF twin";

    auto expected = formats::read_npy_f32(twin->ref.logits);
    ASSERT_TRUE(expected.ok()) << expected.error().message;
    const verify::Metrics vs_ref = verify::compare(*hf, expected->data, kVocab);
    const auto breaches =
        verify::breaches(vs_ref, conformance::thresholds_for(twin->ref, verify::WeightClass::F32));
    EXPECT_TRUE(breaches.empty()) << twin->arch << " " << mode << ": "
                                  << (breaches.empty() ? "" : breaches[0]);
    double vs_exact = 0;
    if (!twin->ref.exact_gelu.empty()) {
      auto exact = formats::read_npy_f32(twin->ref.exact_gelu);
      ASSERT_TRUE(exact.ok()) << exact.error().message;
      const verify::Metrics m = verify::compare(*hf, exact->data, kVocab);
      vs_exact = m.max_abs;
      const auto b = verify::breaches(m, verify::thresholds(verify::WeightClass::F32));
      EXPECT_TRUE(b.empty()) << twin->arch << " " << mode << " (exact gelu): " << (b.empty() ? "" : b[0]);
    }
    std::printf("hf twin %-9s %-8s max|d| vs GGUF twin %.3g, vs llama.cpp reference %.3g, vs exact-GELU %s\n",
                twin->arch.c_str(), mode, vs_gguf.max_abs, vs_ref.max_abs,
                twin->ref.exact_gelu.empty() ? "-" : fmt::format("{:.3g}", vs_exact).c_str());
  }
}

// A BF16 checkpoint (every tensor BF16, norms and biases too, as published checkpoints are) loads
// for every family and computes the values it stands for: on the ref backend its logits equal
// those of the same rounded values stored as F32. Norms, biases and convolution taps are widened to
// F32 at load, as llama.cpp's converter writes them.
TEST_P(HfTwins, Bf16CheckpointComputesItsValues) {
  std::string skip;
  const auto twin = make_twin(skip, 0, true);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(twin && !HasFailure());
  ASSERT_FALSE(twin->bf16.empty() || twin->bf16_f32.empty());
  auto plain = logits(twin->bf16_f32, twin->ref.tokens, "prefill", "ref");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  auto bf16 = logits(twin->bf16, twin->ref.tokens, "prefill", "ref");
  ASSERT_TRUE(bf16.ok()) << twin->arch << ": " << bf16.error().message;
  const verify::Metrics m = verify::compare(*bf16, *plain, kVocab);
  EXPECT_LE(m.max_abs, 1e-5) << twin->arch << ": BF16 checkpoint vs its values as F32 (ref)";
  auto model = load_llm(twin->bf16.string(), LoadOptions{.backend = "ref"});
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ(verify::weight_class(**model), verify::WeightClass::BF16);
  std::printf("bf16 twin %-9s ref: max|d| vs its values as F32 %.3g\n", twin->arch.c_str(), m.max_abs);
}

// An MLX 4-bit snapshot of the twin (gguf_to_hf.py --mlx-group: MLX's affine formula, bfloat16
// scales and biases, groups of 64 spanning two Q4_1 blocks) computes the values it stands for: on the
// ref backend its logits equal those of the same values stored as F32 (the dequantized twin, written
// by the script); on the cpu backend, whose Q4_1 kernels quantize activations to 8 bits, every row
// correlates with them and picks the same top token (the bars the cpu suite holds quantized weights
// to, CpuLlamaReference), a wrong nibble, scale or bias would not.
TEST_P(HfTwins, MlxSnapshotComputesItsDequantizedValues) {
  std::string skip;
  const auto twin = make_twin(skip, 64);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(twin && !HasFailure());
  ASSERT_FALSE(twin->mlx.empty() || twin->mlx_dequantized.empty());
  const std::vector<int32_t>& tokens = twin->ref.tokens;
  auto plain = logits(twin->mlx_dequantized, tokens, "prefill", "ref");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  for (const char* mode : {"prefill", "decode"}) {
    auto mlx = logits(twin->mlx, tokens, mode, "ref");
    ASSERT_TRUE(mlx.ok()) << twin->arch << ": " << mlx.error().message;
    const verify::Metrics m = verify::compare(*mlx, *plain, kVocab);
    EXPECT_LE(m.max_abs, 1e-4) << twin->arch << " " << mode
                               << ": MLX 4-bit vs its dequantized F32 twin (ref)";
    std::printf("mlx twin %-9s %-8s ref: max|d| vs the dequantized twin %.3g\n", twin->arch.c_str(), mode,
                m.max_abs);
  }
  if (backend() == "cpu") {
    auto mlx = logits(twin->mlx, tokens, "prefill", "cpu");
    ASSERT_TRUE(mlx.ok()) << twin->arch << ": " << mlx.error().message;
    const verify::Metrics m = verify::compare(*mlx, *plain, kVocab);
    // The gated hybrids multiply projections of the same activations (LFM2: B * x, then C * conv;
    // Qwen 3.5: the delta rule's gates, SiLU(z), the attention's sigmoid gate), so the cpu kernels'
    // 8-bit activations move their rows more: min Pearson measured 0.99832 (lfm2), 0.99474 and
    // top-1 0.958 (qwen35). On quantized GGUFs the cpu backend meets llama.cpp's own logits (which
    // round activations the same way) at Pearson >= 0.99985 (references.cpp).
    // Gemma 4 gates twice per layer (GeGLU, then the per-layer input; the MoE's router picks
    // experts from rounded activations): min Pearson measured 0.9615 / top-1 0.81 (gemma4), 0.9649 /
    // 0.85 (gemma4moe), as on its quantized GGUFs against llama.cpp (references.cpp).
    const bool gemma4 = twin->arch.starts_with("gemma4");
    const double bar = gemma4 ? 0.95 : twin->arch == "qwen35" ? 0.99 : twin->arch == "lfm2" ? 0.998 : 0.999;
    EXPECT_GE(m.min_pearson, bar) << twin->arch << " cpu, row " << m.min_pearson_row;
    EXPECT_GE(m.top1, gemma4 ? 0.75 : 0.9) << twin->arch << " cpu";
    std::printf("mlx twin %-9s cpu: vs the dequantized twin max|d| %.3g, min Pearson %.6f, top-1 %.3f\n",
                twin->arch.c_str(), m.max_abs, m.min_pearson, m.top1);
  }
  // The snapshot's matrices became Q4_1 (no F32 copy of them), its norms stayed F32.
  auto model = load_llm(twin->mlx.string(), LoadOptions{.backend = "ref"});
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ(verify::weight_class(**model), verify::WeightClass::Quantized);
}

// The same for a Llama checkpoint (stories260K-hf, groups of 32: the FFN's 172-wide rows do not
// split into groups, so down_proj stays F32 beside quantized matrices, as mixed snapshots do), at 4
// and 8 bits (Q4_1 and Q8_A: the checkpoint's values either way, so equal logits on ref).
class MlxLlama : public ::testing::TestWithParam<int> {};

TEST_P(MlxLlama, ComputesItsDequantizedValues) {
  const int bits = GetParam();
  const std::filesystem::path fx = test::shared_fixtures();
  if (fx.empty()) {
    if (test::fixtures_required()) GTEST_FAIL() << "shared fixtures required but not found";
    GTEST_SKIP() << "shared fixtures not found: set GLASS_FIXTURES or place them at ../shared/fixtures";
  }
  const auto out = std::filesystem::path(GLASS_HF_TWINS_DIR) / fmt::format("mlx{}-llama", bits);
  std::filesystem::remove_all(out);
  const std::string cmd =
      fmt::format("'{}' '{}' --fixtures '{}' --out '{}' --mlx-from '{}' --mlx-group 32 --mlx-bits {}",
                  GLASS_TEST_PYTHON, (test::source_dir() / "tests/conformance/gguf_to_hf.py").string(),
                  fx.string(), out.string(), (fx / "models" / "stories260K-hf").string(), bits);
  const int status = std::system(cmd.c_str());
  std::ifstream in(out / "index.json");
  const auto index = nlohmann::json::parse(in, nullptr, false);
  if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 77)
    GTEST_SKIP() << index.value("skip_reason", "");
  ASSERT_TRUE(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  const std::string mlx = index["twins"][0]["mlx"], plain = index["twins"][0]["mlx_dequantized"];
  const std::vector<int32_t> tokens{1, 403, 407, 261, 378, 300, 25, 263, 411, 9};
  auto run = [&](const std::string& dir, const char* backend) -> Result<std::vector<float>> {
    LoadOptions lo{.backend = backend};
    lo.min_ctx = lo.n_batch = static_cast<int64_t>(tokens.size());
    auto m = load_llm(dir, lo);
    if (!m) return m.error();
    return verify::eval_logits(**m, tokens,
                               *verify::parse_mode("prefill", static_cast<int64_t>(tokens.size())));
  };
  auto want = run(plain, "ref");
  auto got = run(mlx, "ref");
  ASSERT_TRUE(want.ok()) << want.error().message;
  ASSERT_TRUE(got.ok()) << got.error().message;
  const verify::Metrics on_ref = verify::compare(*got, *want, 512);
  EXPECT_LE(on_ref.max_abs, 1e-4);
  std::printf("mlx %d-bit llama ref: vs the dequantized twin max|d| %.3g, min Pearson %.7f\n", bits,
              on_ref.max_abs, on_ref.min_pearson);
  if (const auto b = conformance::available_backends(); std::find(b.begin(), b.end(), "cpu") != b.end()) {
    auto cpu = run(mlx, "cpu");
    ASSERT_TRUE(cpu.ok()) << cpu.error().message;
    const verify::Metrics m = verify::compare(*cpu, *want, 512);
    EXPECT_GE(m.min_pearson, 0.999);
    EXPECT_GE(m.top1, 0.9);
    std::printf("mlx %d-bit llama cpu: vs the dequantized twin max|d| %.3g, min Pearson %.6f\n", bits,
                m.max_abs, m.min_pearson);
  }
  // To GGUF: refused as requantizing unless allowed; allowed, the snapshot's values in F16 (this
  // model's 172-wide FFN rows have no Q8_0 fallback).
  const std::string gguf = (out / "mlx.f16.gguf").string();
  formats::QuantizeOptions qo;
  qo.ftype = formats::FileType::F16;
  auto refused = models::hf_to_gguf(mlx, gguf, qo);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("--allow-requantize"), std::string::npos) << refused.error().message;
  qo.allow_requantize = true;
  auto written = models::hf_to_gguf(mlx, gguf, qo);
  ASSERT_TRUE(written.ok()) << written.error().message;
  auto from_gguf = run(gguf, "ref");
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.error().message;
  const verify::Metrics q = verify::compare(*from_gguf, *want, 512);
  EXPECT_GE(q.min_pearson, 0.9999);
  std::printf("mlx %d-bit llama -> f16 GGUF, ref: vs the dequantized twin min Pearson %.7f\n", bits,
              q.min_pearson);
}

INSTANTIATE_TEST_SUITE_P(Bits, MlxLlama, ::testing::Values(4, 8), [](const ::testing::TestParamInfo<int>& p) {
  return fmt::format("bits{}", p.param);
});

// The converted F32 file holds the fixture's tensors bit for bit and its <arch>.* keys.
void expect_same_file(const formats::GgufFile& want, const formats::GgufFile& got, const std::string& arch) {
  EXPECT_EQ(want.tensors().size(), got.tensors().size()) << arch;
  for (const formats::GgufTensorInfo& t : want.tensors()) {
    const formats::GgufTensorInfo* g = got.find_tensor(t.name);
    if (g == nullptr) {
      ADD_FAILURE() << arch << ": no tensor " << t.name;
      continue;
    }
    EXPECT_EQ(g->shape, t.shape) << t.name;
    EXPECT_EQ(g->dtype, t.dtype) << t.name;
    EXPECT_TRUE(g->nbytes == t.nbytes && std::memcmp(g->data, t.data, t.nbytes) == 0) << t.name << " differs";
  }
  for (const auto& [key, value] : want.metadata()) {
    if (!key.starts_with(arch + ".")) continue;
    const formats::GgufValue* v = got.find(key);
    if (v == nullptr) {
      ADD_FAILURE() << arch << ": no key " << key;
      continue;
    }
    if (formats::gguf_value_to_string(*v, 64) == formats::gguf_value_to_string(value, 64)) continue;
    // Numbers computed from config.json (Gemma 3n's sparsity quantiles) may differ in the last bits.
    auto a = want.get_f32_array(key), b = got.get_f32_array(key);
    if (!a || !b) {
      auto x = want.get_f32(key), y = got.get_f32(key);
      ASSERT_TRUE(x && y) << key << ": " << formats::gguf_value_to_string(value) << " vs "
                          << formats::gguf_value_to_string(*v);
      a = std::vector<float>{*x};
      b = std::vector<float>{*y};
    }
    ASSERT_EQ(a->size(), b->size()) << key;
    for (size_t i = 0; i < a->size(); ++i) EXPECT_NEAR((*a)[i], (*b)[i], 1e-6 * std::abs((*a)[i])) << key;
  }
}

TEST_P(HfTwins, QuantizeFromHfLikeFromTheGgufTwin) {
  std::string skip;
  const auto twin = make_twin(skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(twin && !HasFailure());
  const std::filesystem::path& dir = out_;
  if (twin->arch == "qwen35") {  // 2 key heads under 4 value heads: GGUF's tiled order is not written yet
    formats::QuantizeOptions o;
    o.ftype = formats::FileType::AllF32;
    auto q = models::hf_to_gguf(twin->hf, dir / "from-hf.gguf", o);
    ASSERT_FALSE(q.ok());
    EXPECT_EQ(q.error().code, ErrorCode::Unsupported);
    EXPECT_NE(q.error().message.find("value heads"), std::string::npos) << q.error().message;
    return;
  }
  for (const char* type : {"f32", "q8_0", "q4_k_m"}) {
    formats::QuantizeOptions o;
    o.ftype = type == std::string("f32") ? formats::FileType::AllF32 : *formats::file_type_from_name(type);
    const auto from_hf = dir / fmt::format("from-hf-{}.gguf", type);
    auto q = models::hf_to_gguf(twin->hf, from_hf, o);
    ASSERT_TRUE(q.ok()) << twin->arch << " " << type << ": " << q.error().message;
    if (o.ftype == formats::FileType::AllF32) {
      auto want = formats::GgufFile::open(twin->gguf);
      auto got = formats::GgufFile::open(from_hf);
      ASSERT_TRUE(want.ok() && got.ok());
      expect_same_file(*want, *got, twin->arch == "gemma4moe" ? "gemma4" : twin->arch);
      std::filesystem::remove(from_hf);
      continue;
    }
    const auto from_gguf = dir / fmt::format("from-gguf-{}.gguf", type);
    auto g = formats::quantize_gguf(twin->gguf, from_gguf, o);
    ASSERT_TRUE(g.ok()) << g.error().message;
    auto a = logits(from_hf, twin->ref.tokens);
    ASSERT_TRUE(a.ok()) << twin->arch << " " << type << ": " << a.error().message;
    auto b = logits(from_gguf, twin->ref.tokens);
    ASSERT_TRUE(b.ok()) << b.error().message;
    const verify::Metrics m = verify::compare(*a, *b, kVocab);
    EXPECT_LE(m.max_abs, 1e-4) << twin->arch << " " << type;
    std::printf("hf twin %-9s quantized %-6s from HF vs from GGUF: max|d| %.3g\n", twin->arch.c_str(), type,
                m.max_abs);
    std::filesystem::remove(from_gguf);
    std::filesystem::remove(from_hf);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, HfTwins,
                         ::testing::Values("qwen2", "qwen3", "qwen3moe", "phi3", "gemma2", "gemma3",
                                           "gemma3n", "smollm3", "lfm2", "qwen35", "gemma4", "gemma4moe"),
                         [](const ::testing::TestParamInfo<const char*>& p) { return std::string(p.param); });

}  // namespace
}  // namespace glass
