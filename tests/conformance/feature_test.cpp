// Issue 8's "each feature is proven to matter": each architecture feature, removed by a test-only
// graph rewrite, must make the synthetic-arch reference check fail, while the unmodified model
// passes. The README of fixtures/reference/synthetic-arch gives the size of each effect as measured
// with llama.cpp (e.g. QKV biases 5.51, q/k norm 0.43, partial rotary 0.957, top-1 routing 0.167).
#include <gtest/gtest.h>

#include <cstdio>

#include "mutations.h"
#include "references.h"
#include "support/fixtures.h"

namespace glass::conformance {
namespace {

struct FeatureCase {
  Mutation (*mutation)();
  const char* model;  // the synthetic-arch reference whose check must then fail
};

const std::vector<FeatureCase>& cases() {
  static const std::vector<FeatureCase> kCases = {
      {qkv_bias_removed, "qwen2-f32"},
      {rope_base_default, "qwen2-f32"},
      {qk_norm_removed, "qwen3-f32"},
      {qk_norm_removed, "qwen3moe-f32"},
      {partial_rotary_ignored, "phi3-f32"},
      {fused_gate_up_swapped, "phi3-f32"},
      {experts_top1, "qwen3moe-f32"},
      {experts_all, "qwen3moe-f32"},
      {experts_not_renormalised, "qwen3moe-f32"},
  };
  return kCases;
}

class QwenPhiFeatureRemoval : public test::WithSharedFixtures,
                              public ::testing::WithParamInterface<size_t> {};

TEST_P(QwenPhiFeatureRemoval, ReferenceCheckFailsWithoutIt) {
  const FeatureCase& c = cases().at(GetParam());
  const Mutation m = c.mutation();
  std::vector<Reference> refs;
  for (Reference& r : find_references(fixtures_, "synthetic-arch"))
    if (r.name == c.model) refs.push_back(r);
  ASSERT_EQ(refs.size(), 1u) << c.model;

  Outcome intact, removed;
  check(refs[0], "ref", {}, intact);
  check(refs[0], "ref", m.rewrite, removed);
  ASSERT_TRUE(intact.errors.empty() && intact.pending.empty()) << c.model << " does not load";
  ASSERT_TRUE(removed.errors.empty() && removed.pending.empty()) << m.name << " broke loading";
  ASSERT_EQ(intact.rows.size(), 3u);
  ASSERT_EQ(removed.rows.size(), 3u);
  for (const verify::Row& r : intact.rows) EXPECT_TRUE(r.breaches.empty()) << c.model << " " << r.mode;
  size_t caught = 0;
  for (const verify::Row& r : removed.rows) caught += r.breaches.empty() ? 0 : 1;
  std::printf("\nfeature removed: %s on %s\n%s", m.name.c_str(), c.model,
              verify::format_table(removed.rows).c_str());
  EXPECT_EQ(caught, 3u) << m.name << " on " << c.model << " passed the check in some mode";
}

INSTANTIATE_TEST_SUITE_P(Features, QwenPhiFeatureRemoval, ::testing::Range<size_t>(0, cases().size()),
                         [](const auto& p) {
                           const FeatureCase& c = cases().at(p.param);
                           std::string s = c.mutation().name + " " + c.model;
                           for (char& ch : s)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

}  // namespace
}  // namespace glass::conformance
