#include "backend/cpu/weight_repack.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>

namespace glass::backend::cpu {

WeightRepacks::Copy::~Copy() {
  if (map != nullptr) ::munmap(map, map_bytes);
}

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

std::unique_ptr<WeightRepacks::Copy> allocate(size_t bytes);

}  // namespace

Result<const std::byte*> WeightRepacks::get(const void* src, size_t bytes, int64_t rows, int64_t k,
                                            const kernels::MatmulKernel& mk, ThreadPool& pool) {
  std::lock_guard lock(mu_);
  if (auto it = copies_.find(src); it != copies_.end())
    return static_cast<const std::byte*>(it->second->data);
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Copy> copy = allocate(bytes);
  if (copy == nullptr)
    return make_error(
        ErrorCode::Internal,
        fmt::format("cpu: no memory for a {:.1f} MiB repacked weight (run with --no-repack to read "
                    "weights from the file mapping)",
                    static_cast<double>(bytes) / (1 << 20)));
  copy->kernel = &mk;
  const size_t row_bytes = bytes / static_cast<size_t>(rows);
  const int64_t align = mk.row_align, groups = (rows + align - 1) / align;
  const auto* in = static_cast<const std::byte*>(src);
  parallel_for(pool, groups, 64, [&](int64_t g0, int64_t g1, int) {
    const int64_t r0 = g0 * align, r1 = std::min(g1 * align, rows);
    const size_t at = static_cast<size_t>(r0) * row_bytes;
    mk.repack(in + at, copy->data + at, r1 - r0, k);
    // Part by part, so that the model's memory never holds two copies of more than a part.
    if (copied_) copied_(in + at, static_cast<size_t>(r1 - r0) * row_bytes);
  });
  totals_.weights++;
  totals_.bytes += bytes;
  totals_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<const std::byte*>(copies_.emplace(src, std::move(copy)).first->second->data);
}

WeightRepacks::Found WeightRepacks::find(const void* src) const {
  std::lock_guard lock(mu_);
  const auto it = copies_.find(src);
  if (it == copies_.end()) return {};
  return {it->second->data, it->second->kernel};
}

RepackTotals WeightRepacks::totals() const {
  std::lock_guard lock(mu_);
  return totals_;
}

namespace {

std::unique_ptr<WeightRepacks::Copy> allocate(size_t bytes) {
  auto c = std::make_unique<WeightRepacks::Copy>();
  c->map_bytes = bytes + kHugePage;
  c->map = ::mmap(nullptr, c->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (c->map == MAP_FAILED) return nullptr;
  const auto p = reinterpret_cast<uintptr_t>(c->map);
  c->data = static_cast<std::byte*>(c->map) + ((kHugePage - p % kHugePage) % kHugePage);
  ::madvise(c->data, bytes, MADV_HUGEPAGE);  // advice only: without THP it is 4 KiB pages
  return c;
}

}  // namespace

}  // namespace glass::backend::cpu
