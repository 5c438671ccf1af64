#pragma once
// One sequence's constraint in the token loop (GenerateConfig::constraint): the grammar's token
// mask applied to the step's logits before the sampler chain sees them, and the matcher advanced by
// the sampled token. Fails closed: a step where the grammar allows no token, or where every allowed
// token was banned (logit_bias -inf), is an error and never an unconstrained draw.
#include <memory>
#include <span>
#include <vector>

#include "glass/llm.h"
#include "grammar/matcher.h"
#include "runtime/model_impl.h"

namespace glass::runtime {

class ConstraintGate {
 public:
  static Result<std::unique_ptr<ConstraintGate>> create(const Model::Impl& m, const GenerateConfig& config);

  // The grammar is complete and allows nothing more: the sequence ends here (finish Stop).
  bool only_end() const { return matcher_.can_end() && !matcher_.can_continue(); }
  // Copies `logits` with every disallowed token at -inf; masked() holds the result.
  Status apply(std::span<const float> logits);
  std::span<const float> masked() const { return masked_; }
  // Checks that `id` was allowed and advances the grammar by it (end tokens leave it as it is).
  Status accept(int32_t id);

 private:
  ConstraintGate(std::shared_ptr<const grammar::BoundGrammar> bound, const GenerateConfig& config,
                 const Model::Impl& m);
  bool allowed(int32_t id) const { return (mask_[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; }

  grammar::Matcher matcher_;
  const GenerateConfig& config_;
  const Model::Impl& m_;
  std::vector<uint64_t> mask_;
  std::vector<float> masked_;
};

// The model's vocabulary as the grammar engine walks it (built once per model).
std::shared_ptr<const grammar::TokenIndex> token_index(const Model::Impl& m);

}  // namespace glass::runtime
