#include "formats/npy.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <string>

#include "support/fixtures.h"
#include "support/gguf_writer.h"

namespace glass::formats {
namespace {

std::vector<uint8_t> file_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::filesystem::path temp_path(const std::string& name) { return test::write_temp_file({}, name); }

TEST(Npy, RoundTrip) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 3}, {5}, {}, {0, 4}, {2, 1, 3}}) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    std::vector<float> data(static_cast<size_t>(n));
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.5f - 1.0f;
    const auto path = temp_path("rt.npy");
    ASSERT_TRUE(write_npy_f32(path, data.data(), shape).ok());
    const auto bytes = file_bytes(path);
    ASSERT_GE(bytes.size(), 64u);
    const size_t header_len = bytes[8] | (bytes[9] << 8);
    EXPECT_EQ((10 + header_len) % 64, 0u);  // data aligned to 64
    EXPECT_EQ(bytes[10 + header_len - 1], '\n');
    EXPECT_EQ(bytes.size(), 10 + header_len + data.size() * 4);
    auto back = read_npy_f32(path);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->shape, shape);
    EXPECT_EQ(back->data, data);
  }
}

TEST(Npy, HeaderText) {
  const float x[6] = {};
  const auto path = temp_path("h.npy");
  ASSERT_TRUE(write_npy_f32(path, x, {6}).ok());
  const auto b = file_bytes(path);
  const std::string header(b.begin() + 10, b.end() - 6 * 4);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", 0), 0u) << header;
}

TEST(Npy, WriteErrors) {
  const float x = 0;
  auto s = write_npy_f32("/nonexistent-dir/x.npy", &x, {1});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::Io);
  EXPECT_NE(s.error().message.find("/nonexistent-dir/x.npy"), std::string::npos);
  EXPECT_FALSE(write_npy_f32(temp_path("neg.npy"), &x, {-1}).ok());
}

// Builds an .npy from a header dict and `n_floats` zero floats.
std::vector<uint8_t> npy_with(const std::string& dict, size_t n_floats, uint8_t major = 1) {
  std::vector<uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', major, 0};
  std::string h = dict + "\n";
  if (major == 1) {
    b.push_back(static_cast<uint8_t>(h.size()));
    b.push_back(static_cast<uint8_t>(h.size() >> 8));
  } else {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(h.size() >> (8 * i)));
  }
  b.insert(b.end(), h.begin(), h.end());
  b.resize(b.size() + 4 * n_floats, 0);
  return b;
}

void expect_read_error(const std::vector<uint8_t>& bytes, const std::string& part) {
  auto r = read_npy_f32(test::write_temp_file(bytes, "bad.npy"));
  ASSERT_FALSE(r.ok()) << part;
  EXPECT_NE(r.error().message.find(part), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("bad.npy"), std::string::npos) << r.error().message;
}

TEST(Npy, ReadValidation) {
  auto ok = read_npy_f32(test::write_temp_file(
      npy_with("{'shape': (3, 2), 'fortran_order': False, 'descr': '<f4'}", 6, 2), "v2.npy"));
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->shape, (std::vector<int64_t>{3, 2}));

  expect_read_error({'N', 'U', 'M'}, "bad magic");
  expect_read_error(npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 6, 3),
                    "unsupported NPY version 3");
  expect_read_error(npy_with("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 6), "dtype '<f8'");
  expect_read_error(npy_with("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", 3), "dtype '>f4'");
  expect_read_error(npy_with("{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }", 3), "fortran_order");
  expect_read_error(npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 2),
                    "shape needs 3 floats");
  expect_read_error(npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 4),
                    "shape needs 3 floats");
  expect_read_error(
      npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0),
      "shape needs");
  expect_read_error(
      npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 0),
      "overflows");
  expect_read_error(npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 0), "bad header");
  expect_read_error(npy_with("{'descr': '<f4', 'shape': (1,), }", 1), "missing");
  expect_read_error(npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 1),
                    "unexpected key");
  auto truncated = npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 1);
  truncated[8] = 0xff;  // header length past the end
  expect_read_error(truncated, "header length");
  // Every truncation of a valid file fails cleanly.
  const auto good = npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 2);
  for (size_t n = 0; n < good.size(); ++n) {
    auto r = read_npy_f32(test::write_temp_file(
        std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)), "cut.npy"));
    EXPECT_FALSE(r.ok()) << n;
  }
}

class NpyFixtures : public test::WithSharedFixtures {};

TEST_F(NpyFixtures, ReadsReferenceLogits) {
  auto r = read_npy_f32(fixtures_ / "reference" / "stories260K" / "logits.npy");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->shape, (std::vector<int64_t>{64, 512}));
  ASSERT_EQ(r->data.size(), 64u * 512);
  // Values read independently with Python's struct module.
  EXPECT_EQ(r->data[0], -6.222914695739746f);
  EXPECT_EQ(r->data[1], 8.404342651367188f);
  EXPECT_EQ(r->data[10 * 512 + 300], -3.1067256927490234f);
  EXPECT_EQ(r->data[64 * 512 - 1], -13.210875511169434f);
  for (float x : r->data) ASSERT_TRUE(std::isfinite(x));
}

}  // namespace
}  // namespace glass::formats
