#include "runtime/sequence.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace glass::runtime {
namespace {

// Ranks alternatives: the higher log-probability first, the lower id on ties (as greedy picks).
bool more_likely(const TokenLogprob& a, const TokenLogprob& b) {
  return a.logprob > b.logprob || (a.logprob == b.logprob && a.id < b.id);
}

// log-softmax of `logits` for `id` and the n most likely tokens: one pass for the maximum, one for
// the normaliser (summed in double: a vocabulary of 150k terms), the top n kept in a heap of n whose
// front is the least likely kept, so the cost is O(vocab log n) and nothing of vocabulary size is
// sorted or allocated.
TokenLogprobs log_softmax_top(std::span<const float> logits, int32_t id, int32_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (const float x : logits) max = std::max(max, x);
  double sum = 0.0;
  for (const float x : logits) sum += std::exp(static_cast<double>(x - max));
  const auto log_z = static_cast<float>(static_cast<double>(max) + std::log(sum));
  TokenLogprobs out;
  out.token = {id, logits[static_cast<size_t>(id)] - log_z};
  out.top.reserve(static_cast<size_t>(n));
  if (n == 0) return out;
  for (size_t i = 0; i < logits.size(); ++i) {
    const TokenLogprob c{static_cast<int32_t>(i), logits[i]};  // raw logits rank as their logprobs do
    if (out.top.size() < static_cast<size_t>(n)) {
      out.top.push_back(c);
      std::push_heap(out.top.begin(), out.top.end(), more_likely);
    } else if (more_likely(c, out.top.front())) {
      std::pop_heap(out.top.begin(), out.top.end(), more_likely);
      out.top.back() = c;
      std::push_heap(out.top.begin(), out.top.end(), more_likely);
    }
  }
  std::sort_heap(out.top.begin(), out.top.end(), more_likely);
  for (TokenLogprob& t : out.top) t.logprob -= log_z;
  return out;
}

}  // namespace

Result<std::unique_ptr<SequenceGen>> SequenceGen::create(const Model::Impl& m, const GenerateConfig& config) {
  if (!m.tokenizer) return no_vocabulary(m.info.path);  // generation streams text
  if (config.max_tokens < 0)
    return make_error(ErrorCode::InvalidArgument, "generate: max_tokens must not be negative");
  if (config.top_logprobs < 0 || config.top_logprobs > kMaxTopLogprobs)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("generate: top_logprobs must be in [0, {}], got {}", kMaxTopLogprobs,
                                  config.top_logprobs));
  if (config.top_logprobs > 0 && !config.logprobs)
    return make_error(ErrorCode::InvalidArgument,
                      "generate: top_logprobs needs logprobs (the alternatives come with each token's own)");
  // DRY's sequence breakers are text: the chain tokenizes them with the model's vocabulary.
  const SamplerVocab vocab{
      .piece = [&m](int32_t id) { return m.tokenizer->token_to_piece(id, /*special=*/true); },
      .tokenize =
          [&m](std::string_view text) {
            auto ids = m.tokenizer->encode(text, /*add_special=*/false, /*parse_special=*/false);
            return ids ? std::move(*ids) : std::vector<int32_t>{};
          }};
  auto chain = SamplerChain::from_config(config.sampling, static_cast<size_t>(m.info.vocab_size),
                                         static_cast<size_t>(m.info.n_ctx), m.tokenizer ? &vocab : nullptr);
  if (!chain.ok()) return chain.error();
  auto seq = std::unique_ptr<SequenceGen>(new SequenceGen(m, config, std::move(*chain)));
  if (config.constraint) {
    auto gate = ConstraintGate::create(m, config);
    if (!gate) return gate.error();
    seq->gate_ = std::move(*gate);
  }
  return seq;
}

SequenceGen::SequenceGen(const Model::Impl& m, const GenerateConfig& config, SamplerChain chain)
    : m_(m),
      config_(config),
      chain_(std::move(chain)),
      // The continuation follows earlier text, so its first piece keeps its leading space.
      stream_(*m.tokenizer,
              tokenizer::StreamOptions{.special = config.render_control_tokens, .continuation = true}),
      stop_(config.stop) {
  result_.seed = chain_.seed();  // the drawn one when the config asked for a random seed
  if (config.max_tokens == 0) done_ = true;
  if (config.logprobs) {
    n_top_ = static_cast<int32_t>(std::min<int64_t>(config.top_logprobs, m.info.vocab_size));
    // A sequence cannot pass its context, whatever max_tokens says.
    result_.logprobs.reserve(static_cast<size_t>(std::min<int64_t>(config.max_tokens, m.info.n_ctx)));
  }
}

void SequenceGen::record_logprobs(std::span<const float> logits, int32_t id) {
  result_.logprobs.push_back(log_softmax_top(logits, id, n_top_));
  if (config_.on_logprobs) config_.on_logprobs(result_.logprobs.back());
}

void SequenceGen::accept_prompt(std::span<const int32_t> prompt) {
  for (int32_t id : prompt) chain_.accept(id);
}

bool SequenceGen::emit(const std::string& text, const PieceCallback& on_piece) {
  result_.text += text;
  return text.empty() || !on_piece || on_piece(text);
}

void SequenceGen::finish(FinishReason reason) {
  if (done_) return;
  done_ = true;
  result_.finish = reason;
  const std::string tail = stop_.push(stream_.flush()) + stop_.flush();
  result_.text += tail;
}

std::optional<int32_t> SequenceGen::step(std::span<const float> logits, const PieceCallback& on_piece) {
  if (done_) return std::nullopt;
  if (config_.cancel && config_.cancel->load()) {
    finish(FinishReason::Cancelled);
    return std::nullopt;
  }
  // Samplers would turn NaN into an arbitrary token and the loop would end as "stop": the model's
  // failure is reported instead. One pass over the row, next to a whole forward step.
  for (size_t i = 0; i < logits.size(); ++i) {
    if (!std::isfinite(logits[i])) {
      error_ = make_error(ErrorCode::Internal,
                          fmt::format("generate: the model produced non-finite logits at generation step {} "
                                      "(after {} generated tokens): logit of token {} is {}",
                                      result_.tokens.size() + 1, result_.tokens.size(), i, logits[i]));
      done_ = true;
      return std::nullopt;
    }
  }
  std::span<const float> view = logits;
  if (gate_) {  // the constraint's mask comes before every sampler, so the draw is always allowed
    if (gate_->only_end()) {
      finish(FinishReason::Stop);
      return std::nullopt;
    }
    if (auto st = gate_->apply(logits); !st) {
      error_ = st.error();
      done_ = true;
      return std::nullopt;
    }
    view = gate_->masked();
  }
  const int32_t id = chain_.sample(view);
  if (gate_)
    if (auto st = gate_->accept(id); !st) {
      error_ = st.error();
      done_ = true;
      return std::nullopt;
    }
  chain_.accept(id);
  const bool stop_token = (config_.stop_at_end_of_generation && m_.tokenizer->is_eog(id)) ||
                          std::find(config_.stop_token_ids.begin(), config_.stop_token_ids.end(), id) !=
                              config_.stop_token_ids.end();
  if (stop_token) {
    finish(FinishReason::Stop);
    return std::nullopt;
  }
  result_.tokens.push_back(id);
  if (config_.logprobs) record_logprobs(logits, id);
  const std::string piece = stop_.push(stream_.push(id));
  if (stop_.matched()) {
    emit(piece, on_piece);
    done_ = true;
    result_.finish = FinishReason::Stop;
    return std::nullopt;
  }
  if (!emit(piece, on_piece)) {
    done_ = true;
    result_.finish = FinishReason::Cancelled;
    return std::nullopt;
  }
  if (static_cast<int32_t>(result_.tokens.size()) >= config_.max_tokens) {
    const std::string tail = stop_.push(stream_.flush());
    if (stop_.matched()) {
      emit(tail, on_piece);
      done_ = true;
      result_.finish = FinishReason::Stop;
      return std::nullopt;
    }
    emit(tail + stop_.flush(), on_piece);
    done_ = true;
    result_.finish = FinishReason::Length;
    return std::nullopt;
  }
  return id;
}

}  // namespace glass::runtime
