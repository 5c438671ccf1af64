// Issue 8's proof that each Gemma-family feature matters: take one feature out of the graph
// (window, softcaps, RoPE base per layer kind, q/k norm, KV sharing, AltUp correction, LAuReL,
// activation sparsity, per-layer inputs) and the
// reference check on that model's synthetic-arch fixture must fail. The unmodified models pass the
// same check in conformance_test.cpp.
#include <gtest/gtest.h>

#include <cstdio>

#include "feature_removals.h"
#include "references.h"
#include "support/fixtures.h"

namespace glass::conformance {
namespace {

struct Case {
  const char* model;  // synthetic-arch reference name
  Mutation (*removal)();
};

Mutation kv_sharing_gemma3n();

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      {"gemma2-f32", sliding_window_removed},
      {"gemma2-f32", attention_softcap_removed},
      {"gemma2-f32", final_softcap_removed},
      {"gemma3-f32", sliding_window_removed},
      {"gemma3-f32", rope_base_per_kind_removed},
      {"gemma3-f32", qk_norm_removed},
      {"gemma3n-f32", sliding_window_removed},
      {"gemma3n-f32", rope_base_per_kind_removed},
      {"gemma3n-f32", final_softcap_removed},
      {"gemma3n-f32", altup_correction_removed},
      {"gemma3n-f32", kv_sharing_gemma3n},
      {"gemma3n-f32", laurel_removed},
      {"gemma3n-f32", activation_sparsity_removed},
      {"gemma3n-f32", per_layer_inputs_removed},
      {"gemma3n-f32", qk_norm_removed},
  };
  return kCases;
}

std::filesystem::path g_fixtures;  // set by the fixture before a case runs

Mutation kv_sharing_gemma3n() {
  return kv_sharing_removed((g_fixtures / "models" / "synthetic-arch" / "gemma3n-f32.gguf").string());
}

class GemmaFeatureRemoval : public test::WithSharedFixtures, public ::testing::WithParamInterface<int> {};

TEST_P(GemmaFeatureRemoval, ReferenceCheckFails) {
  g_fixtures = fixtures_;
  const Case& c = cases().at(static_cast<size_t>(GetParam()));
  const Mutation m = c.removal();
  std::vector<Reference> refs;
  for (Reference& r : find_references(fixtures_, "synthetic-arch"))
    if (r.name == c.model) refs.push_back(r);
  ASSERT_EQ(refs.size(), 1u) << c.model;
  Outcome out;
  check(refs[0], "ref", m.rewrite, out);
  ASSERT_TRUE(out.errors.empty()) << out.errors.front();
  ASSERT_TRUE(out.pending.empty()) << out.pending.front();
  ASSERT_FALSE(out.rows.empty());
  size_t caught = 0;
  double worst = 0;
  for (const verify::Row& r : out.rows) {
    caught += r.breaches.empty() ? 0 : 1;
    worst = std::max(worst, r.metrics.max_abs);
  }
  std::printf("\n%s without '%s': max abs %.3g\n%s", c.model, m.name.c_str(), worst,
              verify::format_table(out.rows).c_str());
  EXPECT_EQ(caught, out.rows.size()) << c.model << ": removing " << m.name << " passed some checks";
}

INSTANTIATE_TEST_SUITE_P(Gemma, GemmaFeatureRemoval, ::testing::Range(0, static_cast<int>(cases().size())),
                         [](const auto& p) {
                           const Case& c = cases().at(static_cast<size_t>(p.param));
                           std::string s = std::string(c.model) + "_" + c.removal().name;
                           for (char& ch : s)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

// The 2026 families (fixtures in the repository): each feature changes the logits beyond the bar.
struct Case2026 {
  const char* model;  // synthetic-2026 reference name
  const char* id;
  Mutation (*removal)(const std::filesystem::path& fixtures);
};

const std::vector<Case2026>& cases_2026() {
  static const std::vector<Case2026> kCases = {
      {"smollm3-f32", "smollm3_nope",
       [](const std::filesystem::path& f) {
         return nope_removed((f / "models/synthetic-2026/smollm3-f32.gguf").string());
       }},
      {"lfm2-f32", "lfm2_conv", [](const std::filesystem::path&) { return conv_history_removed(); }},
      {"qwen35-f32", "qwen35_conv", [](const std::filesystem::path&) { return conv_history_removed(); }},
      {"qwen35-f32", "qwen35_decay", [](const std::filesystem::path&) { return delta_decay_removed(); }},
      {"qwen35-f32", "qwen35_gate",
       [](const std::filesystem::path&) { return attention_output_gate_removed(); }},
      {"gemma4-f32", "gemma4_window", [](const std::filesystem::path&) { return sliding_window_removed(); }},
      {"gemma4-f32", "gemma4_rope_base",
       [](const std::filesystem::path&) { return rope_base_per_kind_removed(); }},
      {"gemma4-f32", "gemma4_proportional_rope",
       [](const std::filesystem::path&) { return proportional_rope_removed(); }},
      {"gemma4-f32", "gemma4_v_norm", [](const std::filesystem::path&) { return v_norm_removed(); }},
      {"gemma4-f32", "gemma4_per_layer_inputs",
       [](const std::filesystem::path&) { return gemma4_per_layer_inputs_removed(); }},
      {"gemma4-f32", "gemma4_output_scale",
       [](const std::filesystem::path&) { return layer_output_scale_removed(); }},
      {"gemma4-f32", "gemma4_final_softcap",
       [](const std::filesystem::path&) { return final_softcap_removed(); }},
      {"gemma4moe-f32", "gemma4moe_experts", [](const std::filesystem::path&) { return experts_removed(); }},
      {"gemma4moe-f32", "gemma4moe_expert_scale",
       [](const std::filesystem::path&) { return expert_scale_removed(); }},
      {"gemma4moe-f32", "gemma4moe_expert_activation",
       [](const std::filesystem::path&) { return expert_activation_swapped(); }},
      {"gptoss-f32", "gptoss_sinks", [](const std::filesystem::path&) { return attention_sinks_removed(); }},
      {"gptoss-f32", "gptoss_yarn", [](const std::filesystem::path&) { return proportional_rope_removed(); }},
      {"gptoss-f32", "gptoss_window", [](const std::filesystem::path&) { return sliding_window_removed(); }},
      {"gptoss-f32", "gptoss_expert_activation",
       [](const std::filesystem::path&) { return expert_activation_swapped(); }},
  };
  return kCases;
}

class Feature2026Removal : public ::testing::TestWithParam<int> {};

TEST_P(Feature2026Removal, ReferenceCheckFails) {
  const std::filesystem::path root = test::source_dir() / "tests/fixtures";
  const Case2026& c = cases_2026().at(static_cast<size_t>(GetParam()));
  const Mutation m = c.removal(root);
  std::vector<Reference> refs;
  for (Reference& r : find_references(root, "synthetic-2026"))
    if (r.name == c.model) refs.push_back(r);
  ASSERT_EQ(refs.size(), 1u) << c.model;
  const size_t rows_per_backend = refs[0].exact_gelu.empty() ? 3u : 6u;  // prefill, decode, chunked (x2)
  for (const char* backend : {"ref", "cpu"}) {
    Outcome out;
    check(refs[0], backend, m.rewrite, out);
    ASSERT_TRUE(out.errors.empty()) << out.errors.front();
    ASSERT_EQ(out.rows.size(), rows_per_backend);
    double worst = 0;
    for (const verify::Row& r : out.rows) {
      EXPECT_FALSE(r.breaches.empty())
          << c.model << " " << backend << " " << r.mode << ": removing " << m.name << " passed";
      worst = std::max(worst, r.metrics.max_abs);
    }
    std::printf("%s without '%s' (%s): max abs %.3g\n", c.model, m.name.c_str(), backend, worst);
  }
}

INSTANTIATE_TEST_SUITE_P(Families2026, Feature2026Removal,
                         ::testing::Range(0, static_cast<int>(cases_2026().size())), [](const auto& p) {
                           return std::string(cases_2026().at(static_cast<size_t>(p.param)).id);
                         });

}  // namespace
}  // namespace glass::conformance
