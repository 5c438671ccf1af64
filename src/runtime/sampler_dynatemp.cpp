// Dynamic temperature ("entropy sampling", kalomaze; llama.cpp's llama_sampler_temp_ext): a flat
// distribution (many plausible tokens) is sampled hotter and a peaked one colder. The temperature is
//   t = t_min + (t_max - t_min) * (H / H_max)^exponent,  t_min = max(0, temp - range),
//   t_max = temp + range, H the entropy of the candidates' softmax, H_max = log(candidate count).
#include <algorithm>
#include <cmath>

#include "runtime/sampler.h"
#include "runtime/sampler_internal.h"

namespace glass::runtime {
namespace {

class DynaTemp final : public Sampler {
 public:
  DynaTemp(float temp, float range, float exponent) : temp_(temp), range_(range), exponent_(exponent) {}
  std::string_view name() const override { return "dynatemp"; }

  void apply(Candidates& c) override {
    if (c.items.size() <= 1) return;
    detail::softmax(c);
    double entropy = 0.0;
    for (const Candidate& x : c.items)
      if (x.p > 0.0f) entropy -= x.p * std::log(static_cast<double>(x.p));
    const double normalized = entropy / std::log(static_cast<double>(c.items.size()));
    const double lo = std::max(0.0f, temp_ - range_), hi = temp_ + range_;
    const double t = lo + (hi - lo) * std::pow(normalized, static_cast<double>(exponent_));
    if (!(t > 0.0)) {  // the limit t -> 0: all mass on the best token, as the plain temperature
      c.selected = c.items[detail::best_index(c)].id;
      return;
    }
    for (Candidate& x : c.items) x.logit = static_cast<float>(x.logit / t);
  }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<DynaTemp>(*this); }

 private:
  float temp_, range_, exponent_;
};

}  // namespace

std::unique_ptr<Sampler> make_dynatemp(float temp, float range, float exponent) {
  if (!(range > 0.0f)) return make_temperature(temp);
  return std::make_unique<DynaTemp>(temp, range, exponent);
}

}  // namespace glass::runtime
