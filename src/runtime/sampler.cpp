// The single samplers (llama.cpp's src/llama-sampling.cpp semantics) except the penalties
// (sampler_penalties.cpp). None allocates in apply: typical-p's scratch is reserved up front.
#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>

#include "runtime/sampler_internal.h"
#include "runtime/sampler_rng.h"

namespace glass::runtime {

Status Sampler::load_state(std::string_view state) {
  if (state.empty()) return {};
  return make_error(ErrorCode::InvalidArgument, "sampler '" + std::string(name()) + "': has no state, got " +
                                                    std::to_string(state.size()) + " bytes");
}

namespace detail {

void sort_by_logit(Candidates& c) {
  if (!std::is_sorted(c.items.begin(), c.items.end(), better))
    std::sort(c.items.begin(), c.items.end(), better);
}

void softmax(Candidates& c) {
  sort_by_logit(c);
  const float max = c.items.front().logit;
  double sum = 0.0;
  for (Candidate& x : c.items) {
    x.p = x.logit == max ? 1.0f : std::exp(x.logit - max);
    sum += x.p;
  }
  for (Candidate& x : c.items) x.p = static_cast<float>(x.p / sum);
}

size_t best_index(const Candidates& c) {
  return static_cast<size_t>(std::min_element(c.items.begin(), c.items.end(), better) - c.items.begin());
}

}  // namespace detail

namespace {

class Greedy final : public Sampler {
 public:
  std::string_view name() const override { return "greedy"; }
  void apply(Candidates& c) override { c.selected = c.items[detail::best_index(c)].id; }
  bool selects_best() const override { return true; }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<Greedy>(*this); }
};

class Temperature final : public Sampler {
 public:
  explicit Temperature(float t) : t_(t) {}
  std::string_view name() const override { return "temperature"; }
  void apply(Candidates& c) override {
    if (t_ <= 0.0f) {  // the limit t -> 0: all mass on the best token
      c.selected = c.items[detail::best_index(c)].id;
      return;
    }
    for (Candidate& x : c.items) x.logit /= t_;
  }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<Temperature>(*this); }
  bool selects_best() const override { return t_ <= 0.0f; }

 private:
  float t_;
};

class TopK final : public Sampler {
 public:
  explicit TopK(int32_t k) : k_(k) {}
  std::string_view name() const override { return "top_k"; }
  void apply(Candidates& c) override {
    if (k_ <= 0 || static_cast<size_t>(k_) >= c.items.size()) return;
    const auto mid = c.items.begin() + k_;
    std::partial_sort(c.items.begin(), mid, c.items.end(), detail::better);
    c.items.erase(mid, c.items.end());
  }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<TopK>(*this); }
  bool keeps_best() const override { return true; }

 private:
  int32_t k_;
};

class TopP final : public Sampler {
 public:
  explicit TopP(float p) : p_(p) {}
  std::string_view name() const override { return "top_p"; }
  void apply(Candidates& c) override {
    if (p_ >= 1.0f) return;
    detail::softmax(c);
    double cum = 0.0;
    for (size_t i = 0; i < c.items.size(); ++i) {
      cum += c.items[i].p;
      if (cum >= p_) {
        c.items.resize(i + 1);
        return;
      }
    }
  }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<TopP>(*this); }
  bool keeps_best() const override { return true; }

 private:
  float p_;
};

class MinP final : public Sampler {
 public:
  explicit MinP(float p) : p_(p) {}
  std::string_view name() const override { return "min_p"; }
  void apply(Candidates& c) override {
    if (p_ <= 0.0f) return;
    // p_i >= p * p_max  <=>  logit_i >= logit_max + log(p); no softmax or sort needed.
    const float threshold = c.items[detail::best_index(c)].logit + std::log(p_);
    std::erase_if(c.items, [&](const Candidate& x) { return !(x.logit >= threshold); });
  }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<MinP>(*this); }
  bool keeps_best() const override { return true; }

 private:
  float p_;
};

class TypicalP final : public Sampler {
 public:
  TypicalP(float p, size_t vocab_size) : p_(p), vocab_size_(vocab_size) { reserve(); }
  TypicalP(const TypicalP& o) : Sampler(o), p_(o.p_), vocab_size_(o.vocab_size_) { reserve(); }
  TypicalP& operator=(const TypicalP&) = delete;

  std::string_view name() const override { return "typical_p"; }
  void apply(Candidates& c) override {
    if (p_ >= 1.0f) return;
    detail::softmax(c);
    // H = -sum p log p; each token scores |-log p_i - H| (how far its surprisal is from the mean).
    double entropy = 0.0;
    for (const Candidate& x : c.items)
      if (x.p > 0.0f) entropy -= x.p * std::log(static_cast<double>(x.p));
    keys_.resize(c.items.size());
    for (size_t i = 0; i < c.items.size(); ++i) {
      const float p = c.items[i].p;
      const float score =
          p > 0.0f ? static_cast<float>(std::fabs(-std::log(static_cast<double>(p)) - entropy)) : INFINITY;
      keys_[i] = {score, static_cast<uint32_t>(i)};
    }
    std::sort(keys_.begin(), keys_.end());  // ties: the more probable (lower index) first
    // Keep the most typical tokens until their mass exceeds p (strictly, as llama.cpp).
    size_t keep = keys_.size();
    double cum = 0.0;
    for (size_t i = 0; i < keys_.size(); ++i) {
      cum += c.items[keys_[i].second].p;
      if (cum > p_) {
        keep = i + 1;
        break;
      }
    }
    kept_.resize(keep);
    for (size_t i = 0; i < keep; ++i) kept_[i] = c.items[keys_[i].second];
    c.items.assign(kept_.begin(), kept_.end());
  }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<TypicalP>(*this); }

 private:
  void reserve() {
    keys_.reserve(vocab_size_);
    kept_.reserve(vocab_size_);
  }

  float p_;
  size_t vocab_size_;
  std::vector<std::pair<float, uint32_t>> keys_;  // (score, index into the candidates)
  std::vector<Candidate> kept_;
};

class LogitBias final : public Sampler {
 public:
  explicit LogitBias(std::vector<std::pair<int32_t, float>> bias) : bias_(std::move(bias)) {}
  std::string_view name() const override { return "logit_bias"; }
  void apply(Candidates& c) override {
    for (const auto& [id, bias] : bias_) {
      // At the head of a chain the candidates are in id order: index by id, else search.
      const auto i = static_cast<size_t>(id);
      if (id >= 0 && i < c.items.size() && c.items[i].id == id) {
        c.items[i].logit += bias;
        continue;
      }
      for (Candidate& x : c.items)
        if (x.id == id) x.logit += bias;
    }
  }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<LogitBias>(*this); }
  std::span<const std::pair<int32_t, float>> logit_bias() const override { return bias_; }

 private:
  std::vector<std::pair<int32_t, float>> bias_;
};

class Dist final : public Sampler {
 public:
  explicit Dist(uint64_t seed) : seed_(seed), rng_(seed) {}
  std::string_view name() const override { return "dist"; }
  void apply(Candidates& c) override {
    // Inverse-CDF draw over softmax(logits) in the candidates' current order (deterministic:
    // samplers only reorder by total orders), weights relative to the highest logit.
    const float max = c.items[detail::best_index(c)].logit;
    double sum = 0.0;
    for (Candidate& x : c.items) {
      x.p = x.logit == max ? 1.0f : std::exp(x.logit - max);
      sum += x.p;
    }
    const double target = rng_.uniform() * sum;
    double cum = 0.0;
    for (const Candidate& x : c.items) {
      cum += x.p;
      if (target < cum) {
        c.selected = x.id;
        return;
      }
    }
    // Rounding left target at the very top: the last token with any weight.
    for (auto it = c.items.rbegin(); it != c.items.rend(); ++it)
      if (it->p > 0.0f) {
        c.selected = it->id;
        return;
      }
  }
  void reset() override { rng_.seed(seed_); }
  std::unique_ptr<Sampler> clone() const override { return std::make_unique<Dist>(*this); }

  // "seed s0 s1 s2 s3"
  std::string save_state() const override {
    std::string out;
    detail::put_u64(out, seed_);
    for (const uint64_t w : rng_.state()) detail::put_u64(out, w);
    return out;
  }
  Status load_state(std::string_view state) override {
    detail::StateReader in(state);
    uint64_t seed = 0;
    SamplerRng::State s{};
    bool ok = in.next(seed);
    for (uint64_t& w : s) ok = ok && in.next(w);
    if (!ok || !in.done() || !rng_.set_state(s))
      return make_error(ErrorCode::InvalidArgument,
                        "sampler 'dist': state must be a seed and four state words, not all zero, got '" +
                            std::string(state.substr(0, 120)) + "'");
    seed_ = seed;
    return {};
  }

 private:
  uint64_t seed_;
  SamplerRng rng_;
};

}  // namespace

std::unique_ptr<Sampler> make_greedy() { return std::make_unique<Greedy>(); }
std::unique_ptr<Sampler> make_temperature(float t) { return std::make_unique<Temperature>(t); }
std::unique_ptr<Sampler> make_top_k(int32_t k) { return std::make_unique<TopK>(k); }
std::unique_ptr<Sampler> make_top_p(float p) { return std::make_unique<TopP>(p); }
std::unique_ptr<Sampler> make_min_p(float p) { return std::make_unique<MinP>(p); }
std::unique_ptr<Sampler> make_typical_p(float p, size_t vocab_size) {
  return std::make_unique<TypicalP>(p, vocab_size);
}
std::unique_ptr<Sampler> make_logit_bias(std::vector<std::pair<int32_t, float>> bias) {
  return std::make_unique<LogitBias>(std::move(bias));
}
std::unique_ptr<Sampler> make_dist(uint64_t seed) { return std::make_unique<Dist>(seed); }

}  // namespace glass::runtime
