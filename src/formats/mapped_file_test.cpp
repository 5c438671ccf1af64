#include "formats/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "support/gguf_writer.h"
#include "support/process_memory.h"

namespace glass::formats {
namespace {

TEST(MappedFile, MapsContents) {
  const std::vector<uint8_t> bytes = {1, 2, 3, 250};
  const auto path = test::write_temp_file(bytes, "m.bin");
  auto f = MappedFile::open(path);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ((*f)->size(), 4u);
  EXPECT_EQ(std::memcmp((*f)->data(), bytes.data(), 4), 0);
  EXPECT_EQ((*f)->path(), path.string());
}

TEST(MappedFile, EmptyFile) {
  auto f = MappedFile::open(test::write_temp_file({}, "empty.bin"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ((*f)->size(), 0u);
  EXPECT_NE((*f)->data(), nullptr);
}

TEST(MappedFile, ErrorsNamePathAndReason) {
  auto f = MappedFile::open("/nonexistent/glass/model.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code, ErrorCode::Io);
  EXPECT_NE(f.error().message.find("/nonexistent/glass/model.gguf"), std::string::npos) << f.error().message;
  EXPECT_NE(f.error().message.find("No such file or directory"), std::string::npos) << f.error().message;
  auto dir = MappedFile::open(std::filesystem::temp_directory_path());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().message.find("not a regular file"), std::string::npos) << dir.error().message;
}

// release drops the whole pages inside a range from this process's memory (smaps Rss of the
// mapping falls by them) and the bytes read the same afterwards; it leaves memory with no file
// behind it alone, and ranges outside the mapping.
TEST(MappedFile, ReleaseDropsWholePagesAndKeepsTheBytes) {
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::vector<uint8_t> bytes(16 * page);
  std::iota(bytes.begin(), bytes.end(), uint8_t{7});
  auto f = MappedFile::open(test::write_temp_file(bytes, "release.bin"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  const MappedFile& m = **f;
  EXPECT_EQ(std::memcmp(m.data(), bytes.data(), bytes.size()), 0);  // every page resident now
  const auto before = test::resident_bytes_of_mapping(m.data());
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(*before, 16 * page);

  // From inside page 1 to inside page 11: pages 2..10 are wholly inside.
  EXPECT_EQ(m.release(m.data() + page + 100, 10 * page), 9 * page);
  EXPECT_EQ(*test::resident_bytes_of_mapping(m.data()), 7 * page);
  EXPECT_EQ(m.release(m.data() + 3 * page + 1, page - 2), 0u);  // no whole page
  EXPECT_EQ(m.release(m.data() + 15 * page, 2 * page), 0u);     // past the end
  EXPECT_EQ(m.release(bytes.data(), page), 0u);                 // not in the mapping
  EXPECT_EQ(std::memcmp(m.data(), bytes.data(), bytes.size()), 0);
  EXPECT_EQ(m.release(m.data(), m.size()), 16 * page);

  const auto mem = MappedFile::from_bytes("in memory", bytes);
  EXPECT_EQ(mem->release(mem->data(), mem->size()), 0u);
  EXPECT_EQ(std::memcmp(mem->data(), bytes.data(), bytes.size()), 0);
}

}  // namespace
}  // namespace glass::formats
