// The chain built from SamplingConfig: order, validation, seeds, snapshots, statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/sampler.h"

namespace glass::runtime {
namespace {

// All truncation off: the chain is temperature then dist.
SamplingConfig plain(float temperature, uint64_t seed) {
  SamplingConfig c;
  c.temperature = temperature;
  c.top_k = 0;
  c.top_p = 1.0f;
  c.min_p = 0.0f;
  c.seed = seed;
  return c;
}

SamplerChain build(const SamplingConfig& c, size_t vocab, size_t context = 0) {
  auto chain = SamplerChain::from_config(c, vocab, context);
  EXPECT_TRUE(chain.ok()) << (chain.ok() ? "" : chain.error().message);
  return std::move(*chain);
}

std::vector<int32_t> draw(SamplerChain& chain, const std::vector<float>& logits, int n) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(chain.sample(logits));
    chain.accept(out.back());
  }
  return out;
}

TEST(SamplerChain, DefaultOrderIsLlamaCpps) {
  EXPECT_EQ(build(SamplingConfig{}, 8).describe(), "top_k -> top_p -> min_p -> temperature -> dist");
  SamplingConfig c;
  c.repeat_penalty = 1.1f;
  c.typical_p = 0.9f;
  c.logit_bias = {{3, -1.0f}};
  EXPECT_EQ(build(c, 8).describe(),
            "logit_bias -> penalties -> top_k -> typical_p -> top_p -> min_p -> temperature -> dist");
  c.penalty_last_n = 0;  // window off: no penalties sampler
  EXPECT_EQ(build(c, 8).describe(),
            "logit_bias -> top_k -> typical_p -> top_p -> min_p -> temperature -> dist");
}

TEST(SamplerChain, CustomOrderRunsOnlyTheNamedSamplers) {
  SamplingConfig c;
  c.order = {"temperature", "top-k", "min_p", "typ_p", "temp"};
  c.typical_p = 0.5f;
  EXPECT_EQ(build(c, 8).describe(), "temperature -> top_k -> min_p -> typical_p -> temperature -> dist");
}

TEST(SamplerChain, UnknownNamesAndBadValuesAreErrors) {
  SamplingConfig c;
  c.order = {"top_k", "mirostat"};
  auto r = SamplerChain::from_config(c, 8);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument);
  EXPECT_NE(r.error().message.find("'mirostat'"), std::string::npos) << r.error().message;

  auto fails = [](auto edit, const char* what) {
    SamplingConfig bad;
    edit(bad);
    auto chain = SamplerChain::from_config(bad, 8);
    EXPECT_FALSE(chain.ok()) << what;
    if (!chain.ok()) {
      EXPECT_NE(chain.error().message.find(what), std::string::npos) << chain.error().message;
    }
  };
  fails([](SamplingConfig& s) { s.logit_bias = {{8, 1.0f}}; }, "logit_bias token 8");
  fails([](SamplingConfig& s) { s.logit_bias = {{-1, 1.0f}}; }, "logit_bias token -1");
  fails([](SamplingConfig& s) { s.penalty_last_n = -2; }, "penalty_last_n");
  fails([](SamplingConfig& s) { s.penalty_last_n = 1 << 30; }, "penalty_last_n");
  fails([](SamplingConfig& s) { s.penalty_last_n = -1; }, "context size");  // context unknown
  fails([](SamplingConfig& s) { s.repeat_penalty = 0.0f; }, "repeat_penalty");
  fails([](SamplingConfig& s) { s.top_p = NAN; }, "top_p");
}

TEST(SamplerChain, TemperatureZeroIsGreedyAfterPenaltiesAndBias) {
  SamplingConfig c = plain(0.0f, 1);
  EXPECT_EQ(build(c, 4).sample(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}), 1);
  c.logit_bias = {{1, -0.5f}};
  EXPECT_EQ(build(c, 4).sample(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}), 2);
  // Repeat penalty 2 over the whole context (2 tokens): after 0 the winner is 1; once 0 has
  // left the window it wins again.
  c.logit_bias.clear();
  c.repeat_penalty = 2.0f;
  c.penalty_last_n = -1;
  SamplerChain chain = build(c, 2, /*context=*/2);
  const std::vector<float> logits{2.0f, 1.5f};
  EXPECT_EQ(chain.sample(logits), 0);
  chain.accept(0);
  EXPECT_EQ(chain.sample(logits), 1);  // 2 / 2 = 1 < 1.5
  chain.accept(1);
  chain.accept(1);
  EXPECT_EQ(chain.sample(logits), 0);  // 1.5 / 2 = 0.75 < 2
  EXPECT_EQ(chain.stats().n_sample, 3u);
}

// The fast chain's pick against the same samplers run over candidates, for 200 logit vectors of
// `levels` values (many ties), each changed by poison(trial, logits, h) first.
template <class Poison>
void expect_picks_of_the_full_chain(SamplerChain& fast, uint32_t mul, int levels_shift,
                                    const Poison& poison) {
  std::vector<std::unique_ptr<Sampler>> copies;
  for (const auto& sm : fast.samplers()) copies.push_back(sm->clone());
  SamplerChain full(std::move(copies), 64);
  for (uint32_t trial = 0; trial < 200; ++trial) {
    std::vector<float> logits(64);
    uint32_t h = trial * mul + 1;
    for (float& l : logits) {
      h = h * 1664525u + 1013904223u;
      l = static_cast<float>(h >> levels_shift) - static_cast<float>(1u << (31 - levels_shift));
    }
    poison(trial, logits, h);
    Candidates cands;
    for (size_t i = 0; i < logits.size(); ++i)
      cands.items.push_back({static_cast<int32_t>(i), std::isnan(logits[i]) ? -INFINITY : logits[i], 0.0f});
    full.apply(cands);
    EXPECT_EQ(fast.sample(logits), cands.selected) << "trial " << trial;
  }
}

// A chain that keeps the best candidate until temperature 0 selects it takes the highest logit in
// one pass: the same id as running the samplers (ties to the lowest id, NaN as -inf); a sampler
// that can drop the best (typical_p, XTC) or change logits (bias, penalties) keeps the full chain.
TEST(SamplerChain, GreedyFastPathPicksWhatTheChainPicks) {
  SamplingConfig c;
  c.temperature = 0.0f;
  c.top_n_sigma = 1.0f;
  SamplerChain fast = build(c, 64);
  ASSERT_TRUE(fast.greedy()) << fast.describe();
  expect_picks_of_the_full_chain(fast, 2654435761u, 28,
                                 [](uint32_t trial, std::vector<float>& l, uint32_t h) {
                                   if (trial % 3 == 0) l[h % 64] = NAN;
                                   if (trial % 5 == 0) l[(h >> 8) % 64] = -INFINITY;
                                 });
  EXPECT_EQ(fast.stats().n_sample, 200u);
  EXPECT_EQ(fast.sample(std::vector<float>(8, NAN)), 0);

  // Leading logit biases (--ignore-eos, --logit-bias) are added in the same pass; a repeated id adds
  // both, in the sampler's order.
  c.logit_bias = {{5, 2.0f}, {1, -INFINITY}, {5, 1.5f}, {2, 0.5f}};
  SamplerChain biased = build(c, 64);
  ASSERT_TRUE(biased.greedy()) << biased.describe();
  expect_picks_of_the_full_chain(biased, 2246822519u, 29,
                                 [](uint32_t trial, std::vector<float>& l, uint32_t) {
                                   if (trial % 4 == 0) l[1] = 100.0f;  // banned whatever its logit
                                   if (trial % 7 == 0) l[5] = NAN;
                                 });

  for (const auto& [what, change] : std::vector<std::pair<std::string, std::function<void(SamplingConfig&)>>>{
           {"temperature 0.7", [](SamplingConfig& k) { k.temperature = 0.7f; }},
           {"typical_p", [](SamplingConfig& k) { k.typical_p = 0.5f; }},
           {"xtc", [](SamplingConfig& k) { k.xtc_probability = 0.5f; }},
           {"penalties", [](SamplingConfig& k) { k.repeat_penalty = 1.1f; }},
           {"dynatemp", [](SamplingConfig& k) { k.dynatemp_range = 0.5f; }}}) {
    SamplingConfig k = c;
    change(k);
    EXPECT_FALSE(build(k, 64).greedy()) << what;
  }
}

TEST(SamplerChain, SameSeedSameDrawsAndRandomSeedIsReported) {
  const std::vector<float> logits{0.1f, 0.2f, 0.0f, -0.3f, 0.25f, 0.05f};
  SamplingConfig c;  // default chain: top-k, top-p, min-p, temperature 0.8
  c.seed = 1234;
  c.repeat_penalty = 1.2f;
  auto a = build(c, 6), b = build(c, 6);
  EXPECT_EQ(a.seed(), 1234u);
  const auto da = draw(a, logits, 200);
  EXPECT_EQ(da, draw(b, logits, 200));
  c.seed = 1235;
  auto other = build(c, 6);
  EXPECT_NE(da, draw(other, logits, 200));

  c.seed = SamplingConfig::kRandomSeed;
  auto r = build(c, 6);
  EXPECT_NE(r.seed(), SamplingConfig::kRandomSeed);
  const auto dr = draw(r, logits, 200);
  c.seed = r.seed();  // the reported seed replays the run
  auto replay = build(c, 6);
  EXPECT_EQ(draw(replay, logits, 200), dr);
}

TEST(SamplerChain, SnapshotRestoresRngAndPenaltyWindow) {
  const std::vector<float> logits{0.1f, 0.2f, 0.0f, -0.3f, 0.25f, 0.05f};
  SamplingConfig c = plain(1.0f, 99);
  c.repeat_penalty = 1.3f;
  c.frequency_penalty = 0.2f;
  c.penalty_last_n = 4;
  auto chain = build(c, 6);
  draw(chain, logits, 10);
  const std::string snap = chain.save_state();
  const auto after = draw(chain, logits, 30);
  ASSERT_TRUE(chain.load_state(snap).ok());
  EXPECT_EQ(draw(chain, logits, 30), after);

  auto fresh = build(c, 6);  // a new chain of the same config takes the snapshot too
  ASSERT_TRUE(fresh.load_state(snap).ok());
  EXPECT_EQ(draw(fresh, logits, 30), after);
  SamplerChain copy = fresh;  // and copies continue identically
  EXPECT_EQ(draw(copy, logits, 20), draw(fresh, logits, 20));

  // A differently built chain, or a damaged snapshot, is refused and changes nothing.
  SamplingConfig d = plain(1.0f, 99);
  auto no_penalties = build(d, 6);
  EXPECT_FALSE(no_penalties.load_state(snap).ok());
  const std::string before = chain.save_state();
  std::string damaged = snap;
  damaged.resize(damaged.size() - 3);
  EXPECT_FALSE(chain.load_state(damaged).ok());
  EXPECT_FALSE(chain.load_state("").ok());
  EXPECT_EQ(chain.save_state(), before);
}

TEST(SamplerChain, ResetRestartsTheRunAndCloneContinuesIt) {
  const std::vector<float> logits{0.0f, 0.5f, 1.0f};
  SamplingConfig c = plain(1.0f, 5);
  c.presence_penalty = 0.5f;
  auto chain = build(c, 3);
  const auto first = draw(chain, logits, 40);
  auto cloned = chain.clone();
  Candidates a, b;
  for (int i = 0; i < 20; ++i) {
    a.items = {{0, 0.0f, 0.0f}, {1, 0.5f, 0.0f}, {2, 1.0f, 0.0f}};
    b = a;
    a.selected = b.selected = -1;
    chain.apply(a);
    cloned->apply(b);
    EXPECT_EQ(a.selected, b.selected);
  }
  chain.reset();
  EXPECT_EQ(draw(chain, logits, 40), first);
}

// Pearson's chi-square of `counts` against `probs` over n draws.
double chi_square(const std::vector<int>& counts, const std::vector<double>& probs, int n) {
  double x2 = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double expected = probs[i] * n;
    x2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return x2;
}

std::vector<double> softmax(const std::vector<float>& logits, float t) {
  std::vector<double> p;
  double sum = 0.0;
  for (float l : logits) sum += std::exp(l / t);
  for (float l : logits) p.push_back(std::exp(l / t) / sum);
  return p;
}

TEST(SamplerChain, SeededDrawsFollowTheSoftmax) {
  // 20000 draws on 6 tokens, 5 degrees of freedom: the 0.999 quantile of chi-square(5) is 20.515.
  const std::vector<float> logits{0.0f, 0.5f, 1.0f, -0.5f, 1.5f, -1.0f};
  const int n = 20000;
  for (const float t : {1.0f, 0.7f}) {
    auto chain = build(plain(t, 2024), logits.size());
    std::vector<int> counts(logits.size(), 0);
    for (int i = 0; i < n; ++i) ++counts[static_cast<size_t>(chain.sample(logits))];
    EXPECT_LT(chi_square(counts, softmax(logits, t), n), 20.515) << "temperature " << t;
  }
  // Top-k 3 renormalizes over tokens 4, 2, 1 (2 degrees of freedom: 0.999 quantile 13.816).
  SamplingConfig c = plain(1.0f, 7);
  c.top_k = 3;
  auto chain = build(c, logits.size());
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n; ++i) ++counts[static_cast<size_t>(chain.sample(logits))];
  EXPECT_EQ(counts[0] + counts[3] + counts[5], 0);
  const std::vector<float> kept{0.5f, 1.0f, 1.5f};
  EXPECT_LT(chi_square({counts[1], counts[2], counts[4]}, softmax(kept, 1.0f), n), 13.816);
}

}  // namespace
}  // namespace glass::runtime
