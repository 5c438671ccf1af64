#pragma once
// The sampling PRNG: xoshiro256** 1.0 (Blackman and Vigna, "Scrambled linear pseudorandom number
// generators", 2021; https://prng.di.unimi.it/xoshiro256starstar.c), its 256-bit state filled from
// the 64-bit seed by splitmix64 as its authors advise. Everything is fixed-width integer
// arithmetic and uniform() maps the top 53 bits to [0, 1) exactly, so one seed gives the same
// draws on every platform and compiler (std::uniform_real_distribution is
// implementation-defined). The state is four words, cheap to snapshot.
#include <array>
#include <cstdint>

namespace glass::runtime {

class SamplerRng {
 public:
  using State = std::array<uint64_t, 4>;

  explicit SamplerRng(uint64_t seed) { this->seed(seed); }

  void seed(uint64_t seed) {
    for (uint64_t& w : s_) w = splitmix64(seed);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1): the top 53 bits times 2^-53 (every value a multiple of 2^-53).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  const State& state() const { return s_; }
  // Rejects the all-zero state, the one xoshiro can never leave.
  bool set_state(const State& s) {
    if (s[0] == 0 && s[1] == 0 && s[2] == 0 && s[3] == 0) return false;
    s_ = s;
    return true;
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  // Advances `x` and returns the next splitmix64 output (Steele, Lea and Flood 2014).
  static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  State s_{};
};

}  // namespace glass::runtime
