// Files from formats::quantize_gguf run: glass loads each quantized copy of llama-gqa-f32.gguf and
// its logits over the fixture sequence meet the conformance thresholds against llama.cpp's logits
// for llama-quantize's file of the same type, and sit no further from the F32 reference than
// llama.cpp's own quantized logits do.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "formats/npy.h"
#include "formats/quantize_file.h"
#include "runtime/verify.h"
#include "support/fixtures.h"

namespace glass {
namespace {

class QuantizedLogits : public test::WithSharedFixtures {};

TEST_F(QuantizedLogits, CloseToLlamaCppAndToF32) {
  const auto ref_dir = fixtures_ / "reference" / "synthetic";
  std::ifstream json(ref_dir / "llama-gqa-f32.json");
  const auto doc = nlohmann::json::parse(json, nullptr, false);
  ASSERT_TRUE(doc.is_object() && doc.contains("token_ids"));
  const auto tokens = doc["token_ids"].get<std::vector<int32_t>>();
  auto f32 = formats::read_npy_f32(ref_dir / "llama-gqa-f32.npy");
  ASSERT_TRUE(f32.ok()) << f32.error().message;
  const int64_t vocab = 512;

  for (const char* kind :
       {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k"}) {
    const auto out = std::filesystem::path(::testing::TempDir()) / (std::string("logits-") + kind + ".gguf");
    formats::QuantizeOptions o;
    o.ftype = *formats::file_type_from_name(kind);
    auto q = formats::quantize_gguf(fixtures_ / "models" / "synthetic" / "llama-gqa-f32.gguf", out, o);
    ASSERT_TRUE(q.ok()) << q.error().message;

    LoadOptions lo{.backend = "ref"};
    lo.min_ctx = static_cast<int64_t>(tokens.size());
    lo.n_batch = static_cast<int64_t>(tokens.size());
    auto model = load_llm(out.string(), lo);
    ASSERT_TRUE(model.ok()) << kind << ": " << model.error().message;
    // llama.cpp's names (llama-bench's model_type), from general.file_type.
    const std::map<std::string, std::string> labels = {{"q8_0", "Q8_0"},
                                                       {"q4_0", "Q4_0"},
                                                       {"q4_1", "Q4_1"},
                                                       {"q5_0", "Q5_0"},
                                                       {"q5_1", "Q5_1"},
                                                       {"q2_k", "Q2_K - Medium"},
                                                       {"q3_k_m", "Q3_K - Medium"},
                                                       {"q4_k_m", "Q4_K - Medium"},
                                                       {"q5_k_m", "Q5_K - Medium"},
                                                       {"q6_k", "Q6_K"}};
    EXPECT_EQ((*model)->info().file_type, labels.at(kind));
    auto mode = verify::parse_mode("prefill", static_cast<int64_t>(tokens.size()));
    ASSERT_TRUE(mode.ok());
    auto got = verify::eval_logits(**model, tokens, *mode);
    ASSERT_TRUE(got.ok()) << got.error().message;

    auto llama = formats::read_npy_f32(ref_dir / (std::string("llama-gqa-") + kind + ".npy"));
    ASSERT_TRUE(llama.ok()) << llama.error().message;
    const verify::Metrics vs_llama = verify::compare(*got, llama->data, vocab);
    const auto breaches = verify::breaches(vs_llama, verify::thresholds(verify::WeightClass::Quantized));
    EXPECT_TRUE(breaches.empty()) << kind << ": " << (breaches.empty() ? "" : breaches[0]);

    // Against F32: our mean error within 10% (+1e-3) of llama.cpp's own for the same type.
    const verify::Metrics ours = verify::compare(*got, f32->data, vocab);
    const verify::Metrics theirs = verify::compare(llama->data, f32->data, vocab);
    EXPECT_LE(ours.mean_abs, 1.1 * theirs.mean_abs + 1e-3) << kind;
    EXPECT_GE(ours.min_pearson, theirs.min_pearson - 0.01) << kind;
    std::filesystem::remove(out);
  }
}

}  // namespace
}  // namespace glass
