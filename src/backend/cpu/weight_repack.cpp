#include "backend/cpu/weight_repack.h"

#include <algorithm>
#include <chrono>

namespace glass::backend::cpu {

const std::byte* WeightRepacks::get(const void* src, size_t bytes, int64_t rows, int64_t k,
                                    const kernels::MatmulKernel& mk, ThreadPool& pool) {
  std::lock_guard lock(mu_);
  if (auto it = copies_.find(src); it != copies_.end()) return it->second.get();
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<std::byte[]> copy(new std::byte[bytes]);  // every byte is written below
  const size_t row_bytes = bytes / static_cast<size_t>(rows);
  const int64_t align = mk.row_align, groups = (rows + align - 1) / align;
  const auto* in = static_cast<const std::byte*>(src);
  parallel_for(pool, groups, 64, [&](int64_t g0, int64_t g1, int) {
    const int64_t r0 = g0 * align, r1 = std::min(g1 * align, rows);
    const size_t at = static_cast<size_t>(r0) * row_bytes;
    mk.repack(in + at, copy.get() + at, r1 - r0, k);
  });
  totals_.weights++;
  totals_.bytes += bytes;
  totals_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return copies_.emplace(src, std::move(copy)).first->second.get();
}

RepackTotals WeightRepacks::totals() const {
  std::lock_guard lock(mu_);
  return totals_;
}

}  // namespace glass::backend::cpu
