// DRY, XTC, top-n-sigma, dynamic temperature and Mirostat against their definitions: hand-computed
// penalties and kept sets, and seeded draws checked against the distribution the definition gives
// (Pearson's chi-square at the 0.999 quantile, as sampler_chain_test's softmax check).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <map>

#include "runtime/sampler.h"

namespace glass::runtime {
namespace {

Candidates of(const std::vector<float>& logits) {
  Candidates c;
  for (size_t i = 0; i < logits.size(); ++i) c.items.push_back({static_cast<int32_t>(i), logits[i], 0.0f});
  return c;
}

Candidates of_probs(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return of(logits);
}

std::vector<int32_t> ids(const Candidates& c) {
  std::vector<int32_t> out;
  for (const Candidate& x : c.items) out.push_back(x.id);
  return out;
}

double chi_square(const std::vector<int>& counts, const std::vector<double>& probs, int n) {
  double x2 = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double expected = probs[i] * n;
    x2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return x2;
}

using Ids = std::vector<int32_t>;

// Tokens: a=0 b=1 c=2 d=3 x=4 y=5 (vocabulary 6, all logits 0, so a logit is minus its penalty).
std::vector<float> dry_logits(Sampler& s, const Ids& history) {
  s.reset();
  for (int32_t t : history) s.accept(t);
  auto c = of(std::vector<float>(6, 0.0f));
  s.apply(c);
  std::vector<float> out;
  for (const Candidate& x : c.items) out.push_back(x.logit);
  return out;
}

TEST(SamplerDry, PenalizesTheTokenThatExtendsEachRepeat) {
  // llama.cpp's worked example: a b c c b c y a b c. The end "a b c" also ends at the first c (so
  // the next c would make a repeat of 3), "b c" ends before y (2), "c" before b (1).
  auto s = make_dry(/*multiplier=*/1.0f, /*base=*/2.0f, /*allowed_length=*/2, /*window=*/64, {}, 6);
  const std::vector<float> got = dry_logits(*s, {0, 1, 2, 2, 1, 2, 5, 0, 1, 2});
  EXPECT_FLOAT_EQ(got[2], -2.0f);  // c: 1 * 2^(3 - 2)
  EXPECT_FLOAT_EQ(got[5], -1.0f);  // y: 1 * 2^(2 - 2)
  EXPECT_FLOAT_EQ(got[1], 0.0f);   // b: a repeat of 1 is allowed
  EXPECT_FLOAT_EQ(got[0], 0.0f);
  // Allowed length 1: b is penalized too, c by 2^2.
  auto loose = make_dry(1.0f, 2.0f, 1, 64, {}, 6);
  const std::vector<float> l = dry_logits(*loose, {0, 1, 2, 2, 1, 2, 5, 0, 1, 2});
  EXPECT_FLOAT_EQ(l[2], -4.0f);
  EXPECT_FLOAT_EQ(l[5], -2.0f);
  EXPECT_FLOAT_EQ(l[1], -1.0f);
  // The window: only the last 4 tokens (y a b c) are seen, no repeat at all.
  auto short_window = make_dry(1.0f, 2.0f, 2, 4, {}, 6);
  EXPECT_EQ(dry_logits(*short_window, {0, 1, 2, 2, 1, 2, 5, 0, 1, 2}), std::vector<float>(6, 0.0f));
  // Too few tokens to repeat more than allowed: no-op.
  EXPECT_EQ(dry_logits(*s, {0, 1}), std::vector<float>(6, 0.0f));
}

TEST(SamplerDry, SequenceBreakersBoundTheRepeat) {
  const Ids history{0, 1, 2, 3, 0, 1, 2};  // a b c d a b c: d would extend "a b c" (3)
  auto plain = make_dry(1.0f, 2.0f, 2, 64, {}, 6);
  EXPECT_FLOAT_EQ(dry_logits(*plain, history)[3], -2.0f);
  // 'a' a single-token breaker, 2 tokens back: repeats reach only "b c" (2), and a itself is exempt.
  auto single = make_dry(1.0f, 2.0f, 2, 64, {{0, {}}}, 6);
  const auto s = dry_logits(*single, history);
  EXPECT_FLOAT_EQ(s[3], -1.0f);
  // "a b" as a two-token breaker (head a, tail b) ends 1 token back: nothing repeats past it.
  auto pair = make_dry(1.0f, 2.0f, 2, 64, {{0, {1}}}, 6);
  EXPECT_EQ(dry_logits(*pair, history), std::vector<float>(6, 0.0f));
  // A head whose tail does not follow is no breaker: "a x" never occurs.
  auto other = make_dry(1.0f, 2.0f, 2, 64, {{0, {4}}}, 6);
  EXPECT_FLOAT_EQ(dry_logits(*other, history)[3], -2.0f);
}

TEST(SamplerDry, ExponentIsCappedAndStateRoundTrips) {
  // A repeat of 200 with base 2: 2^198 overflows a float; the cap keeps the penalty finite.
  Ids history;
  for (int i = 0; i < 201; ++i) history.push_back(0);
  auto s = make_dry(1.0f, 2.0f, 2, 512, {}, 6);
  const float p = dry_logits(*s, history)[0];
  EXPECT_TRUE(std::isfinite(p)) << p;
  EXPECT_LT(p, -1e30f);

  auto a = make_dry(1.0f, 2.0f, 2, 8, {}, 6);
  for (int32_t t : {0, 1, 2, 0, 1}) a->accept(t);
  const std::string state = a->save_state();
  EXPECT_EQ(state, "5 0 1 2 0 1");
  auto b = make_dry(1.0f, 2.0f, 2, 8, {}, 6);
  ASSERT_TRUE(b->load_state(state).ok());
  auto ca = of(std::vector<float>(6, 0.0f)), cb = ca;
  a->apply(ca);
  b->apply(cb);
  EXPECT_FLOAT_EQ(ca.items[2].logit, -1.0f);  // "a b" repeats: c would extend it
  EXPECT_FLOAT_EQ(cb.items[2].logit, -1.0f);
  EXPECT_FALSE(b->load_state("9 0 0 0 0 0 0 0 0 0").ok());  // more than the window
  EXPECT_FALSE(b->load_state("2 1").ok());
}

TEST(SamplerDry, BreakerTextBecomesHeadsAndTails) {
  // Pieces: 0 "xa", 1 "b", 2 "ab", 3 "c", 4 "a"; "ab" is contained in 2, starts at the end of 0
  // and is 4 followed by 1.
  const std::vector<std::string> pieces{"xa", "b", "ab", "c", "a"};
  SamplerVocab vocab{.piece = [&](int32_t id) { return pieces[static_cast<size_t>(id)]; },
                     .tokenize = [](std::string_view text) { return text == "b" ? Ids{1} : Ids{}; }};
  const std::vector<std::string> texts{"ab", "ab"};  // twice: listed once
  const auto got = dry_breakers(texts, vocab, pieces.size());
  std::map<int32_t, Ids> by_head;
  for (const DryBreaker& b : got) by_head[b.head] = b.tail;
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(by_head.at(0), Ids{1});
  EXPECT_EQ(by_head.at(2), Ids{});
  EXPECT_EQ(by_head.at(4), Ids{1});
}

TEST(SamplerXtc, RemovesTheTopChoicesButTheLeastLikelyOfThem) {
  // p = 0.4 0.3 0.2 0.1: at threshold 0.25 the tokens above are 0 and 1, so 0 goes.
  auto always = make_xtc(1.0f, 0.25f, 5);
  auto c = of_probs({0.4, 0.3, 0.2, 0.1});
  always->apply(c);
  EXPECT_EQ(ids(c), (Ids{1, 2, 3}));
  // Threshold 0.15: 0, 1, 2 are above; 0 and 1 go.
  auto lower = make_xtc(1.0f, 0.15f, 5);
  auto d = of_probs({0.4, 0.3, 0.2, 0.1});
  lower->apply(d);
  EXPECT_EQ(ids(d), (Ids{2, 3}));
  // Only one token above (0.35): nothing to exclude; above 0.5: off.
  for (const float t : {0.35f, 0.6f}) {
    auto e = of_probs({0.4, 0.3, 0.2, 0.1});
    make_xtc(1.0f, t, 5)->apply(e);
    EXPECT_EQ(e.items.size(), 4u) << t;
  }
}

TEST(SamplerXtc, ChainDrawsFollowTheMixture) {
  // With probability 1/2 the draw is from p, else from p without token 0 (renormalized over 0.6):
  // 0.2, 0.15 + 0.25, 0.1 + 1/6, 0.05 + 1/12. 3 degrees of freedom: 0.999 quantile 16.266.
  SamplingConfig c;
  c.temperature = 1.0f;
  c.top_k = 0;
  c.top_p = 1.0f;
  c.min_p = 0.0f;
  c.xtc_probability = 0.5f;
  c.xtc_threshold = 0.25f;
  c.seed = 99;
  auto chain = SamplerChain::from_config(c, 4);
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  EXPECT_EQ(chain->describe(), "xtc -> temperature -> dist");
  std::vector<float> logits;
  for (double p : {0.4, 0.3, 0.2, 0.1}) logits.push_back(static_cast<float>(std::log(p)));
  const int n = 20000;
  std::vector<int> counts(4, 0);
  for (int i = 0; i < n; ++i) ++counts[static_cast<size_t>(chain->sample(logits))];
  EXPECT_LT(chi_square(counts, {0.2, 0.4, 0.1 + 1.0 / 6, 0.05 + 1.0 / 12}, n), 16.266);
}

TEST(SamplerTopNSigma, KeepsLogitsWithinNDeviationsOfTheBest) {
  // Logits 0 1 2 3 10: mean 3.2, population deviation sqrt(12.56) = 3.544.
  for (const auto& [n, want] :
       std::vector<std::pair<float, Ids>>{{1.0f, {4}}, {2.0f, {3, 4}}, {2.5f, {2, 3, 4}}}) {
    auto c = of({0.0f, 1.0f, 2.0f, 3.0f, 10.0f});
    make_top_n_sigma(n)->apply(c);
    EXPECT_EQ(ids(c), want) << n;
    // Banned tokens do not count in the statistics (and are dropped).
    auto d = of({0.0f, 1.0f, 2.0f, 3.0f, 10.0f, -INFINITY});
    make_top_n_sigma(n)->apply(d);
    EXPECT_EQ(ids(d), want) << n;
  }
  auto off = of({0.0f, 1.0f, 10.0f});
  make_top_n_sigma(-1.0f)->apply(off);
  EXPECT_EQ(off.items.size(), 3u);
}

TEST(SamplerDynaTemp, TemperatureFollowsTheNormalizedEntropy) {
  // p = 1/2 1/4 1/4: H = 1.5 ln 2, H / ln 3 = 0.946395; exponent 2: 0.895664; temp 1 +- 0.5 gives
  // t = 0.5 + 1.0 * 0.895664.
  const double t = 0.5 + std::pow(1.5 * std::log(2.0) / std::log(3.0), 2.0);
  auto c = of_probs({0.5, 0.25, 0.25});
  make_dynatemp(1.0f, 0.5f, 2.0f)->apply(c);
  ASSERT_EQ(c.items.size(), 3u);
  EXPECT_NEAR(c.items[0].logit, std::log(0.5) / t, 1e-5);
  EXPECT_NEAR(c.items[1].logit, std::log(0.25) / t, 1e-5);
  // Uniform: normalized entropy 1, the hottest end (1.5).
  auto u = of({3.0f, 3.0f, 3.0f, 3.0f});
  make_dynatemp(1.0f, 0.5f, 1.0f)->apply(u);
  EXPECT_FLOAT_EQ(u.items[0].logit, 2.0f);
  // Range 0 is the plain temperature.
  EXPECT_EQ(make_dynatemp(0.7f, 0.0f, 1.0f)->name(), "temperature");
}

TEST(SamplerDynaTemp, ChainDrawsFollowTheScaledSoftmax) {
  SamplingConfig c;
  c.temperature = 1.0f;
  c.dynatemp_range = 0.5f;
  c.dynatemp_exponent = 2.0f;
  c.top_k = 0;
  c.top_p = 1.0f;
  c.min_p = 0.0f;
  c.seed = 3;
  auto chain = SamplerChain::from_config(c, 3);
  ASSERT_TRUE(chain.ok());
  EXPECT_EQ(chain->describe(), "dynatemp -> dist");
  const double t = 0.5 + std::pow(1.5 * std::log(2.0) / std::log(3.0), 2.0);
  std::vector<double> want;
  double z = 0.0;
  for (double p : {0.5, 0.25, 0.25}) z += std::pow(p, 1.0 / t);
  for (double p : {0.5, 0.25, 0.25}) want.push_back(std::pow(p, 1.0 / t) / z);
  std::vector<float> logits{static_cast<float>(std::log(0.5)), static_cast<float>(std::log(0.25)),
                            static_cast<float>(std::log(0.25))};
  const int n = 20000;
  std::vector<int> counts(3, 0);
  for (int i = 0; i < n; ++i) ++counts[static_cast<size_t>(chain->sample(logits))];
  EXPECT_LT(chi_square(counts, want, n), 13.816);  // 2 degrees of freedom
}

TEST(SamplerMirostat, V2TruncatesAtMuAndMovesMuByTheSurprise) {
  // Surprises 1 2 3 3 bits; tau 1: mu starts at 2, keeping tokens 0 and 1 (renormalized 2/3, 1/3).
  const std::vector<double> probs{0.5, 0.25, 0.125, 0.125};
  const int n = 20000;
  std::vector<int> counts(2, 0);
  for (int i = 0; i < n; ++i) {
    auto s = make_mirostat(2, /*tau=*/1.0f, /*eta=*/0.5f, 4, static_cast<uint64_t>(i));
    auto c = of_probs(probs);
    s->apply(c);
    ASSERT_TRUE(c.selected == 0 || c.selected == 1) << c.selected;
    ++counts[static_cast<size_t>(c.selected)];
    // mu -= eta (surprise - tau), the surprise of the renormalized pick: 2/3 or 1/3.
    const double mu = 2.0 - 0.5 * (-std::log2(c.selected == 0 ? 2.0 / 3 : 1.0 / 3) - 1.0);
    const std::string state = s->save_state();
    const float got =
        std::bit_cast<float>(static_cast<uint32_t>(std::stoul(state.substr(0, state.find(' ')))));
    EXPECT_NEAR(got, mu, 1e-5);
  }
  EXPECT_LT(chi_square(counts, {2.0 / 3, 1.0 / 3}, n), 10.828);  // 1 degree of freedom
}

TEST(SamplerMirostat, V1KeepsTheTopKOfTheZipfEstimate) {
  // Zipf p_i ~ (i + 1)^-1.5 over N = 1000: the estimate of s is exactly 1.5, and with tau 3
  // (mu = 6) k = (0.5 * 2^6 / (1 - 1000^-0.5))^(1 / 1.5) = 10.29: the top 10, renormalized.
  const size_t N = 1000;
  std::vector<double> probs;
  double z = 0.0;
  for (size_t i = 0; i < N; ++i) z += std::pow(static_cast<double>(i + 1), -1.5);
  for (size_t i = 0; i < N; ++i) probs.push_back(std::pow(static_cast<double>(i + 1), -1.5) / z);
  const double k = std::pow(0.5 * 64 / (1 - std::pow(1000.0, -0.5)), 1 / 1.5);
  ASSERT_EQ(static_cast<int>(k), 10);
  std::vector<double> want(probs.begin(), probs.begin() + 10);
  double kept = 0.0;
  for (double p : want) kept += p;
  for (double& p : want) p /= kept;
  const int n = 20000;
  std::vector<int> counts(10, 0);
  for (int i = 0; i < n; ++i) {
    auto s = make_mirostat(1, 3.0f, 0.1f, N, static_cast<uint64_t>(i) + 1000);
    auto c = of_probs(probs);
    s->apply(c);
    ASSERT_GE(c.selected, 0);
    ASSERT_LT(c.selected, 10);
    ++counts[static_cast<size_t>(c.selected)];
  }
  EXPECT_LT(chi_square(counts, want, n), 27.877);  // 9 degrees of freedom
}

TEST(SamplerChainExtra, OrderDefaultsMirostatAndValidation) {
  SamplingConfig c;
  c.dry_multiplier = 0.8f;
  c.top_n_sigma = 1.5f;
  c.xtc_probability = 0.5f;
  c.repeat_penalty = 1.1f;
  auto chain = SamplerChain::from_config(c, 8, 64);
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  EXPECT_EQ(chain->describe(),
            "penalties -> dry -> top_n_sigma -> top_k -> top_p -> min_p -> xtc -> temperature -> dist");
  // llama.cpp's names and aliases, any case.
  c.order = {"DRY", "top-n-sigma", "topk", "XTC", "temperature"};
  chain = SamplerChain::from_config(c, 8, 64);
  ASSERT_TRUE(chain.ok()) << chain.error().message;
  EXPECT_EQ(chain->describe(), "dry -> top_n_sigma -> top_k -> xtc -> temperature -> dist");
  // Mirostat replaces the chain after the bias: temperature, then its own draw.
  SamplingConfig m;
  m.mirostat = 2;
  m.logit_bias = {{1, 1.0f}};
  chain = SamplerChain::from_config(m, 8);
  ASSERT_TRUE(chain.ok());
  EXPECT_EQ(chain->describe(), "logit_bias -> temperature -> mirostat_v2");
  m.mirostat = 1;
  chain = SamplerChain::from_config(m, 8);
  ASSERT_TRUE(chain.ok());
  EXPECT_EQ(chain->describe(), "logit_bias -> temperature -> mirostat");
  // Snapshots carry DRY's window, XTC's coin and Mirostat's mu.
  SamplingConfig all = c;
  all.order.clear();
  auto a = SamplerChain::from_config(all, 8, 64);
  ASSERT_TRUE(a.ok());
  const std::vector<float> logits{0.1f, 0.5f, 0.2f, 0.9f, 0.3f, 0.0f, 0.4f, 0.6f};
  for (int i = 0; i < 20; ++i) a->accept(a->sample(logits));
  auto b = SamplerChain::from_config(all, 8, 64);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->load_state(a->save_state()).ok());
  for (int i = 0; i < 20; ++i) {
    const int32_t x = a->sample(logits), y = b->sample(logits);
    ASSERT_EQ(x, y) << i;
    a->accept(x);
    b->accept(y);
  }

  auto fails = [](auto edit, const char* what) {
    SamplingConfig bad;
    edit(bad);
    auto r = SamplerChain::from_config(bad, 8, 64);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument);
    EXPECT_NE(r.error().message.find(what), std::string::npos) << r.error().message;
  };
  fails([](SamplingConfig& s) { s.top_p = 2.0f; }, "top_p must be in [0, 1]");
  fails([](SamplingConfig& s) { s.min_p = 2.0f; }, "min_p must be in [0, 1]");
  fails([](SamplingConfig& s) { s.typical_p = -1.0f; }, "typical_p must be in [0, 1]");
  fails([](SamplingConfig& s) { s.temperature = INFINITY; }, "temperature");
  fails([](SamplingConfig& s) { s.mirostat = 3; }, "mirostat");
  fails([](SamplingConfig& s) { s.dry_base = 0.5f; }, "dry_base");
  fails([](SamplingConfig& s) { s.dry_multiplier = -1.0f; }, "dry_multiplier");
  fails([](SamplingConfig& s) { s.dry_penalty_last_n = -2; }, "dry_penalty_last_n");
  fails([](SamplingConfig& s) { s.xtc_probability = 1.5f; }, "xtc_probability");
  fails([](SamplingConfig& s) { s.dynatemp_range = -0.1f; }, "dynatemp_range");
  // llama.cpp's meanings kept: temperature <= 0 greedy, top_k <= 0 off, top_p 1 off.
  SamplingConfig ok;
  ok.temperature = -1.0f;
  ok.top_k = -5;
  ok.top_p = 1.0f;
  EXPECT_TRUE(SamplerChain::from_config(ok, 8).ok());
}

}  // namespace
}  // namespace glass::runtime
