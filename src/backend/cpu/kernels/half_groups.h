#pragma once
// The repack and row lookup shared by the layouts of 16-bit weights in 16-row groups (f16x16 and
// bf16x16 in matmul_f16x16.h, bf16x16p in matmul_avx512bf16.cpp): a group holds its 16 rows' k
// elements, element j of the group's row r at pos(j, r, k); rows past the last full group stay
// row-major. Each layout differs only in pos.
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace glass::backend::cpu::kernels {

inline constexpr int64_t kHalfGroupRows = 16;

// A decode's rows (n_a <= 4) against groups [0, groups), DG at a time: tile.template operator()<RA,
// U>(q) for groups [q, q + DG), RA = n_a activation rows with U accumulators per output along k (two
// for one row, where one chain would wait on the instruction's latency; else one). Returns the
// groups done, a multiple of DG.
template <int DG, class Tile>
int64_t half_groups_decode(int64_t groups, int64_t n_a, const Tile& tile) {
  int64_t q = 0;
  for (; q + DG <= groups; q += DG) {
    switch (n_a) {
      case 1:
        tile.template operator()<1, 2>(q);
        break;
      case 2:
        tile.template operator()<2, 1>(q);
        break;
      case 3:
        tile.template operator()<3, 1>(q);
        break;
      default:
        tile.template operator()<4, 1>(q);
        break;
    }
  }
  return q;
}

// Groups [q, groups) against a prefill's rows: run.template operator()<NG>(q) for groups [q, q + NG),
// Wide groups at a time (the layout's prefill tile), then pairs, then one.
template <int Wide, class Run>
void half_groups_prefill(int64_t q, int64_t groups, const Run& run) {
  for (; q + Wide <= groups; q += Wide) run.template operator()<Wide>(q);
  for (; q + 2 <= groups; q += 2) run.template operator()<2>(q);
  if (q < groups) run.template operator()<1>(q);
}

// Rows [0, rows) of a row-major matrix of 16-bit elements into the layout, a 16 x 64 block at a time
// (both sides stay in L1); rows past the last full group copied.
template <class Pos>
void repack_half_groups(const std::byte* src, std::byte* dst, int64_t rows, int64_t k, const Pos& pos) {
  const auto* s = reinterpret_cast<const uint16_t*>(src);
  auto* d = reinterpret_cast<uint16_t*>(dst);
  const int64_t groups = rows / kHalfGroupRows;
  constexpr int64_t kCols = 64;
  for (int64_t g = 0; g < groups; ++g) {
    const uint16_t* gs = s + g * kHalfGroupRows * k;
    uint16_t* gd = d + g * kHalfGroupRows * k;
    for (int64_t j0 = 0; j0 < k; j0 += kCols) {
      const int64_t j1 = j0 + kCols < k ? j0 + kCols : k;
      for (int64_t r = 0; r < kHalfGroupRows; ++r)
        for (int64_t j = j0; j < j1; ++j) gd[pos(j, r, k)] = gs[r * k + j];
    }
  }
  const size_t done = static_cast<size_t>(groups * kHalfGroupRows * k) * 2;
  std::memcpy(dst + done, src + done, static_cast<size_t>(rows * k) * 2 - done);
}

// Row `row` of a matrix repacked by repack_half_groups with the same pos, row-major again.
template <class Pos>
void unpack_half_group_row(const std::byte* w, int64_t rows, int64_t k, int64_t row, std::byte* out,
                           const Pos& pos) {
  const auto* s = reinterpret_cast<const uint16_t*>(w);
  auto* d = reinterpret_cast<uint16_t*>(out);
  if (row >= rows / kHalfGroupRows * kHalfGroupRows) {
    std::memcpy(out, s + row * k, static_cast<size_t>(k) * 2);
    return;
  }
  const uint16_t* g = s + row / kHalfGroupRows * kHalfGroupRows * k;
  for (int64_t j = 0; j < k; ++j) d[j] = g[pos(j, row % kHalfGroupRows, k)];
}

}  // namespace glass::backend::cpu::kernels
