#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>

namespace glass::runtime {
namespace {

void sort_by_logit(Candidates& c) {
  std::sort(c.items.begin(), c.items.end(), [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  });
}

// Softmax over the current candidates, sorted by descending logit.
void softmax(Candidates& c) {
  sort_by_logit(c);
  const float max = c.items.front().logit;
  double sum = 0.0;
  for (Candidate& x : c.items) {
    x.p = std::exp(x.logit - max);
    sum += x.p;
  }
  for (Candidate& x : c.items) x.p = static_cast<float>(x.p / sum);
}

class Greedy final : public Sampler {
 public:
  std::string_view name() const override { return "greedy"; }
  void apply(Candidates& c) override {
    // Highest logit, lowest id on ties (as the references are made).
    const auto best =
        std::min_element(c.items.begin(), c.items.end(), [](const Candidate& a, const Candidate& b) {
          return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
        });
    c.selected = best->id;
  }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<Greedy>(*this); }
};

class TopK final : public Sampler {
 public:
  explicit TopK(int32_t k) : k_(k) {}
  std::string_view name() const override { return "top-k"; }
  void apply(Candidates& c) override {
    if (k_ <= 0 || static_cast<size_t>(k_) >= c.items.size()) return;
    sort_by_logit(c);
    c.items.resize(static_cast<size_t>(k_));
  }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<TopK>(*this); }

 private:
  int32_t k_;
};

class TopP final : public Sampler {
 public:
  explicit TopP(float p) : p_(p) {}
  std::string_view name() const override { return "top-p"; }
  void apply(Candidates& c) override {
    if (p_ >= 1.0f) return;
    softmax(c);
    double cum = 0.0;
    size_t keep = c.items.size();
    for (size_t i = 0; i < c.items.size(); ++i) {
      cum += c.items[i].p;
      if (cum >= p_) {
        keep = i + 1;
        break;
      }
    }
    c.items.resize(keep);
  }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<TopP>(*this); }

 private:
  float p_;
};

class MinP final : public Sampler {
 public:
  explicit MinP(float p) : p_(p) {}
  std::string_view name() const override { return "min-p"; }
  void apply(Candidates& c) override {
    if (p_ <= 0.0f) return;
    sort_by_logit(c);
    // p_i >= p * p_max  <=>  logit_i >= logit_max + log(p)
    const float threshold = c.items.front().logit + std::log(p_);
    size_t keep = 1;
    while (keep < c.items.size() && c.items[keep].logit >= threshold) ++keep;
    c.items.resize(keep);
  }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<MinP>(*this); }

 private:
  float p_;
};

class Temperature final : public Sampler {
 public:
  explicit Temperature(float t) : t_(t) {}
  std::string_view name() const override { return "temperature"; }
  void apply(Candidates& c) override {
    for (Candidate& x : c.items) x.logit /= t_;
  }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<Temperature>(*this); }

 private:
  float t_;
};

class Dist final : public Sampler {
 public:
  explicit Dist(uint64_t seed) : seed_(seed), rng_(seed) {}
  std::string_view name() const override { return "dist"; }
  void apply(Candidates& c) override {
    softmax(c);
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    double cum = 0.0;
    for (const Candidate& x : c.items) {
      cum += x.p;
      if (u < cum) {
        c.selected = x.id;
        return;
      }
    }
    c.selected = c.items.back().id;
  }
  void reset() override { rng_.seed(seed_); }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<Dist>(*this); }

 private:
  uint64_t seed_;
  std::mt19937_64 rng_;
};

}  // namespace

std::unique_ptr<Sampler> make_greedy() { return std::make_unique<Greedy>(); }
std::unique_ptr<Sampler> make_top_k(int32_t k) { return std::make_unique<TopK>(k); }
std::unique_ptr<Sampler> make_top_p(float p) { return std::make_unique<TopP>(p); }
std::unique_ptr<Sampler> make_min_p(float p) { return std::make_unique<MinP>(p); }
std::unique_ptr<Sampler> make_temperature(float t) { return std::make_unique<Temperature>(t); }
std::unique_ptr<Sampler> make_dist(uint64_t seed) { return std::make_unique<Dist>(seed); }

SamplerChain::SamplerChain(std::vector<std::unique_ptr<Sampler>> samplers, size_t vocab_size)
    : samplers_(std::move(samplers)) {
  buf_.items.reserve(vocab_size);
}

SamplerChain SamplerChain::from_config(const SamplingConfig& c, size_t vocab_size) {
  std::vector<std::unique_ptr<Sampler>> s;
  if (c.temperature <= 0.0f) {
    s.push_back(make_greedy());
  } else {
    if (c.top_k > 0) s.push_back(make_top_k(c.top_k));
    if (c.top_p < 1.0f) s.push_back(make_top_p(c.top_p));
    if (c.min_p > 0.0f) s.push_back(make_min_p(c.min_p));
    s.push_back(make_temperature(c.temperature));
    s.push_back(make_dist(c.seed));
  }
  return SamplerChain(std::move(s), vocab_size);
}

int32_t SamplerChain::sample(std::span<const float> logits) {
  buf_.items.clear();
  for (size_t i = 0; i < logits.size(); ++i)
    buf_.items.push_back(Candidate{static_cast<int32_t>(i), logits[i], 0.0f});
  buf_.selected = -1;
  for (auto& s : samplers_) {
    s->apply(buf_);
    if (buf_.selected >= 0) break;
  }
  return buf_.selected >= 0 ? buf_.selected : buf_.items.front().id;
}

void SamplerChain::accept(int32_t token) {
  for (auto& s : samplers_) s->accept(token);
}

void SamplerChain::reset() {
  for (auto& s : samplers_) s->reset();
}

}  // namespace glass::runtime
