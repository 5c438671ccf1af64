// The glass command on a split GGUF and on a folder (a hub snapshot): `run -m FOLDER` generates what
// the unsplit file generates, `quantize SHARD OUT` writes the unsplit file's output, and a folder
// with no model is an error naming it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cli/cli_test_support.h"
#include "support/gguf_split.h"

namespace glass {
namespace {

TEST_F(Cli, RunAndQuantizeASplitModelInAFolder) {
  fs::create_directories(path("snap"));
  const auto shards =
      test::write_gguf_split(test::stories260k(), path("snap") / "stories", {.starts = {0, 24}});
  ASSERT_EQ(shards.size(), 2u);
  const std::string whole = fmt::format("'{}'", test::stories260k().string());
  const std::string run = "-p Once -n 8 --temp 0 -t 1";
  const Ran want = glass(fmt::format("run -m {} {}", whole, run));
  ASSERT_EQ(want.status, 0) << want.err;
  ASSERT_FALSE(want.out.empty());
  for (const char* m : {"snap", "snap/stories-00002-of-00002.gguf"}) {
    const Ran got = glass(fmt::format("run -m {} {}", m, run));
    ASSERT_EQ(got.status, 0) << m << ": " << got.err;
    EXPECT_EQ(got.out, want.out) << m;
  }

  ASSERT_EQ(glass("quantize snap/stories-00001-of-00002.gguf split.gguf f16").status, 0);
  ASSERT_EQ(glass(fmt::format("quantize {} whole.gguf f16", whole)).status, 0);
  EXPECT_EQ(read_all(path("split.gguf")), read_all(path("whole.gguf")));
}

TEST_F(Cli, QuantizeWritesASplitModelThatRuns) {
  const std::string whole = fmt::format("'{}'", test::stories260k().string());
  const std::string run = "-p Once -n 8 --temp 0 -t 1";
  const Ran want = glass(fmt::format("run -m {} {}", whole, run));
  ASSERT_EQ(want.status, 0) << want.err;
  fs::create_directories(path("out"));
  const Ran q = glass(fmt::format("quantize {} out/m.gguf f16 --split-max-tensors 20", whole));
  ASSERT_EQ(q.status, 0) << q.err;
  EXPECT_NE(q.out.find("3 shards"), std::string::npos) << q.out;
  for (const char* m : {"out", "out/m-00002-of-00003.gguf"}) {
    const Ran got = glass(fmt::format("run -m {} {}", m, run));
    ASSERT_EQ(got.status, 0) << m << ": " << got.err;
    EXPECT_EQ(got.out, want.out) << m;
  }
  for (const char* bad : {"--split-max-size 0", "--split-max-size 2X", "--split-max-size G"}) {
    const Ran r = glass(fmt::format("quantize {} bad.gguf f16 {}", whole, bad));
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_NE(r.err.find("--split-max-size"), std::string::npos) << r.err;
  }
}

TEST_F(Cli, FolderWithoutAModelIsNamed) {
  fs::create_directories(path("empty"));
  const Ran r = glass("run -m empty -p Once -n 2");
  EXPECT_EQ(r.status, 2) << r.err;  // a bad argument, as report() exits for one; a missing file is 1
  EXPECT_NE(r.err.find("empty holds no model"), std::string::npos) << r.err;
  const Ran missing = glass("run -m missing.gguf -p Once -n 2");
  EXPECT_EQ(missing.status, 1) << missing.err;
}

}  // namespace
}  // namespace glass
