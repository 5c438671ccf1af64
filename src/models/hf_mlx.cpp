#include "models/hf_mlx.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "formats/quant_blocks.h"
#include "glass/half.h"

namespace glass::models {
namespace {

std::string shape_text(const formats::SafetensorsTensor& t) {
  return fmt::format("[{}]", fmt::join(t.shape, ", "));
}

struct Triplet {
  const formats::SafetensorsTensor* weight = nullptr;
  const formats::SafetensorsTensor* scales = nullptr;
  const formats::SafetensorsTensor* biases = nullptr;
};

// Whether every scale and bias of the triplet is an f16 value (Q4_1 stores them as f16).
bool scales_fit_f16(const formats::SafetensorsTensor& s, const formats::SafetensorsTensor& b) {
  const int64_t n = s.shape[0] * s.shape[1];
  for (int64_t i = 0; i < n; ++i)
    for (const float v : {formats::float_element(s, i), formats::float_element(b, i)})
      if (f16_to_f32(f32_to_f16(v)) != v) return false;
  return true;
}

// The triplet's rows as Q4_1 (4-bit values whose scales and biases are f16 values) or Q8_A (8-bit
// values, and 4-bit ones whose scales or biases f16 would round), one block of 32 per half, quarter
// or whole group: the same numbers either way (hf_mlx.h).
Result<formats::SafetensorsTensor> convert(const std::string& module, const Triplet& t, int64_t group,
                                           int64_t bits, HfOwnedTensors& owned, std::string_view where) {
  namespace quant = formats::quant;
  const formats::SafetensorsTensor &w = *t.weight, &s = *t.scales, &b = *t.biases;
  auto bad = [&](const std::string& what) {
    return make_error(ErrorCode::InvalidFile, fmt::format("{}: MLX weight '{}': {}", where, module, what));
  };
  if (w.dtype != "U32" || w.shape.size() != 2)
    return bad(fmt::format("{}.weight is {} {}, not a U32 matrix", module, w.dtype, shape_text(w)));
  auto is_float = [](const formats::SafetensorsTensor& x) {
    return x.graph_dtype == graph::DType::F32 || x.graph_dtype == graph::DType::F16 ||
           x.graph_dtype == graph::DType::BF16;
  };
  for (const formats::SafetensorsTensor* p : {&s, &b})
    if (!is_float(*p) || p->shape != s.shape)
      return bad(fmt::format("{} is {} {}; scales and biases are float matrices of one shape", p->name,
                             p->dtype, shape_text(*p)));
  const int64_t rows = w.shape[0], words = w.shape[1];
  if (s.shape.size() != 2 || s.shape[0] != rows || s.shape[1] <= 0)
    return bad(fmt::format("scales {} do not have the weight's {} rows", shape_text(s), rows));
  const int64_t groups = s.shape[1], cols = groups * group;
  if (words * 32 != cols * bits)
    return bad(fmt::format("{} words a row hold {} {}-bit values, but {} groups of {} are {}", words,
                           words * 32 / bits, bits, groups, group, cols));
  const bool four = bits == 4;
  const bool q4_1 = four && scales_fit_f16(s, b);
  const int64_t blocks = rows * cols / quant::kQK;
  const size_t block_bytes = q4_1 ? sizeof(quant::BlockQ4_1) : sizeof(quant::BlockQ8_A);
  std::vector<std::byte>& buf = owned.buffers.emplace_back(static_cast<size_t>(blocks) * block_bytes);
  std::byte* out = buf.data();
  // Little-endian words, the first value in the lowest bits: value e of a row is nibble e % 2 of
  // byte e / 2 (4-bit) or byte e (8-bit).
  const auto* packed = static_cast<const uint8_t*>(w.data);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = packed + r * words * 4;
    auto q = [&](int64_t e) { return four ? (row[e / 2] >> (4 * (e % 2))) & 0xF : row[e]; };
    for (int64_t g = 0; g < groups; ++g) {
      const float scale = formats::float_element(s, r * groups + g),
                  bias = formats::float_element(b, r * groups + g);
      const float offset = bias + 128.0f * scale;  // Q8_A's m: u - 128 is a signed byte
      if (!std::isfinite(scale) || !std::isfinite(bias) || !std::isfinite(offset))
        return bad(fmt::format("row {}, group {}: scale {} / bias {} are not finite", r, g, scale, bias));
      for (int64_t first = g * group; first < (g + 1) * group; first += quant::kQK, out += block_bytes) {
        if (q4_1) {
          quant::BlockQ4_1 blk{};
          quant::store_f16(blk.d, scale);
          quant::store_f16(blk.m, bias);
          for (int64_t j = 0; j < quant::kQK / 2; ++j)
            blk.qs[j] = static_cast<uint8_t>(q(first + j) | (q(first + j + quant::kQK / 2) << 4));
          std::memcpy(out, &blk, sizeof blk);
          continue;
        }
        quant::BlockQ8_A blk{};
        quant::store_f32(blk.d, scale);
        quant::store_f32(blk.m, offset);
        for (int64_t j = 0; j < quant::kQK; ++j) blk.qs[j] = static_cast<int8_t>(q(first + j) - 128);
        std::memcpy(out, &blk, sizeof blk);
      }
    }
  }
  formats::SafetensorsTensor qt;
  qt.name = module + ".weight";
  qt.dtype = q4_1 ? "Q4_1" : "Q8_A";
  qt.graph_dtype = q4_1 ? graph::DType::Q4_1 : graph::DType::Q8_A;
  qt.shape = {rows, cols};
  qt.nbytes = buf.size();
  qt.data = buf.data();
  return qt;
}

}  // namespace

Result<SafetensorsTensors> mlx_to_glass(
    const SafetensorsTensors& tensors, const formats::MlxQuantization& q, HfOwnedTensors& owned,
    std::string_view where, const std::function<void(const formats::SafetensorsTensor&)>& read_once) {
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
    if (bits != 4 && bits != 8)
      return make_error(ErrorCode::Unsupported,
                        fmt::format("{}: MLX weight '{}' has {}-bit values (4 and 8 bits are supported)",
                                    where, module, bits));
    if (group != 32 && group != 64 && group != 128)
      return make_error(ErrorCode::Unsupported,
                        fmt::format("{}: MLX weight '{}' has groups of {} (32, 64 or 128 are supported)",
                                    where, module, group));
    auto made = convert(module, tr, group, bits, owned, where);
    if (!made) return made.error();
    if (read_once)
      for (const formats::SafetensorsTensor* t : {tr.weight, tr.scales, tr.biases}) read_once(*t);
    out.erase(module + ".scales");
    out.erase(module + ".biases");
    out[module + ".weight"] = &owned.tensors.emplace_back(std::move(*made));
  }
  return out;
}

}  // namespace glass::models
