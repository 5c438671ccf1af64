#pragma once
// One-time weight repacks: a matmul kernel may multiply a weight faster in its own layout (Q4_0
// in 16-row groups for AVX-512 VNNI decode, kernels/matmul_q4_0x16.h). The cpu plan asks for the
// repacked copy when it is compiled; the copy is made once per weight (split over the thread pool)
// and shared by every plan of the backend (prefill and decode). The original stays in the file
// mapping, untouched; the backend's owner is told of each copy (WeightCopied, backend.h) so that it
// can drop the original's pages and the model holds one copy in memory, not two. Metered: how many
// weights, bytes and time, shown in the plan's rewrite log (`glass graph --after-rewrites`).
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "backend/backend.h"
#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/thread_pool.h"
#include "glass/result.h"

namespace glass::backend::cpu {

struct RepackTotals {
  size_t weights = 0;
  size_t bytes = 0;
  double seconds = 0;
};

class WeightRepacks {
 public:
  explicit WeightRepacks(WeightCopied copied = {}) : copied_(std::move(copied)) {}

  // Anonymous memory on 2 MiB-aligned transparent huge pages where the kernel allows them: a
  // fault per 2 MiB instead of per 4 KiB while repacking, and fewer TLB misses while streaming.
  struct Copy {
    void* map = nullptr;
    size_t map_bytes = 0;
    std::byte* data = nullptr;
    const kernels::MatmulKernel* kernel = nullptr;  // the layout's kernel (its unpack_row)
    Copy() = default;
    Copy(const Copy&) = delete;
    Copy& operator=(const Copy&) = delete;
    ~Copy();
  };
  // The copy of the rows x k matrix at src (bytes long) in `mk`'s layout, made on first use.
  Result<const std::byte*> get(const void* src, size_t bytes, int64_t rows, int64_t k,
                               const kernels::MatmulKernel& mk, ThreadPool& pool);
  // The copy of the weight at src if one was made, and the kernel whose layout it is; null data
  // if none (a row lookup of a tied embedding then reads the original).
  struct Found {
    const std::byte* data = nullptr;
    const kernels::MatmulKernel* kernel = nullptr;
  };
  Found find(const void* src) const;
  RepackTotals totals() const;

 private:
  WeightCopied copied_;
  mutable std::mutex mu_;
  std::map<const void*, std::unique_ptr<Copy>> copies_;
  RepackTotals totals_;
};

}  // namespace glass::backend::cpu
