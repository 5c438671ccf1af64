// The generation loops: prefill the prompt once, then one decode step per new token through the KV
// cache (for a batch: one step for all live sequences); each sequence samples, streams valid UTF-8
// and stops on its own (runtime/sequence.cpp).
#include <fmt/format.h>

#include <chrono>
#include <optional>

#include "core/exception_guard.h"
#include "glass/engine.h"
#include "runtime/access.h"
#include "runtime/sequence.h"
#include "runtime/session_impl.h"

namespace glass {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

}  // namespace

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
                                const GenerateConfig& config, const PieceCallback& on_piece) try {
  const Model::Impl& m = internal::Access::impl(session.model());
  if (prompt_ids.empty() && session.n_past() == 0)
    return make_error(ErrorCode::InvalidArgument, "generate: empty prompt and empty session");
  auto seq = runtime::SequenceGen::create(m, config);
  if (!seq) return seq.error();
  const uint64_t rows_before = session.stats().kv_rows_written;
  const auto t0 = Clock::now();
  if (!prompt_ids.empty())
    if (auto st = session.eval(prompt_ids); !st) return st.error();
  (*seq)->accept_prompt(prompt_ids);
  GenerateResult& r = (*seq)->result();
  r.timings.prompt_ms = ms_since(t0);
  r.timings.n_prompt_tokens = static_cast<int64_t>(prompt_ids.size());
  const auto t1 = Clock::now();
  while (auto next = (*seq)->step(session.last_logits(), on_piece)) {
    if (r.tokens.size() == 1) r.timings.ttft_ms = ms_since(t0);
    if (session.n_past() >= m.info.n_ctx) {
      (*seq)->finish(FinishReason::Length);  // context full
      break;
    }
    if (auto st = session.eval(std::span<const int32_t>(&*next, 1)); !st) {
      if (st.error().code != ErrorCode::CapacityExceeded) return st.error();
      (*seq)->finish(FinishReason::Length);  // the KV cache pool is full
      break;
    }
  }
  if ((*seq)->error()) return *(*seq)->error();  // non-finite logits: an error, not a finish
  if (r.tokens.size() == 1 && r.timings.ttft_ms == 0) r.timings.ttft_ms = ms_since(t0);
  r.timings.n_decoded = static_cast<int64_t>(r.tokens.size());
  r.timings.decode_ms = ms_since(t1);
  r.counters = {m.plans.compiles(), session.stats().kv_rows_written - rows_before, 0};
  return std::move(r);
} catch (...) {  // no exception leaves the public API (core/exception_guard.h)
  return error_from_exception("generate", std::current_exception());
}

Result<GenerateResult> generate(Session& session, std::string_view prompt, const GenerateConfig& config,
                                const PieceCallback& on_piece) {
  auto ids = session.model().tokenize(prompt, /*add_special=*/session.n_past() == 0, /*parse_special=*/true);
  if (!ids) return ids.error();
  return generate(session, *ids, config, on_piece);
}

namespace {

// The prompts are an Engine's requests, so a pool too small for all of them at once preempts and
// recomputes (or, dense, queues) instead of cutting sequences short, and prompts sharing leading
// blocks evaluate them once.
Result<std::vector<GenerateResult>> generate_batch_engine(const Model& model,
                                                          const std::vector<std::vector<int32_t>>& prompts,
                                                          const std::vector<GenerateConfig>& configs,
                                                          const BatchPieceCallback& on_piece) {
  std::shared_ptr<const Model> owner = model.weak_from_this().lock();
  if (!owner)
    return make_error(ErrorCode::InvalidArgument,
                      "generate_batch: the model must be owned by the shared_ptr load_llm returned");
  const size_t n = prompts.size();
  auto engine = Engine::create(std::move(owner), {.max_queued = static_cast<int32_t>(n)});
  if (!engine) return engine.error();
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (size_t i = 0; i < n; ++i) {
    PieceCallback piece;
    if (on_piece) piece = [&on_piece, i](std::string_view p) { return on_piece(i, p); };
    auto h = (*engine)->submit({prompts[i], configs.size() == 1 ? configs[0] : configs[i]}, std::move(piece));
    if (!h) {
      for (auto& done : handles) done->cancel();
      return make_error(h.error().code, fmt::format("generate_batch: prompt {}: {}", i, h.error().message));
    }
    handles.push_back(std::move(*h));
  }
  std::vector<GenerateResult> results;
  std::optional<Error> failed;
  for (auto& h : handles) {
    auto r = h->wait();
    if (!r && !failed) failed = r.error();
    if (r) results.push_back(std::move(*r));
  }
  if (failed) return *failed;
  return results;
}

}  // namespace

Result<std::vector<GenerateResult>> generate_batch(const Model& model,
                                                   const std::vector<std::vector<int32_t>>& prompts,
                                                   const std::vector<GenerateConfig>& configs,
                                                   const BatchPieceCallback& on_piece) {
  const Model::Impl& m = internal::Access::impl(model);
  const size_t n = prompts.size();
  if (configs.size() != n && configs.size() != 1)
    return make_error(ErrorCode::InvalidArgument,
                      "generate_batch: give one config per prompt, or one for all");
  if (static_cast<int64_t>(n) > m.info.n_seq_max)
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("generate_batch: {} prompts; a step holds at most {} sequences (n_seq_max)",
                                  n, m.info.n_seq_max));
  for (const auto& p : prompts)
    if (p.empty()) return make_error(ErrorCode::InvalidArgument, "generate_batch: empty prompt");
  if (n == 0) return std::vector<GenerateResult>{};
  return generate_batch_engine(model, prompts, configs, on_piece);
}

}  // namespace glass
