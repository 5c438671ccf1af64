// .npy reader: header dict, version, shape and data size against the bytes (formats/npy.h).
#include <cstddef>
#include <cstdint>
#include <span>

#include "formats/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto a = glass::formats::parse_npy_f32(std::span<const uint8_t>(data, size), "fuzz.npy");
  if (a.ok()) {
    // A parse that succeeds must describe exactly the floats it returns.
    size_t n = 1;
    for (int64_t d : a->shape) n *= static_cast<size_t>(d);
    if (n != a->data.size()) __builtin_trap();
  }
  return 0;
}
