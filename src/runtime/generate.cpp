// The generation loop: prefill the prompt once, then one decode step per new token through the
// KV cache; sample, stream valid UTF-8 pieces, stop on end-of-generation, max_tokens, a full
// context or the consumer cancelling.
#include <chrono>

#include "runtime/model_impl.h"
#include "runtime/sampler.h"

namespace glass {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Cancelled:
      return "cancelled";
  }
  return "unknown";
}

Result<GenerateResult> generate(Session& session, const std::vector<int32_t>& prompt_ids,
                                const GenerateConfig& config, const PieceCallback& on_piece) {
  using Clock = std::chrono::steady_clock;
  const Model::Impl& m = session.model().impl();
  GenerateResult r;
  if (config.max_tokens < 0)
    return make_error(ErrorCode::InvalidArgument, "generate: max_tokens must not be negative");
  if (prompt_ids.empty() && session.n_past() == 0)
    return make_error(ErrorCode::InvalidArgument, "generate: empty prompt and empty session");

  const auto t0 = Clock::now();
  if (!prompt_ids.empty())
    if (auto st = session.eval(prompt_ids); !st) return st.error();
  const auto t1 = Clock::now();
  r.timings.prompt_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  r.timings.n_prompt_tokens = static_cast<int64_t>(prompt_ids.size());

  auto chain = runtime::SamplerChain::from_config(config.sampling, static_cast<size_t>(m.info.vocab_size));
  // The continuation follows earlier text, so its first piece keeps its leading space.
  tokenizer::StreamingDecoder stream(*m.tokenizer,
                                     tokenizer::StreamOptions{.special = false, .continuation = true});
  r.finish = FinishReason::Length;
  for (int32_t i = 0; i < config.max_tokens; ++i) {
    const int32_t id = chain.sample(session.last_logits());
    chain.accept(id);
    if (config.stop_at_end_of_generation && m.tokenizer->is_eog(id)) {
      r.finish = FinishReason::Stop;
      break;
    }
    r.tokens.push_back(id);
    const std::string piece = stream.push(id);
    r.text += piece;
    if (!piece.empty() && on_piece && !on_piece(piece)) {
      r.finish = FinishReason::Cancelled;
      break;
    }
    if (i + 1 == config.max_tokens) break;
    if (session.n_past() >= m.info.n_ctx) break;  // context full: finish "length"
    if (auto st = session.eval(std::span<const int32_t>(&r.tokens.back(), 1)); !st) return st.error();
  }
  const std::string tail = stream.flush();
  r.text += tail;
  if (!tail.empty() && on_piece && r.finish != FinishReason::Cancelled) on_piece(tail);
  r.timings.n_decoded = static_cast<int64_t>(r.tokens.size());
  r.timings.decode_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  return r;
}

Result<GenerateResult> generate(Session& session, std::string_view prompt, const GenerateConfig& config,
                                const PieceCallback& on_piece) {
  auto ids = session.model().tokenize(prompt, /*add_special=*/session.n_past() == 0, /*parse_special=*/true);
  if (!ids) return ids.error();
  return generate(session, *ids, config, on_piece);
}

}  // namespace glass
