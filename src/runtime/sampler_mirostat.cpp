// Mirostat (Basu et al. 2021, "Mirostat: A Neural Text Decoding Algorithm that Directly Controls
// Perplexity"; llama.cpp's llama_sampler_mirostat / _v2): a final sampler that keeps the observed
// surprise -log2 p(token) near a target tau by feedback on a bound mu (starting at 2 tau, lowered by
// eta * (surprise - tau) after each draw).
//   v1: estimates the Zipf exponent s of the sorted probabilities from the top m = 100 tokens
//       (least squares of log(p_i / p_i+1) on log((i + 2) / (i + 1))) and keeps the top k tokens,
//       k = (eps 2^mu / (1 - N^-eps))^(1/s), eps = s - 1, N the vocabulary size;
//   v2: keeps the tokens whose surprise is at most mu (at least the most likely one).
// It then draws from the kept tokens' renormalized softmax with its own seeded PRNG.
#include <algorithm>
#include <bit>
#include <cmath>

#include "runtime/sampler.h"
#include "runtime/sampler_internal.h"
#include "runtime/sampler_rng.h"

namespace glass::runtime {
namespace {

constexpr size_t kZipfTokens = 100;  // llama.cpp's m

class Mirostat final : public Sampler {
 public:
  Mirostat(int version, float tau, float eta, size_t vocab_size, uint64_t seed)
      : version_(version),
        tau_(tau),
        eta_(eta),
        n_vocab_(vocab_size),
        seed_(seed),
        mu_(2.0f * tau),
        rng_(seed) {}

  std::string_view name() const override { return version_ == 1 ? "mirostat" : "mirostat_v2"; }

  void apply(Candidates& c) override {
    detail::softmax(c);
    size_t keep = c.items.size();
    if (version_ == 1) {
      keep = v1_k(c);
    } else {
      keep = 0;
      while (keep < c.items.size() && !(-std::log2(c.items[keep].p) > mu_)) ++keep;
    }
    c.items.resize(std::clamp<size_t>(keep, 1, c.items.size()));
    detail::softmax(c);
    const Candidate& pick = draw(c);
    c.selected = pick.id;
    mu_ -= eta_ * (-std::log2(pick.p) - tau_);
  }

  void reset() override {
    mu_ = 2.0f * tau_;
    rng_.seed(seed_);
  }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<Mirostat>(*this); }

  // "mu_bits s0 s1 s2 s3": mu as its IEEE bits (exact), then the PRNG.
  std::string save_state() const override {
    std::string out;
    detail::put_u64(out, std::bit_cast<uint32_t>(mu_));
    for (const uint64_t w : rng_.state()) detail::put_u64(out, w);
    return out;
  }
  Status load_state(std::string_view state) override {
    detail::StateReader in(state);
    uint64_t mu = 0;
    SamplerRng::State s{};
    bool ok = in.next(mu) && mu <= 0xffffffffu;
    for (uint64_t& w : s) ok = ok && in.next(w);
    if (!ok || !in.done() || !rng_.set_state(s))
      return make_error(ErrorCode::InvalidArgument,
                        "sampler '" + std::string(name()) +
                            "': state must be mu's bits and four state words, got '" +
                            std::string(state.substr(0, 120)) + "'");
    mu_ = std::bit_cast<float>(static_cast<uint32_t>(mu));
    return {};
  }

 private:
  // v1's k from the estimated Zipf exponent; the whole list when the estimate is not usable (one
  // candidate, zero probabilities).
  size_t v1_k(const Candidates& c) const {
    double sum_tb = 0.0, sum_tt = 0.0;
    for (size_t i = 0; i + 1 < kZipfTokens && i + 1 < c.items.size(); ++i) {
      const double t = std::log(static_cast<double>(i + 2) / static_cast<double>(i + 1));
      const double b = std::log(static_cast<double>(c.items[i].p) / static_cast<double>(c.items[i + 1].p));
      sum_tb += t * b;
      sum_tt += t * t;
    }
    const double s = sum_tb / sum_tt, eps = s - 1.0;
    const double k = std::pow(
        eps * std::exp2(static_cast<double>(mu_)) / (1.0 - std::pow(static_cast<double>(n_vocab_), -eps)),
        1.0 / s);
    if (!std::isfinite(k)) return c.items.size();
    return k < 1.0 ? 1 : k >= static_cast<double>(c.items.size()) ? c.items.size() : static_cast<size_t>(k);
  }

  // Inverse CDF over the candidates' p, in order.
  const Candidate& draw(const Candidates& c) {
    const double target = rng_.uniform();
    double cum = 0.0;
    for (const Candidate& x : c.items) {
      cum += x.p;
      if (target < cum) return x;
    }
    for (auto it = c.items.rbegin(); it != c.items.rend(); ++it)
      if (it->p > 0.0f) return *it;
    return c.items.front();
  }

  int version_;
  float tau_, eta_;
  size_t n_vocab_;
  uint64_t seed_;
  float mu_;
  SamplerRng rng_;
};

}  // namespace

std::unique_ptr<Sampler> make_mirostat(int version, float tau, float eta, size_t vocab_size, uint64_t seed) {
  return std::make_unique<Mirostat>(version, tau, eta, vocab_size, seed);
}

}  // namespace glass::runtime
