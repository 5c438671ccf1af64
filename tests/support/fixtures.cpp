#include "support/fixtures.h"

#include <cstdlib>
#include <cstring>

namespace glass::test {

std::filesystem::path source_dir() {
  if (const char* s = std::getenv("GLASS_SOURCE_DIR")) return s;
  return GLASS_SOURCE_DIR_DEFAULT;
}

std::filesystem::path shared_fixtures() {
  std::filesystem::path p;
  if (const char* s = std::getenv("GLASS_FIXTURES")) {
    p = s;
  } else {
    p = GLASS_FIXTURES_DIR_DEFAULT;
  }
  std::error_code ec;
  if (std::filesystem::is_regular_file(p / "README.md", ec)) return std::filesystem::weakly_canonical(p);
  return {};
}

bool fixtures_required() {
  const char* s = std::getenv("GLASS_REQUIRE_FIXTURES");
  return s != nullptr && std::strcmp(s, "1") == 0;
}

}  // namespace glass::test
