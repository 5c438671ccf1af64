// The whole llama graph on the cpu backend (through the public API, LoadOptions.backend = "cpu")
// against llama.cpp's logits in ../shared/fixtures, every position, in prefill (one call), decode
// (one token per call through the KV cache) and chunked (7 per call) modes. Thresholds are the
// fixtures README's: F32 <= 1e-4 max abs; F16 <= 2e-3; BF16 <= 1e-2; quantized: per-row Pearson
// >= 0.999, max abs <= 5e-2, top-1 agreement >= 0.9. And the token loop allocates nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <new>
#include <nlohmann/json.hpp>

#include "formats/npy.h"
#include "glass/llm.h"
#include "support/counting_new.h"
#include "support/fixtures.h"

namespace glass {
namespace {

struct Case {
  std::string model;      // under fixtures/models
  std::string reference;  // under fixtures/reference, without extension
  std::string json;       // the json beside the npy
  enum Kind { F32, F16, BF16, Quant } kind;
};

Case gqa(const std::string& type, Case::Kind kind) {
  return {"synthetic/llama-gqa-" + type + ".gguf", "synthetic/llama-gqa-" + type,
          "llama-gqa-" + type + ".json", kind};
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.model; }

std::vector<float> run_logits(const std::string& path, const std::vector<int32_t>& ids, size_t chunk,
                              int64_t* vocab_out) {
  LoadOptions opt;
  opt.backend = "cpu";
  opt.n_threads = 2;
  auto model = load_llm(path, opt);
  EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error().message);
  if (!model.ok()) return {};
  auto session = (*model)->new_session();
  const auto vocab = static_cast<size_t>((*model)->info().vocab_size);
  *vocab_out = static_cast<int64_t>(vocab);
  std::vector<float> out(ids.size() * vocab);
  for (size_t done = 0; done < ids.size();) {
    const size_t c = std::min(ids.size() - done, chunk);
    auto st = (*session)->eval(std::span<const int32_t>(ids.data() + done, c),
                               std::span<float>(out.data() + done * vocab, c * vocab));
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    done += c;
  }
  EXPECT_EQ((*model)->plans_compiled(), 2u);
  return out;
}

struct Agreement {
  double max_abs = 0, min_pearson = 1, top1 = 0;
};

Agreement compare(const std::vector<float>& got, const std::vector<float>& want, size_t vocab) {
  Agreement a;
  const size_t rows = want.size() / vocab;
  size_t same_top = 0;
  for (size_t r = 0; r < rows; ++r) {
    const float* x = got.data() + r * vocab;
    const float* y = want.data() + r * vocab;
    double mx = 0, my = 0;
    for (size_t i = 0; i < vocab; ++i) {
      mx += x[i];
      my += y[i];
      a.max_abs = std::max(a.max_abs, static_cast<double>(std::fabs(x[i] - y[i])));
    }
    mx /= static_cast<double>(vocab);
    my /= static_cast<double>(vocab);
    double sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < vocab; ++i) {
      sxy += (x[i] - mx) * (y[i] - my);
      sxx += (x[i] - mx) * (x[i] - mx);
      syy += (y[i] - my) * (y[i] - my);
    }
    a.min_pearson = std::min(a.min_pearson, sxy / std::sqrt(sxx * syy));
    same_top += std::max_element(x, x + vocab) - x == std::max_element(y, y + vocab) - y;
  }
  a.top1 = static_cast<double>(same_top) / static_cast<double>(rows);
  return a;
}

class CpuLlamaReference : public test::WithSharedFixtures, public ::testing::WithParamInterface<Case> {};

TEST_P(CpuLlamaReference, EveryLogitInEveryMode) {
  const Case c = GetParam();
  const auto ref_path = fixtures_ / "reference" / c.reference;
  std::ifstream in(ref_path.parent_path() / c.json);
  const auto doc = nlohmann::json::parse(in);
  const auto ids = doc.at("token_ids").get<std::vector<int32_t>>();
  auto want = formats::read_npy_f32(ref_path.string() + ".npy");
  ASSERT_TRUE(want.ok()) << want.error().message;
  for (size_t chunk : {ids.size(), size_t{1}, size_t{7}}) {
    int64_t vocab = 0;
    const auto got = run_logits((fixtures_ / "models" / c.model).string(), ids, chunk, &vocab);
    ASSERT_EQ(got.size(), want->data.size());
    const Agreement a = compare(got, want->data, static_cast<size_t>(vocab));
    const double tol = c.kind == Case::F32    ? 1e-4
                       : c.kind == Case::F16  ? 2e-3
                       : c.kind == Case::BF16 ? 1e-2
                                              : 5e-2;
    EXPECT_LE(a.max_abs, tol) << c.model << " chunk " << chunk;
    if (c.kind == Case::Quant) {
      EXPECT_GE(a.min_pearson, 0.999) << c.model << " chunk " << chunk;
      EXPECT_GE(a.top1, 0.9) << c.model << " chunk " << chunk;
    }
    std::printf("[ cpu      ] %-32s chunk %2zu: max abs %.3g, min Pearson %.7f, top-1 %.3f\n",
                c.model.c_str(), chunk, a.max_abs, a.min_pearson, a.top1);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, CpuLlamaReference,
    ::testing::Values(Case{"stories260K.gguf", "stories260K/logits", "logits.json", Case::F32},
                      Case{"synthetic/llama-tied-f32.gguf", "synthetic/llama-tied-f32", "llama-tied-f32.json",
                           Case::F32},
                      gqa("f32", Case::F32), gqa("f16", Case::F16), gqa("bf16", Case::BF16),
                      gqa("q8_0", Case::Quant), gqa("q4_0", Case::Quant), gqa("q4_1", Case::Quant),
                      gqa("q5_0", Case::Quant), gqa("q5_1", Case::Quant), gqa("q2_k", Case::Quant),
                      gqa("q3_k_m", Case::Quant), gqa("q4_k_m", Case::Quant), gqa("q5_k_m", Case::Quant),
                      gqa("q6_k", Case::Quant)),
    [](const auto& p) {
      std::string s = std::filesystem::path(p.param.model).stem().string();
      for (char& ch : s)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return s;
    });

class CpuTokenLoop : public test::WithSharedFixtures {};

TEST_F(CpuTokenLoop, EvalAllocatesNothing) {
  LoadOptions opt;
  opt.backend = "cpu";
  opt.n_threads = 2;
  auto model = load_llm((fixtures_ / "models/synthetic/llama-gqa-q4_k_m.gguf").string(), opt);
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto session = (*model)->new_session();
  ASSERT_TRUE(session.ok());
  const std::vector<int32_t> prompt{1, 50, 60, 70, 80};
  ASSERT_TRUE((*session)->eval(prompt).ok());                   // binds the prefill plan
  ASSERT_TRUE((*session)->eval(std::vector<int32_t>{9}).ok());  // and the decode plan
  const uint64_t before = test::allocations();
  int32_t token = 42;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE((*session)->eval(std::span<const int32_t>(&token, 1)).ok());
    const auto logits = (*session)->last_logits();
    token = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  ASSERT_TRUE((*session)->eval(prompt).ok());  // a prefill chunk too
  EXPECT_EQ(test::allocations() - before, 0u);
  EXPECT_EQ((*model)->plans_compiled(), 2u);
  EXPECT_EQ((*session)->stats().prefix_tokens_recomputed, 0u);
}

}  // namespace
}  // namespace glass
