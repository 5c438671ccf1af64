#pragma once
// The sampler chain (llama.cpp's llama_sampler_i shape): each sampler narrows or reweights a
// candidate list and owns its state (the final draw owns its seeded RNG). A chain is a sampler.
// Buffers are sized once for the vocabulary; sampling a token allocates nothing.
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include "glass/llm.h"

namespace glass::runtime {

struct Candidate {
  int32_t id;
  float logit;
  float p;  // filled by samplers that need probabilities
};

// Candidates plus which one was chosen (-1 until a final sampler picks).
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
};

std::unique_ptr<Sampler> make_greedy();
std::unique_ptr<Sampler> make_top_k(int32_t k);
std::unique_ptr<Sampler> make_top_p(float p);
std::unique_ptr<Sampler> make_min_p(float p);
std::unique_ptr<Sampler> make_temperature(float t);
std::unique_ptr<Sampler> make_dist(uint64_t seed);

class SamplerChain {
 public:
  SamplerChain(std::vector<std::unique_ptr<Sampler>> samplers, size_t vocab_size);
  // llama.cpp's default order for the enabled samplers: top-k, top-p, min-p, temperature, dist;
  // temperature <= 0 is greedy.
  static SamplerChain from_config(const SamplingConfig& config, size_t vocab_size);

  int32_t sample(std::span<const float> logits);
  void accept(int32_t token);
  void reset();

 private:
  std::vector<std::unique_ptr<Sampler>> samplers_;
  Candidates buf_;
};

}  // namespace glass::runtime
