#pragma once
// The sampler chain (llama.cpp's llama_sampler_i shape): each sampler narrows or reweights a
// candidate list and owns its state (the final draw its seeded RNG, the penalties their window of
// accepted tokens). A chain is itself a sampler and times itself. Buffers are sized once for the
// vocabulary; sampling a token allocates nothing.
//
// Implementations: sampler.cpp (greedy, temperature, top-k, top-p, min-p, typical-p, logit bias,
// dist), sampler_penalties.cpp, sampler_chain.cpp (the chain, from_config, state snapshots).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "glass/llm.h"
#include "glass/result.h"

namespace glass::runtime {

struct Candidate {
  int32_t id;
  float logit;
  float p;  // filled by samplers that need probabilities
};

// Candidates plus which one was chosen (-1 until a final sampler picks). A chain starts with
// every token in id order; samplers may reorder and drop candidates but always keep at least one.
struct Candidates {
  std::vector<Candidate> items;
  int32_t selected = -1;
};

class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual std::string_view name() const = 0;
  virtual void apply(Candidates& c) = 0;
  virtual void accept(int32_t /*token*/) {}
  virtual void reset() {}
  virtual std::unique_ptr<Sampler> clone() const = 0;
  // The changing state (RNG, penalty window) as text; "" for a stateless sampler. load_state
  // takes what save_state of a sampler built the same way wrote.
  virtual std::string save_state() const { return {}; }
  virtual Status load_state(std::string_view state);
};

// Highest logit, lowest id on ties.
std::unique_ptr<Sampler> make_greedy();
// Divides logits by t; t <= 0 selects as greedy does (the chain stops there).
std::unique_ptr<Sampler> make_temperature(float t);
// Keeps the k highest logits (sorted); k <= 0 or k >= size: no-op.
std::unique_ptr<Sampler> make_top_k(int32_t k);
// Keeps the most probable tokens whose cumulative probability first reaches p; p >= 1: no-op.
std::unique_ptr<Sampler> make_top_p(float p);
// Keeps tokens with probability >= p * the highest probability (order kept); p <= 0: no-op.
std::unique_ptr<Sampler> make_min_p(float p);
// Locally typical sampling (Meister et al. 2022, "Locally Typical Sampling"; as llama.cpp):
// sorts by |-log p_i - H| and keeps the first tokens whose cumulative probability exceeds p.
// vocab_size reserves its scratch; p >= 1: no-op.
std::unique_ptr<Sampler> make_typical_p(float p, size_t vocab_size = 0);
// Adds bias to each listed token's logit (repeated ids add up; -INFINITY bans a token).
std::unique_ptr<Sampler> make_logit_bias(std::vector<std::pair<int32_t, float>> bias);
// llama.cpp's llama_sampler_penalties over the last `window` accepted tokens (0: off): a token
// seen `count` times has its logit divided by `repeat` when positive and multiplied when not, then
// lowered by count * frequency + presence. Accepted ids outside [0, vocab_size) are ignored.
std::unique_ptr<Sampler> make_penalties(size_t window, float repeat, float frequency, float presence,
                                        size_t vocab_size);
// Draws from softmax(logits) of the candidates with its own seeded PRNG (sampler_rng.h); reset()
// restarts the sequence from the seed.
std::unique_ptr<Sampler> make_dist(uint64_t seed);

struct SamplerStats {
  uint64_t n_sample = 0;   // tokens sampled (apply calls)
  uint64_t sample_us = 0;  // time spent in apply
};

class SamplerChain final : public Sampler {
 public:
  // `seed` is what seed() reports (the dist sampler's seed).
  SamplerChain(std::vector<std::unique_ptr<Sampler>> samplers, size_t vocab_size, uint64_t seed = 0);
  SamplerChain(const SamplerChain& other);  // deep copy (clones every sampler)
  SamplerChain& operator=(const SamplerChain& other);
  SamplerChain(SamplerChain&&) noexcept = default;
  SamplerChain& operator=(SamplerChain&&) noexcept = default;
  ~SamplerChain() override = default;

  // logit_bias first (when set), then config.order (empty: llama.cpp's default order restricted
  // to what glass has: penalties, top_k, typical_p, top_p, min_p, temperature), then dist.
  // Disabled samplers are left out. A temperature <= 0 makes the chain greedy at that point.
  // context_size resolves penalty_last_n = -1 and caps the window (0: unknown). Errors
  // (InvalidArgument) name the sampler: unknown names in order, out-of-range values.
  // seed == SamplingConfig::kRandomSeed draws a seed at random; seed() reports it.
  static Result<SamplerChain> from_config(const SamplingConfig& config, size_t vocab_size,
                                          size_t context_size = 0);

  std::string_view name() const override { return "chain"; }
  // Runs the samplers in order until one selects; when none does, selects as greedy does.
  void apply(Candidates& c) override;
  void accept(int32_t token) override;
  void reset() override;  // every sampler's state; stats are kept
  std::unique_ptr<Sampler> clone() const override;
  // Every sampler's state (dist RNG, penalty window), tagged by name; load_state checks that the
  // chain has the same samplers in the same order.
  std::string save_state() const override;
  Status load_state(std::string_view state) override;

  // Runs the chain over `logits` (one per token id) and returns the chosen id.
  int32_t sample(std::span<const float> logits);

  uint64_t seed() const { return seed_; }
  const SamplerStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }
  std::span<const std::unique_ptr<Sampler>> samplers() const { return samplers_; }
  // The samplers' names joined by " -> " (e.g. "logit_bias -> top_k -> temperature -> dist").
  std::string describe() const;

 private:
  std::vector<std::unique_ptr<Sampler>> samplers_;
  Candidates buf_;
  uint64_t seed_ = 0;
  SamplerStats stats_;
};

}  // namespace glass::runtime
