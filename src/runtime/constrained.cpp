#include "runtime/constrained.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "grammar/constraint.h"
#include "grammar/json_schema.h"
#include "runtime/access.h"

namespace glass::runtime {

std::shared_ptr<const grammar::TokenIndex> token_index(const Model::Impl& m) {
  return m.token_index.get([&m] {
    const int32_t n = m.tokenizer->vocab_size();
    std::vector<std::string> pieces(static_cast<size_t>(n));
    std::vector<int32_t> ends;
    for (int32_t id = 0; id < n; ++id) {
      // Control tokens give "" and so never spell grammar text.
      pieces[static_cast<size_t>(id)] = m.tokenizer->token_to_piece(id);
      if (m.tokenizer->is_eog(id)) ends.push_back(id);
    }
    auto index = std::make_shared<const grammar::TokenIndex>(std::move(pieces), std::move(ends));
    grammar::warm_json_tables(index);  // the JSON primitives' tables, once per model
    return index;
  });
}

Result<std::unique_ptr<ConstraintGate>> ConstraintGate::create(const Model::Impl& m,
                                                               const GenerateConfig& config) {
  if (!m.tokenizer) return no_vocabulary(m.info.path);  // token masks need the token texts
  auto vocab = token_index(m);
  if (vocab->vocab_size() != m.info.vocab_size)
    return make_error(ErrorCode::Internal,
                      "constraint: the tokenizer's vocabulary differs from the model's logits");
  return std::unique_ptr<ConstraintGate>(
      new ConstraintGate(internal::Access::impl(*config.constraint).bind(vocab), config, m));
}

ConstraintGate::ConstraintGate(std::shared_ptr<const grammar::BoundGrammar> bound,
                               const GenerateConfig& config, const Model::Impl& m)
    : matcher_(std::move(bound)), config_(config), m_(m) {
  mask_.resize(matcher_.bound().vocab().mask_words());
  masked_.resize(static_cast<size_t>(m.info.vocab_size));
}

Status ConstraintGate::apply(std::span<const float> logits) {
  if (auto st = matcher_.fill_mask(mask_); !st) return st.error();
  // End tokens end generation only where the config says they do; stop_token_ids join them.
  const bool can_end = matcher_.can_end();
  if (!config_.stop_at_end_of_generation)
    for (const int32_t id : matcher_.bound().vocab().end_tokens())
      mask_[static_cast<size_t>(id) >> 6] &= ~(uint64_t{1} << (id & 63));
  if (can_end)
    for (const int32_t id : config_.stop_token_ids)
      if (id >= 0 && id < m_.info.vocab_size) mask_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
  if (std::all_of(mask_.begin(), mask_.end(), [](uint64_t w) { return w == 0; }))
    return make_error(ErrorCode::InvalidArgument,
                      can_end
                          ? "constraint: the grammar can end here, but no end-of-generation or stop token is "
                            "allowed to end it"
                          : "constraint: no token of the vocabulary can continue the grammar here");
  // Word by word: whole words of allowed or disallowed tokens are a copy or a fill.
  const size_t n = masked_.size();
  for (size_t w = 0; w * 64 < n; ++w) {
    const size_t b = w * 64, e = std::min(n, b + 64);
    const uint64_t bits = mask_[w];
    if (bits == ~uint64_t{0}) {
      std::copy(logits.begin() + static_cast<std::ptrdiff_t>(b),
                logits.begin() + static_cast<std::ptrdiff_t>(e),
                masked_.begin() + static_cast<std::ptrdiff_t>(b));
    } else if (bits == 0) {
      std::fill(masked_.begin() + static_cast<std::ptrdiff_t>(b),
                masked_.begin() + static_cast<std::ptrdiff_t>(e), -INFINITY);
    } else {
      for (size_t i = b; i < e; ++i) masked_[i] = (bits >> (i - b)) & 1 ? logits[i] : -INFINITY;
    }
  }
  return {};
}

Status ConstraintGate::accept(int32_t id) {
  if (id < 0 || id >= m_.info.vocab_size || !allowed(id) || std::isinf(masked_[static_cast<size_t>(id)]))
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("constraint: the sampler chose token {}, which the grammar does not allow here "
                    "(every allowed token was banned, e.g. by a -inf logit_bias)",
                    id));
  const grammar::TokenIndex& v = matcher_.bound().vocab();
  const bool end = v.is_end(id) || std::find(config_.stop_token_ids.begin(), config_.stop_token_ids.end(),
                                             id) != config_.stop_token_ids.end();
  if (end && matcher_.can_end()) return {};  // generation stops on it; the grammar is complete
  if (!matcher_.accept_token(id))
    return make_error(ErrorCode::Internal,
                      fmt::format("constraint: allowed token {} did not advance the grammar", id));
  return {};
}

}  // namespace glass::runtime
