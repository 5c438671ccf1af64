#pragma once
// The bundled stories260K model (models/stories260K.gguf), loaded for a runtime test; a failed load
// is a test failure naming why, and null.
#include <gtest/gtest.h>

#include <memory>

#include "glass/llm.h"
#include "support/fixtures.h"

namespace glass::test {

inline std::shared_ptr<Model> load_bundled(const LoadOptions& opt) {
  auto m = load_llm((source_dir() / "models/stories260K.gguf").string(), opt);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return m.ok() ? *m : nullptr;
}

}  // namespace glass::test
