#include "runtime/sequence.h"

#include <algorithm>

namespace glass::runtime {

Result<std::unique_ptr<SequenceGen>> SequenceGen::create(const Model::Impl& m, const GenerateConfig& config) {
  if (config.max_tokens < 0)
    return make_error(ErrorCode::InvalidArgument, "generate: max_tokens must not be negative");
  auto chain = SamplerChain::from_config(config.sampling, static_cast<size_t>(m.info.vocab_size),
                                         static_cast<size_t>(m.info.n_ctx));
  if (!chain.ok()) return chain.error();
  return std::unique_ptr<SequenceGen>(new SequenceGen(m, config, std::move(*chain)));
}

SequenceGen::SequenceGen(const Model::Impl& m, const GenerateConfig& config, SamplerChain chain)
    : m_(m),
      config_(config),
      chain_(std::move(chain)),
      // The continuation follows earlier text, so its first piece keeps its leading space.
      stream_(*m.tokenizer, tokenizer::StreamOptions{.special = false, .continuation = true}),
      stop_(config.stop) {
  result_.seed = chain_.seed();  // the drawn one when the config asked for a random seed
  if (config.max_tokens == 0) done_ = true;
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
  const int32_t id = chain_.sample(logits);
  chain_.accept(id);
  const bool stop_token = (config_.stop_at_end_of_generation && m_.tokenizer->is_eog(id)) ||
                          std::find(config_.stop_token_ids.begin(), config_.stop_token_ids.end(), id) !=
                              config_.stop_token_ids.end();
  if (stop_token) {
    finish(FinishReason::Stop);
    return std::nullopt;
  }
  result_.tokens.push_back(id);
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
