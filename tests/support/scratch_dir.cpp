#include "support/scratch_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <system_error>

namespace glass::test {
namespace {

struct Scratch {
  std::filesystem::path dir;
  Scratch() : dir(std::filesystem::path(::testing::TempDir()) / ("glass_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;  // at exit: nothing to report to, and a leftover is harmless
    std::filesystem::remove_all(dir, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

}  // namespace

const std::filesystem::path& scratch_dir() {
  static const Scratch scratch;
  return scratch.dir;
}

}  // namespace glass::test
