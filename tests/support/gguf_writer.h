#pragma once
// A test-only GGUF writer. It emits valid files (every metadata type, nested arrays, tensors laid
// out at the chosen alignment) and, because every value is just a type id plus encoded bytes, also
// malformed ones: raw values, overridden counts, explicit tensor offsets, and the finished bytes to
// patch or truncate. Never used by the library (oracles and fixtures stay in test targets).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glass::test {

class GgufWriter {
 public:
  // Metadata value type ids, as in the file.
  enum Type : uint32_t {
    kU8 = 0,
    kI8 = 1,
    kU16 = 2,
    kI16 = 3,
    kU32 = 4,
    kI32 = 5,
    kF32 = 6,
    kBool = 7,
    kString = 8,
    kArray = 9,
    kU64 = 10,
    kI64 = 11,
    kF64 = 12,
  };
  // ggml tensor type ids used by tests.
  enum TensorType : uint32_t { kTF32 = 0, kTF16 = 1, kTQ4_0 = 2, kTQ8_0 = 8, kTQ4_K = 12, kTBF16 = 30 };

  // A value: its type id and its encoding (what follows the type id in a KV entry).
  struct Value {
    uint32_t type;
    std::vector<uint8_t> bytes;
  };
  static Value u8(uint8_t v);
  static Value i8(int8_t v);
  static Value u16(uint16_t v);
  static Value i16(int16_t v);
  static Value u32(uint32_t v);
  static Value i32(int32_t v);
  static Value f32(float v);
  static Value boolean(bool v);
  static Value string(std::string_view s);
  static Value u64(uint64_t v);
  static Value i64(int64_t v);
  static Value f64(double v);
  // An array of `items`, all of type elem_type (not checked: a mismatch is a way to write a bad file).
  static Value array(uint32_t elem_type, const std::vector<Value>& items);
  static Value string_array(const std::vector<std::string>& items);
  static Value f32_array(const std::vector<float>& items);
  static Value i32_array(const std::vector<int32_t>& items);
  // An array header claiming `count` elements followed by `payload` (e.g. nothing).
  static Value array_header(uint32_t elem_type, uint64_t count, std::vector<uint8_t> payload = {});

  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;  // GGUF order: innermost dimension first
    uint32_t type = kTF32;     // ggml type id
    std::vector<uint8_t> data;
    std::optional<uint64_t> offset;  // relative data offset; default: the next aligned position
  };

  // The file layout, for tests that patch bytes.
  struct Built {
    std::vector<uint8_t> bytes;
    std::vector<uint64_t> kv_offsets;           // start of each KV entry (its key length)
    std::vector<uint64_t> tensor_info_offsets;  // start of each tensor info (its name length)
    uint64_t data_start = 0;                    // start of the data section
  };

  explicit GgufWriter(uint32_t version = 3) : version_(version) {}

  GgufWriter& version(uint32_t v);
  // Adds a general.alignment u32 key and lays tensor data out at `a`.
  GgufWriter& alignment(uint32_t a);
  GgufWriter& kv(std::string key, Value v);
  GgufWriter& tensor(Tensor t);
  // An F32 tensor from a row-major shape, outermost first (as glass reports shapes).
  // An F32 tensor of `shape` holding `value` everywhere.
  GgufWriter& tensor_filled(std::string name, const std::vector<int64_t>& shape, float value);
  GgufWriter& tensor_f32(std::string name, const std::vector<int64_t>& shape,
                         const std::vector<float>& values);
  // Header counts written instead of the real ones.
  GgufWriter& n_tensors_override(uint64_t n);
  GgufWriter& n_kv_override(uint64_t n);

  // The file: header, KVs, tensor infos, padding, then each tensor's data padded to the alignment.
  Built build() const;

 private:
  uint32_t version_;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, Value>> kvs_;
  std::vector<Tensor> tensors_;
  std::optional<uint64_t> n_tensors_override_;
  std::optional<uint64_t> n_kv_override_;
};

// Writes `bytes` to a fresh file under the test temp dir; returns its path.
std::filesystem::path write_temp_file(const std::vector<uint8_t>& bytes, std::string_view name);

}  // namespace glass::test
