#pragma once
// One generated sequence's state, shared by generate() and generate_batch(): its sampler chain
// (and RNG), streaming detokenizer, stop criteria and growing result (with each token's
// log-probabilities when the config asks for them).
#include <optional>
#include <span>

#include "runtime/constrained.h"
#include "runtime/model_impl.h"
#include "runtime/sampler.h"
#include "runtime/stop_matcher.h"

namespace glass::runtime {

class SequenceGen {
 public:
  static Result<std::unique_ptr<SequenceGen>> create(const Model::Impl& m, const GenerateConfig& config);

  // Feeds prompt tokens to the samplers' history (penalties see the prompt, as in llama.cpp).
  void accept_prompt(std::span<const int32_t> prompt);
  // Given the logits after the last evaluated token, samples the next one, streams its text and
  // applies the stop criteria. Returns the token to evaluate next, or nullopt when finished.
  std::optional<int32_t> step(std::span<const float> logits, const PieceCallback& on_piece);
  // Ends the sequence early (context full) with `reason`.
  void finish(FinishReason reason);
  bool done() const { return done_; }
  // Set when step() met non-finite logits (NaN or infinity from the model: overflowing weights,
  // a broken quantization), or when its constraint allowed no token: the sequence is done, and this
  // error, naming the step and the first bad token id (or the constraint's failure), is what the
  // caller returns instead of a normal finish.
  const std::optional<Error>& error() const { return error_; }
  GenerateResult& result() { return result_; }

 private:
  SequenceGen(const Model::Impl& m, const GenerateConfig& config, SamplerChain chain);
  bool emit(const std::string& text, const PieceCallback& on_piece);
  void record_logprobs(std::span<const float> logits, int32_t id);

  const Model::Impl& m_;
  const GenerateConfig& config_;
  SamplerChain chain_;
  tokenizer::StreamingDecoder stream_;
  StopMatcher stop_;
  GenerateResult result_;
  int32_t n_top_ = 0;  // alternatives per token: top_logprobs, at most the vocabulary
  bool done_ = false;
  std::optional<Error> error_;
  std::unique_ptr<ConstraintGate> gate_;  // GenerateConfig::constraint's state; null without one
};

}  // namespace glass::runtime
