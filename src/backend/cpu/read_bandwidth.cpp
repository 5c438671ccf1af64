#include "backend/cpu/read_bandwidth.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>

#include "backend/cpu/isa.h"

namespace glass::backend::cpu {
namespace {

// The sum keeps the loads alive; its value is meaningless.
uint64_t read_portable(const uint64_t* p, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i + 4 <= n; i += 4) {
    a += p[i];
    b ^= p[i + 1];
    c += p[i + 2];
    d ^= p[i + 3];
  }
  return a + b + c + d;
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) uint64_t read_avx512(const uint64_t* p, size_t n) {
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  for (size_t i = 0; i + 32 <= n; i += 32) {  // 256 bytes per iteration, four streams of loads
    a = _mm512_add_epi64(a, _mm512_load_si512(p + i));
    b = _mm512_xor_si512(b, _mm512_load_si512(p + i + 8));
    c = _mm512_add_epi64(c, _mm512_load_si512(p + i + 16));
    d = _mm512_xor_si512(d, _mm512_load_si512(p + i + 24));
  }
  uint64_t lanes[8];
  _mm512_storeu_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d)));
  uint64_t sum = 0;
  for (uint64_t v : lanes) sum += v;
  return sum;
}

// Four streams in lockstep, n words each.
__attribute__((target("avx512f"))) uint64_t read_avx512_four(const uint64_t* const* s, size_t n) {
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    a = _mm512_add_epi64(a, _mm512_load_si512(s[0] + i));
    b = _mm512_xor_si512(b, _mm512_load_si512(s[1] + i));
    c = _mm512_add_epi64(c, _mm512_load_si512(s[2] + i));
    d = _mm512_xor_si512(d, _mm512_load_si512(s[3] + i));
  }
  uint64_t lanes[8];
  _mm512_storeu_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d)));
  uint64_t sum = 0;
  for (uint64_t v : lanes) sum += v;
  return sum;
}
#endif

uint64_t read_portable_four(const uint64_t* const* s, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i < n; ++i) {
    a += s[0][i];
    b ^= s[1][i];
    c += s[2][i];
    d ^= s[3][i];
  }
  return a + b + c + d;
}

uint64_t read_four(const uint64_t* const* s, size_t n, bool wide) {
#if defined(__x86_64__)
  return wide ? read_avx512_four(s, n) : read_portable_four(s, n);
#else
  (void)wide;
  return read_portable_four(s, n);
#endif
}

uint64_t read_blocks(const uint64_t* p, size_t words, bool wide) {
#if defined(__x86_64__)
  return wide ? read_avx512(p, words) : read_portable(p, words);
#else
  (void)wide;
  return read_portable(p, words);
#endif
}

}  // namespace

ReadBandwidth measure_read_bandwidth(ThreadPool& pool, size_t bytes, int passes) {
  constexpr size_t kAlign = 64, kWords = 32;
  const size_t n = std::max<size_t>(bytes / sizeof(uint64_t) / kWords, 1) * kWords;
  std::unique_ptr<uint64_t[]> raw(new uint64_t[n + kAlign / sizeof(uint64_t)]);
  auto* p =
      reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(raw.get()) + kAlign - 1) / kAlign * kAlign);
  for (size_t i = 0; i < n; ++i) p[i] = i;  // real pages, not the shared zero page
#if defined(__x86_64__)
  const bool wide = detect_isa() >= Isa::Avx512;
#else
  const bool wide = false;
#endif
  // The decode matvec's split: a few chunks per thread, handed out dynamically.
  const auto blocks = static_cast<int64_t>(n / kWords);
  const int64_t grain = std::max<int64_t>(1, blocks / (static_cast<int64_t>(pool.size()) * 8));
  std::atomic<uint64_t> sink{0};
  ReadBandwidth r;
  r.bytes = n * sizeof(uint64_t);
  r.passes = std::max(passes, 1);
  r.n_threads = pool.size();
  double total = 0;
  for (const bool four : {false, true}) {
    for (int pass = -1; pass < r.passes; ++pass) {
      const auto t0 = std::chrono::steady_clock::now();
      parallel_for(pool, blocks, grain, [&](int64_t b0, int64_t b1, int) {
        const uint64_t* q = p + static_cast<size_t>(b0) * kWords;
        const auto nb = static_cast<size_t>(b1 - b0);
        uint64_t sum = 0;
        size_t done = 0;
        if (four) {  // the chunk's quarters in lockstep
          const size_t quarter = nb / 4;
          const uint64_t* streams[4] = {q, q + quarter * kWords, q + 2 * quarter * kWords,
                                        q + 3 * quarter * kWords};
          sum += read_four(streams, quarter * kWords, wide);
          done = 4 * quarter;
        }
        sum += read_blocks(q + done * kWords, (nb - done) * kWords, wide);
        sink.fetch_add(sum, std::memory_order_relaxed);
      });
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (pass < 0) continue;
      const double gbs = static_cast<double>(r.bytes) / s / 1e9;
      r.best_gbs = std::max(r.best_gbs, gbs);
      if (four) {
        total += gbs;
      } else {
        r.one_stream_best_gbs = std::max(r.one_stream_best_gbs, gbs);
      }
    }
  }
  r.mean_gbs = total / r.passes;
  r.checksum = sink.load();
  return r;
}

}  // namespace glass::backend::cpu
