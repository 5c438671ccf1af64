// GgufMetadataBuilder: every value type survives build() and a copy through value(), as a GGUF
// file's keys are copied into a converted file.
#include "formats/gguf_metadata.h"

#include <gtest/gtest.h>

namespace glass::formats {
namespace {

TEST(GgufMetadataBuilder, ValuesCopyExactly) {
  GgufMetadataBuilder a;
  a.u32("u", 7).f32("f", 0.1f).boolean("b", true).string("s", "héllo").i32_array("i", {-1, 2, 3});
  a.f32_array("fa", {0.5f, -1e9f}).string_array("sa", {"a b", "", "\xE2\x96\x81x"});
  auto fa = a.build("a");
  ASSERT_TRUE(fa.ok()) << fa.error().message;
  GgufMetadataBuilder b;
  for (const auto& [key, value] : fa->metadata()) b.value(key, value);
  auto fb = b.build("b");
  ASSERT_TRUE(fb.ok()) << fb.error().message;
  for (const GgufFile* f : {&*fa, &*fb}) {
    EXPECT_EQ(f->get_u32("u").value(), 7u);
    EXPECT_EQ(f->get_f32("f").value(), 0.1f);
    EXPECT_TRUE(f->get_bool("b").value());
    EXPECT_EQ(f->get_string("s").value(), "héllo");
    EXPECT_EQ(f->get_i32_array("i").value(), (std::vector<int32_t>{-1, 2, 3}));
    EXPECT_EQ(f->get_f32_array("fa").value(), (std::vector<float>{0.5f, -1e9f}));
    EXPECT_EQ(f->get_string_array("sa").value(), (std::vector<std::string>{"a b", "", "\xE2\x96\x81x"}));
  }
  EXPECT_EQ(fa->metadata().size(), fb->metadata().size());
  EXPECT_EQ(fb->find("u")->type, GgufValueType::U32);
}

TEST(GgufMetadataBuilder, ARepeatedKeyIsAnError) {
  GgufMetadataBuilder m;
  m.u32("k", 1).string("k", "x");
  auto f = m.build("dup");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("'k'"), std::string::npos) << f.error().message;
}

}  // namespace
}  // namespace glass::formats
