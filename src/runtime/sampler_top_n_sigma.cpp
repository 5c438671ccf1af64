// Top-n-sigma (Tang et al. 2024, "Top-nσ: Not All Logits Are You Need"; llama.cpp's
// llama_sampler_top_n_sigma): logits of the informative tokens stand out of a roughly normal bulk,
// so keeping those within n standard deviations of the best is a truncation that does not depend on
// the temperature. Mean and deviation are over the finite logits (banned tokens do not count).
#include <algorithm>
#include <cmath>

#include "runtime/sampler.h"

namespace glass::runtime {
namespace {

class TopNSigma final : public Sampler {
 public:
  explicit TopNSigma(float n) : n_(n) {}
  std::string_view name() const override { return "top_n_sigma"; }

  void apply(Candidates& c) override {
    if (n_ <= 0.0f || c.items.size() <= 1) return;
    double sum = 0.0, max = -INFINITY;
    size_t count = 0;
    for (const Candidate& x : c.items)
      if (x.logit != -INFINITY) {
        sum += x.logit;
        max = std::max(max, static_cast<double>(x.logit));
        ++count;
      }
    if (count == 0) return;
    const double mean = sum / static_cast<double>(count);
    double var = 0.0;
    for (const Candidate& x : c.items)
      if (x.logit != -INFINITY) var += (x.logit - mean) * (x.logit - mean);
    const double cut = max - n_ * std::sqrt(var / static_cast<double>(count));
    // The best token is always kept: max >= cut.
    std::erase_if(c.items, [cut](const Candidate& x) { return !(x.logit >= cut); });
  }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<TopNSigma>(*this); }
  bool keeps_best() const override { return true; }

 private:
  float n_;
};

}  // namespace

std::unique_ptr<Sampler> make_top_n_sigma(float n) { return std::make_unique<TopNSigma>(n); }

}  // namespace glass::runtime
