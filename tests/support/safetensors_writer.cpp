#include "support/safetensors_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/scratch_dir.h"

namespace glass::test {

SafetensorsWriter& SafetensorsWriter::tensor(Tensor t) {
  tensors_.push_back(std::move(t));
  return *this;
}

SafetensorsWriter& SafetensorsWriter::tensor_f32(std::string name, std::vector<int64_t> shape,
                                                 const std::vector<float>& values) {
  std::vector<uint8_t> data(values.size() * 4);
  if (!values.empty()) std::memcpy(data.data(), values.data(), data.size());
  return tensor({std::move(name), "F32", std::move(shape), std::move(data), std::nullopt});
}

SafetensorsWriter& SafetensorsWriter::zeros_f32(std::string name, std::vector<int64_t> shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return tensor({std::move(name), "F32", std::move(shape), std::vector<uint8_t>(n * 4, 0), std::nullopt});
}

SafetensorsWriter& SafetensorsWriter::metadata(std::string key, std::string value) {
  metadata_.emplace_back(std::move(key), std::move(value));
  return *this;
}

std::string SafetensorsWriter::header() const {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata_.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata_) m[k] = v;
    h["__metadata__"] = m;
  }
  uint64_t at = 0;
  for (const Tensor& t : tensors_) {
    const std::array<uint64_t, 2> off = t.offsets.value_or(std::array<uint64_t, 2>{at, at + t.data.size()});
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off[0], off[1]}}};
    at += t.data.size();
  }
  return h.dump();
}

std::vector<uint8_t> SafetensorsWriter::build() const {
  std::vector<uint8_t> data;
  for (const Tensor& t : tensors_) data.insert(data.end(), t.data.begin(), t.data.end());
  return from_header(header(), data);
}

std::vector<uint8_t> SafetensorsWriter::from_header(std::string_view header,
                                                    const std::vector<uint8_t>& data) {
  std::string h(header);
  while ((8 + h.size()) % 8 != 0) h += ' ';  // the reference writer pads with spaces
  const uint64_t n = h.size();
  std::vector<uint8_t> out(8 + h.size() + data.size());
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, h.data(), h.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + h.size(), data.data(), data.size());
  return out;
}

std::filesystem::path make_temp_dir(std::string_view name) {
  const auto dir = scratch_dir() / std::string(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  f.close();
  EXPECT_TRUE(f.good()) << "writing " << path;
}

void write_text(const std::filesystem::path& path, std::string_view text) {
  write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

}  // namespace glass::test
