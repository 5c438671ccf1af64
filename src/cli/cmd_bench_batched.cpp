// glass bench --npl: llama-batched-bench's test, so the two compare on the same file. For each
// prompt length pp, generation length tg and count pl: pl sequences each get their own pp random
// prompt tokens, evaluated together (in n_batch chunks; logits of each sequence's last token), then
// tg steps each decode one random token per sequence in one call (logits of all pl). t_pp and t_tg
// are those two phases' wall times; n_kv = pl * (pp + tg) is the cache the test fills. The pool is
// sized for the largest test, and every test starts from an empty one. Output: llama-batched-bench's
// table, or with -o jsonl one JSON object per test with its field names.
#include "cli/cmd_bench_batched.h"

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

namespace glass::cli {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

int bench_batched(BatchedBenchOptions o) {
  if (o.npp.empty() || o.ntg.empty() || o.npl.empty())
    return report(make_error(ErrorCode::InvalidArgument, "bench: --npp, --ntg and --npl need values"));
  if (o.output != "md" && o.output != "jsonl")
    return report(make_error(ErrorCode::InvalidArgument,
                             fmt::format("bench: -o '{}' with --npl (md or jsonl)", o.output)));
  int max_pl = 0, max_kv = 0, max_len = 0;
  for (int pp : o.npp)
    for (int tg : o.ntg)
      for (int pl : o.npl) {
        if (pp < 1 || tg < 0 || pl < 1)
          return report(make_error(ErrorCode::InvalidArgument,
                                   "bench: --npp and --npl must be positive, --ntg not negative"));
        max_pl = std::max(max_pl, pl);
        max_kv = std::max(max_kv, pl * (pp + tg));
        max_len = std::max(max_len, pp + tg);
      }
  LoadOptions& load = o.model.load;
  if (load.n_ctx == 0) load.n_ctx = max_len + 1;
  if (load.kv_size == 0) load.kv_size = max_kv + max_pl * load.kv_block_size;  // a partial block each
  if (load.n_batch == 0) load.n_batch = 512;
  load.n_seq_max = std::max<int64_t>(load.n_seq_max, max_pl);
  int load_rc = 1;
  auto model = load_or_report(o.model, load_rc);
  if (!model) return load_rc;
  auto session = model->new_session();
  if (!session) return report(session.error());
  Session& s = **session;
  auto release_all = [&] {
    for (int j = 0; j < max_pl; ++j) s.release_sequence(j);
  };
  const ModelInfo& info = model->info();
  const int threads =
      load.n_threads > 0 ? load.n_threads : static_cast<int>(std::thread::hardware_concurrency());
  std::mt19937 rng(o.seed);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(info.vocab_size - 1));
  const auto vocab = static_cast<size_t>(info.vocab_size);
  std::vector<float> logits(static_cast<size_t>(max_pl) * vocab);
  std::vector<int32_t> tokens, seqs;

  // Warm up (as llama-batched-bench: 16 tokens of one sequence, then a decode step): both plans bound.
  const auto n_warm = static_cast<size_t>(std::min<int64_t>(16, info.n_ctx - 1));
  tokens.assign(n_warm, 0);
  for (int32_t& t : tokens) t = pick(rng);
  seqs.assign(n_warm, 0);
  if (auto st = s.eval_batch(tokens, seqs, false, std::span(logits.data(), vocab)); !st)
    return report(st.error());
  int32_t one = pick(rng), zero = 0;
  if (auto st = s.eval_batch(std::span(&one, 1), std::span(&zero, 1), true, std::span(logits.data(), vocab));
      !st)
    return report(st.error());
  release_all();

  if (o.output == "md") {
    fmt::print("\nn_kv_max = {}, n_batch = {}, n_seq_max = {}, kv_block_size = {}, n_threads = {}\n\n",
               info.kv_size, info.n_batch, info.n_seq_max, info.kv_block_size, threads);
    fmt::print("|{:>6} | {:>6} | {:>4} | {:>6} | {:>8} | {:>8} | {:>8} | {:>8} | {:>8} | {:>8} |\n", "PP",
               "TG", "B", "N_KV", "T_PP s", "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s");
    fmt::print("|{:-<7}|-{:-<7}|-{:-<5}|-{:-<7}|-{:-<9}|-{:-<9}|-{:-<9}|-{:-<9}|-{:-<9}|-{:-<9}|\n", "", "",
               "", "", "", "", "", "", "", "");
  }
  for (int pp : o.npp)
    for (int tg : o.ntg)
      for (int pl : o.npl) {
        const auto n = static_cast<size_t>(pl);
        tokens.clear();
        seqs.clear();
        for (int j = 0; j < pl; ++j)
          for (int i = 0; i < pp; ++i) {
            tokens.push_back(pick(rng));
            seqs.push_back(j);
          }
        release_all();
        const auto t_pp0 = Clock::now();
        if (auto st = s.eval_batch(tokens, seqs, false, std::span(logits.data(), n * vocab)); !st)
          return report(st.error());
        const double t_pp = seconds_since(t_pp0);
        const auto t_tg0 = Clock::now();
        for (int i = 0; i < tg; ++i) {
          tokens.resize(n);
          seqs.resize(n);
          for (size_t j = 0; j < n; ++j) {
            tokens[j] = pick(rng);
            seqs[j] = static_cast<int32_t>(j);
          }
          if (auto st = s.eval_batch(tokens, seqs, true, std::span(logits.data(), n * vocab)); !st)
            return report(st.error());
        }
        const double t_tg = seconds_since(t_tg0), t = t_pp + t_tg;
        const int n_kv = pl * (pp + tg);
        const double speed_pp = pl * pp / t_pp, speed_tg = tg > 0 ? pl * tg / t_tg : 0.0, speed = n_kv / t;
        if (o.output == "jsonl") {
          const nlohmann::json j = {{"n_kv_max", info.kv_size},
                                    {"n_batch", info.n_batch},
                                    {"n_threads", threads},
                                    {"kv_block_size", info.kv_block_size},
                                    {"pp", pp},
                                    {"tg", tg},
                                    {"pl", pl},
                                    {"n_kv", n_kv},
                                    {"t_pp", t_pp},
                                    {"speed_pp", speed_pp},
                                    {"t_tg", t_tg},
                                    {"speed_tg", speed_tg},
                                    {"t", t},
                                    {"speed", speed}};
          fmt::print("{}\n", j.dump());
        } else {
          fmt::print(
              "|{:>6} | {:>6} | {:>4} | {:>6} | {:>8.3f} | {:>8.2f} | {:>8.3f} | {:>8.2f} | {:>8.3f} | "
              "{:>8.2f} |\n",
              pp, tg, pl, n_kv, t_pp, speed_pp, t_tg, speed_tg, t, speed);
        }
        std::fflush(stdout);
      }
  release_all();
  return 0;
}

}  // namespace glass::cli
