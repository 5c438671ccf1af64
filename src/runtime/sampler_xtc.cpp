// XTC, "exclude top choices" (p-e-w, text-generation-webui #6335; llama.cpp's llama_sampler_xtc):
// with probability `probability` per token, every candidate at or above `threshold` except the
// least likely of them is removed, so the text leaves its most predictable path while keeping one
// viable choice. The coin is the sampler's own seeded PRNG (not the final draw's), so turning XTC on
// does not shift the draws of the rest of the chain on steps where it does nothing.
#include "runtime/sampler.h"
#include "runtime/sampler_internal.h"
#include "runtime/sampler_rng.h"

namespace glass::runtime {
namespace {

class Xtc final : public Sampler {
 public:
  Xtc(float probability, float threshold, uint64_t seed)
      : probability_(probability), threshold_(threshold), seed_(seed), rng_(seed) {}

  std::string_view name() const override { return "xtc"; }

  void apply(Candidates& c) override {
    if (probability_ <= 0.0f || threshold_ > 0.5f || c.items.size() < 2) return;
    if (rng_.uniform() >= probability_) return;
    detail::softmax(c);  // sorted, most likely first
    size_t last = 0;     // the least likely candidate still at or above the threshold
    while (last + 1 < c.items.size() && c.items[last + 1].p >= threshold_) ++last;
    if (last == 0) return;  // fewer than two above it: nothing to exclude
    c.items.erase(c.items.begin(), c.items.begin() + static_cast<std::ptrdiff_t>(last));
  }

  void reset() override { rng_.seed(seed_); }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<Xtc>(*this); }

  // "s0 s1 s2 s3": the coin's state.
  std::string save_state() const override {
    std::string out;
    for (const uint64_t w : rng_.state()) detail::put_u64(out, w);
    return out;
  }
  Status load_state(std::string_view state) override {
    detail::StateReader in(state);
    SamplerRng::State s{};
    bool ok = true;
    for (uint64_t& w : s) ok = ok && in.next(w);
    if (!ok || !in.done() || !rng_.set_state(s))
      return make_error(ErrorCode::InvalidArgument,
                        "sampler 'xtc': state must be four state words, not all zero, got '" +
                            std::string(state.substr(0, 120)) + "'");
    return {};
  }

 private:
  float probability_, threshold_;
  uint64_t seed_;
  SamplerRng rng_;
};

}  // namespace

std::unique_ptr<Sampler> make_xtc(float probability, float threshold, uint64_t seed) {
  return std::make_unique<Xtc>(probability, threshold, seed);
}

}  // namespace glass::runtime
