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

// Dense storage: every sequence owns a full-length run of rows, so the set advances together until
// each finishes (or reaches n_ctx).
Result<std::vector<GenerateResult>> generate_batch_dense(const Model& model,
                                                         const std::vector<std::vector<int32_t>>& prompts,
                                                         const std::vector<GenerateConfig>& configs,
                                                         const BatchPieceCallback& on_piece) {
  const Model::Impl& m = internal::Access::impl(model);
  const size_t n = prompts.size();
  auto session = model.new_session();
  if (!session) return session.error();
  Session::Impl& s = internal::Access::impl(**session);

  std::vector<std::unique_ptr<runtime::SequenceGen>> seqs;
  std::vector<int32_t> tokens, ids;
  for (size_t i = 0; i < n; ++i) {
    if (prompts[i].empty()) return make_error(ErrorCode::InvalidArgument, "generate_batch: empty prompt");
    auto seq = runtime::SequenceGen::create(m, configs.size() == 1 ? configs[0] : configs[i]);
    if (!seq) return seq.error();
    (*seq)->accept_prompt(prompts[i]);
    (*seq)->result().timings.n_prompt_tokens = static_cast<int64_t>(prompts[i].size());
    seqs.push_back(std::move(*seq));
    tokens.insert(tokens.end(), prompts[i].begin(), prompts[i].end());
    ids.insert(ids.end(), prompts[i].size(), static_cast<int32_t>(i));
  }
  const auto vocab = static_cast<size_t>(m.info.vocab_size);
  // Logits of each sequence's newest token only: row i is sequence i's after the prompts.
  std::vector<float> logits(n * vocab);
  const auto t0 = Clock::now();
  if (auto st = s.eval_tokens(tokens, ids, LogitRows::LastOfEachSequence, logits); !st) return st.error();
  std::vector<size_t> row(n);
  for (size_t i = 0; i < n; ++i) row[i] = i;
  const double prompt_ms = ms_since(t0);
  while (true) {
    tokens.clear();
    ids.clear();
    for (size_t i = 0; i < n; ++i) {
      const PieceCallback piece =
          on_piece ? PieceCallback([&, i](std::string_view p) { return on_piece(i, p); }) : PieceCallback{};
      auto next = seqs[i]->step(std::span<const float>(logits.data() + row[i] * vocab, vocab), piece);
      if (!next) {
        s.release(static_cast<int32_t>(i));  // finished: its blocks go back to the pool for the others
        continue;
      }
      if (seqs[i]->result().tokens.size() == 1) seqs[i]->result().timings.ttft_ms = ms_since(t0);
      if (s.length(static_cast<int32_t>(i)) >= m.info.n_ctx) {
        seqs[i]->finish(FinishReason::Length);  // this sequence's context is full
        s.release(static_cast<int32_t>(i));
        continue;
      }
      tokens.push_back(*next);
      ids.push_back(static_cast<int32_t>(i));
    }
    if (tokens.empty()) break;
    auto st =
        s.eval_tokens(tokens, ids, LogitRows::All, std::span<float>(logits.data(), tokens.size() * vocab));
    if (!st && st.error().code == ErrorCode::CapacityExceeded) {
      // The pool is out of blocks: the sequences still running end here with what they have
      // (the engine preempts and recomputes instead).
      for (int32_t id : ids) seqs[static_cast<size_t>(id)]->finish(FinishReason::Length);
      break;
    }
    if (!st) return st.error();
    for (size_t k = 0; k < ids.size(); ++k) row[static_cast<size_t>(ids[k])] = k;
  }
  for (size_t i = 0; i < n; ++i)
    if (const auto& e = seqs[i]->error())
      return make_error(e->code, fmt::format("generate_batch: sequence {}: {}", i, e->message));
  std::vector<GenerateResult> results;
  for (auto& seq : seqs) {
    GenerateResult& r = seq->result();
    r.timings.prompt_ms = prompt_ms;
    r.timings.n_decoded = static_cast<int64_t>(r.tokens.size());
    r.timings.decode_ms = ms_since(t0) - prompt_ms;
    r.counters.plans_compiled = m.plans.compiles();
    results.push_back(std::move(r));
  }
  return results;
}

// Paged storage: the prompts are an Engine's requests, so a pool too small for all of them at once
// preempts and recomputes instead of cutting sequences short, and prompts sharing leading blocks
// evaluate them once.
Result<std::vector<GenerateResult>> generate_batch_engine(const Model& model,
                                                          const std::vector<std::vector<int32_t>>& prompts,
                                                          const std::vector<GenerateConfig>& configs,
                                                          const BatchPieceCallback& on_piece) {
  std::shared_ptr<const Model> owner = model.weak_from_this().lock();
  if (!owner)
    return make_error(ErrorCode::InvalidArgument,
                      "generate_batch: the model must be owned by the shared_ptr load_llm returned");
  const size_t n = prompts.size();
  auto engine = Engine::create(
      std::move(owner), {.max_running = static_cast<int32_t>(n), .max_queued = static_cast<int32_t>(n)});
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
  if (m.options.kv_storage == KvStorage::Dense)
    return generate_batch_dense(model, prompts, configs, on_piece);
  return generate_batch_engine(model, prompts, configs, on_piece);
}

}  // namespace glass
