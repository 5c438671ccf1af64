#pragma once
// The sampler chain (llama.cpp's llama_sampler_i shape): each sampler narrows or reweights a
// candidate list and owns its state (the final draw its seeded RNG, the penalties their window of
// accepted tokens). A chain is itself a sampler and times itself. Buffers are sized once for the
// vocabulary; sampling a token allocates nothing.
//
// Implementations: sampler.cpp (greedy, temperature, top-k, top-p, min-p, typical-p, logit bias,
// dist), sampler_penalties.cpp, sampler_dry.cpp, sampler_xtc.cpp, sampler_top_n_sigma.cpp,
// sampler_dynatemp.cpp, sampler_mirostat.cpp, sampler_chain.cpp (the chain, from_config, state
// snapshots).
#include <chrono>
#include <cstdint>
#include <functional>
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
  // Never drops the best candidate (highest logit, lowest id on ties) and changes no logit: a
  // filter that a greedy chain may skip (SamplerChain::sample).
  virtual bool keeps_best() const { return false; }
  // Always selects the best candidate (greedy; temperature <= 0).
  virtual bool selects_best() const { return false; }
  // What a sampler that only adds to some tokens' logits adds (logit_bias); empty for the others.
  virtual std::span<const std::pair<int32_t, float>> logit_bias() const { return {}; }
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

// A DRY sequence breaker as tokens: a head token and the tokens that must follow it (empty: the
// head's own text contains the breaker).
struct DryBreaker {
  int32_t head = 0;
  std::vector<int32_t> tail;
};
// What DRY needs from the vocabulary to turn breaker text into tokens.
struct SamplerVocab {
  std::function<std::string(int32_t)> piece;                       // a token's bytes
  std::function<std::vector<int32_t>(std::string_view)> tokenize;  // no BOS, no special tokens
};
// Every way `text` can begin inside a token of the vocabulary (llama.cpp's
// get_overlapping_token_sequences): tokens containing it whole, and tokens ending with a prefix of
// it followed by the rest tokenized (at most 20 tokens). Breakers longer than 40 bytes are cut.
std::vector<DryBreaker> dry_breakers(std::span<const std::string> texts, const SamplerVocab& vocab,
                                     size_t vocab_size);
// DRY over the last `window` accepted tokens (0: off): a token that would extend a repeat of length
// L >= allowed_length loses multiplier * base^(L - allowed_length), the exponent capped so the
// penalty stays finite; the most recent breaker bounds L; single-token breakers are never penalized.
std::unique_ptr<Sampler> make_dry(float multiplier, float base, int32_t allowed_length, size_t window,
                                  std::vector<DryBreaker> breakers, size_t vocab_size);
// XTC: with probability `probability` (its own draw from `seed`), removes every candidate with
// p >= threshold except the least likely of them. probability <= 0 or threshold > 0.5: no-op.
std::unique_ptr<Sampler> make_xtc(float probability, float threshold, uint64_t seed);
// Top-n-sigma: drops candidates whose logit is below max - n * stddev (over the finite logits).
// n <= 0: no-op.
std::unique_ptr<Sampler> make_top_n_sigma(float n);
// Dynamic temperature: t = max(0, temp - range) + 2 range * (H / log N)^exponent, H the entropy of
// the candidates' softmax and N their count; then as make_temperature(t). range <= 0: plain temp.
std::unique_ptr<Sampler> make_dynatemp(float temp, float range, float exponent);
// Mirostat v1 (version 1, its k estimated from the 100 most likely tokens) or v2 (version 2): a
// final sampler that truncates by a running surprise bound mu (starts at 2 tau, moves by
// eta * (observed - tau) per token) and draws with its own PRNG from `seed`.
std::unique_ptr<Sampler> make_mirostat(int version, float tau, float eta, size_t vocab_size, uint64_t seed);

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
  // `vocab` turns DRY's sequence breakers into tokens (none without it).
  static Result<SamplerChain> from_config(const SamplingConfig& config, size_t vocab_size,
                                          size_t context_size = 0, const SamplerVocab* vocab = nullptr);

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

  // Runs the chain over `logits` (one per token id) and returns the chosen id. A chain whose
  // samplers keep the best candidate until one selects it (top_k -> temperature 0, as llama.cpp's
  // defaults at --temp 0) takes the highest logit in one pass instead (the same id).
  int32_t sample(std::span<const float> logits);
  bool greedy() const { return greedy_; }

  uint64_t seed() const { return seed_; }
  const SamplerStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }
  std::span<const std::unique_ptr<Sampler>> samplers() const { return samplers_; }
  // The samplers' names joined by " -> " (e.g. "logit_bias -> top_k -> temperature -> dist").
  std::string describe() const;

 private:
  int32_t pick_best(std::span<const float> logits) const;
  void count_sample(std::chrono::steady_clock::time_point t0);

  std::vector<std::unique_ptr<Sampler>> samplers_;
  Candidates buf_;
  uint64_t seed_ = 0;
  bool greedy_ = false;
  std::vector<std::pair<int32_t, float>> greedy_bias_;  // the head's logit_bias, in id order
  SamplerStats stats_;
};

}  // namespace glass::runtime
