#include "formats/mapped_file.h"

#include <gtest/gtest.h>

#include <cstring>

#include "support/gguf_writer.h"

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

}  // namespace
}  // namespace glass::formats
