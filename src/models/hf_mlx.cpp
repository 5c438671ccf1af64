#include "models/hf_mlx.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "formats/quant_blocks.h"
#include "glass/half.h"

namespace glass::models {
namespace {

constexpr float kF16Max = 65504.0f;

std::string shape_text(const formats::SafetensorsTensor& t) {
  return fmt::format("[{}]", fmt::join(t.shape, ", "));
}

// A scale or bias as a float, whatever float dtype the checkpoint stores them in.
float value_at(const formats::SafetensorsTensor& t, int64_t i) {
  const auto* p = static_cast<const std::byte*>(t.data);
  if (t.dtype == "F32") {
    float v = 0;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
  uint16_t h = 0;
  std::memcpy(&h, p + 2 * i, 2);
  return t.dtype == "BF16" ? bf16_to_f32(h) : f16_to_f32(h);
}

struct Triplet {
  const formats::SafetensorsTensor* weight = nullptr;
  const formats::SafetensorsTensor* scales = nullptr;
  const formats::SafetensorsTensor* biases = nullptr;
};

Result<formats::SafetensorsTensor> to_q4_1(const std::string& module, const Triplet& t, int64_t group,
                                           HfOwnedTensors& owned, std::string_view where) {
  const formats::SafetensorsTensor &w = *t.weight, &s = *t.scales, &b = *t.biases;
  auto bad = [&](const std::string& what) {
    return make_error(ErrorCode::InvalidFile, fmt::format("{}: MLX weight '{}': {}", where, module, what));
  };
  if (w.dtype != "U32" || w.shape.size() != 2)
    return bad(fmt::format("{}.weight is {} {}, not a U32 matrix", module, w.dtype, shape_text(w)));
  for (const formats::SafetensorsTensor* p : {&s, &b})
    if ((p->dtype != "F32" && p->dtype != "F16" && p->dtype != "BF16") || p->shape != s.shape)
      return bad(fmt::format("{} is {} {}; scales and biases are float matrices of one shape", p->name,
                             p->dtype, shape_text(*p)));
  const int64_t rows = w.shape[0], words = w.shape[1];
  if (s.shape.size() != 2 || s.shape[0] != rows || s.shape[1] <= 0)
    return bad(fmt::format("scales {} do not have the weight's {} rows", shape_text(s), rows));
  const int64_t groups = s.shape[1], cols = groups * group;
  if (words * 32 != cols * 4)
    return bad(fmt::format("{} words a row hold {} 4-bit values, but {} groups of {} are {}", words,
                           words * 8, groups, group, cols));
  const int64_t blocks_per_group = group / formats::quant::kQK;
  std::vector<std::byte>& buf = owned.buffers.emplace_back(
      static_cast<size_t>(rows * groups * blocks_per_group) * sizeof(formats::quant::BlockQ4_1));
  auto* out = reinterpret_cast<formats::quant::BlockQ4_1*>(buf.data());
  const auto* packed =
      static_cast<const uint8_t*>(w.data);  // little-endian words: nibble e of a row at byte e/2
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = packed + r * words * 4;
    for (int64_t g = 0; g < groups; ++g) {
      const float scale = value_at(s, r * groups + g), bias = value_at(b, r * groups + g);
      if (!std::isfinite(scale) || !std::isfinite(bias) || std::fabs(scale) > kF16Max ||
          std::fabs(bias) > kF16Max)
        return bad(fmt::format("row {}, group {}: scale {} / bias {} do not fit f16 (Q4_1's block scale)", r,
                               g, scale, bias));
      const uint16_t d = f32_to_f16(scale), m = f32_to_f16(bias);
      for (int64_t k = 0; k < blocks_per_group; ++k, ++out) {
        std::memcpy(out->d, &d, 2);
        std::memcpy(out->m, &m, 2);
        const int64_t first = g * group + k * formats::quant::kQK;
        auto nibble = [&](int64_t e) { return (row[e / 2] >> (4 * (e % 2))) & 0xF; };
        for (int64_t j = 0; j < formats::quant::kQK / 2; ++j)
          out->qs[j] =
              static_cast<uint8_t>(nibble(first + j) | (nibble(first + j + formats::quant::kQK / 2) << 4));
      }
    }
  }
  formats::SafetensorsTensor q;
  q.name = module + ".weight";
  q.dtype = "Q4_1";
  q.graph_dtype = graph::DType::Q4_1;
  q.shape = {rows, cols};
  q.nbytes = buf.size();
  q.data = buf.data();
  return q;
}

}  // namespace

Result<SafetensorsTensors> mlx_to_q4_1(const SafetensorsTensors& tensors, const formats::MlxQuantization& q,
                                       HfOwnedTensors& owned, std::string_view where) {
  std::map<std::string, Triplet, std::less<>> triplets;
  for (const auto& [name, t] : tensors) {
    for (const char* part : {".scales", ".biases"}) {
      if (!name.ends_with(part)) continue;
      const std::string module = name.substr(0, name.size() - std::strlen(part));
      Triplet& tr = triplets[module];
      (std::string_view(part) == ".scales" ? tr.scales : tr.biases) = t;
    }
  }
  SafetensorsTensors out = tensors;
  for (auto& [module, tr] : triplets) {
    const auto w = tensors.find(module + ".weight");
    tr.weight = w == tensors.end() ? nullptr : w->second;
    if (tr.weight == nullptr || tr.scales == nullptr || tr.biases == nullptr)
      return make_error(
          ErrorCode::InvalidFile,
          fmt::format("{}: MLX weight '{}' needs .weight, .scales and .biases; it has no {}", where, module,
                      tr.weight == nullptr   ? ".weight"
                      : tr.scales == nullptr ? ".scales"
                                             : ".biases"));
    int64_t group = q.group_size, bits = q.bits;
    if (const auto m = q.modules.find(module); m != q.modules.end()) {
      group = m->second.group_size, bits = m->second.bits;
      if (bits == 0)
        return make_error(
            ErrorCode::InvalidFile,
            fmt::format("{}: '{}' is quantized in the checkpoint but not in config.json", where, module));
    }
    if (bits != 4)
      return make_error(
          ErrorCode::Unsupported,
          fmt::format("{}: MLX weight '{}' has {}-bit values (4-bit are supported)", where, module, bits));
    if (group != 32 && group != 64 && group != 128)
      return make_error(ErrorCode::Unsupported,
                        fmt::format("{}: MLX weight '{}' has groups of {} (32, 64 or 128 are supported)",
                                    where, module, group));
    auto made = to_q4_1(module, tr, group, owned, where);
    if (!made) return made.error();
    out.erase(module + ".scales");
    out.erase(module + ".biases");
    out[module + ".weight"] = &owned.tensors.emplace_back(std::move(*made));
  }
  return out;
}

}  // namespace glass::models
