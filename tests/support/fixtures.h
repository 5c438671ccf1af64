#pragma once
// Where tests find fixtures. Small fixtures ship in the repo (models/, tests/data/); the larger set
// lives in ../shared/fixtures or in $GLASS_FIXTURES. Tests needing the larger set derive from
// WithSharedFixtures: they skip with the reason when the set is absent, and fail instead when
// GLASS_REQUIRE_FIXTURES=1 (CI sets it, so nothing is silently skipped there).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace glass::test {

std::filesystem::path source_dir();
// The shared fixture folder, or empty when absent.
std::filesystem::path shared_fixtures();
bool fixtures_required();

class WithSharedFixtures : public ::testing::Test {
 protected:
  void SetUp() override {
    fixtures_ = shared_fixtures();
    if (!fixtures_.empty()) return;
    if (fixtures_required()) GTEST_FAIL() << "shared fixtures required but not found (set GLASS_FIXTURES)";
    GTEST_SKIP() << "shared fixtures not found: set GLASS_FIXTURES or place them at ../shared/fixtures";
  }
  std::filesystem::path fixtures_;
};

}  // namespace glass::test
