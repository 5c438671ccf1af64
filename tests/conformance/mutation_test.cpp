// Each classic bug, planted by a test-only graph rewrite, must make the conformance check fail.
// The mutants run on stories260K (a trained model, 8 heads / 4 kv heads) and llama-gqa-f32
// (random weights, 8 heads / 2 kv heads); a mutant passes the check only if every mode of both
// models stays within the F32 thresholds, which would fail this test.
#include <gtest/gtest.h>

#include <cstdio>

#include "mutations.h"
#include "references.h"
#include "support/fixtures.h"

namespace glass::conformance {
namespace {

class MutationTest : public test::WithSharedFixtures, public ::testing::WithParamInterface<int> {};

TEST_P(MutationTest, ConformanceCheckCatchesIt) {
  const Mutation m = all_mutations().at(static_cast<size_t>(GetParam()));
  std::vector<Reference> refs;
  for (const auto& [set, name] :
       {std::pair{"stories260K", "stories260K"}, std::pair{"synthetic", "llama-gqa-f32"}})
    for (Reference& r : find_references(fixtures_, set))
      if (r.name == name) refs.push_back(r);
  ASSERT_EQ(refs.size(), 2u);
  Outcome out;
  for (const Reference& r : refs) check(r, "ref", m.rewrite, out);
  ASSERT_TRUE(out.errors.empty()) << out.errors.front();
  ASSERT_EQ(out.rows.size(), 6u);
  size_t caught = 0;
  for (const verify::Row& r : out.rows) caught += r.breaches.empty() ? 0 : 1;
  std::printf("\nmutant: %s\n%s", m.name.c_str(), verify::format_table(out.rows).c_str());
  EXPECT_GT(caught, 0u) << m.name << " passed every check";
}

INSTANTIATE_TEST_SUITE_P(Mutants, MutationTest, ::testing::Range(0, 7), [](const auto& p) {
  std::string s = all_mutations().at(static_cast<size_t>(p.param)).name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
});

}  // namespace
}  // namespace glass::conformance
