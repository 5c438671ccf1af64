// Log probabilities of generated tokens (GenerateConfig::logprobs / top_logprobs): every entry equals a
// log-softmax of the step's raw logits computed here by a full sort, greedy tokens are their step's most
// likely, sampling is unchanged by asking, and generate, generate_batch, Session::chat and Engine
// requests (with their per-token callback) give the same values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "glass/engine.h"
#include "glass/llm.h"
#include "support/fixtures.h"

namespace glass {
namespace {

std::shared_ptr<Model> bundled() {
  static const std::shared_ptr<Model> m = [] {
    LoadOptions opt{.backend = "cpu", .n_ctx = 256, .kv_size = 1024, .n_threads = 2};
    auto r = load_llm((test::source_dir() / "models/stories260K.gguf").string(), opt);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? *r : nullptr;
  }();
  return m;
}

GenerateConfig with_logprobs(int32_t max_tokens, int32_t top, float temperature = 0.0f) {
  GenerateConfig c;
  c.max_tokens = max_tokens;
  c.sampling.temperature = temperature;
  c.sampling.seed = 7;
  c.stop_at_end_of_generation = false;  // every step makes a token
  c.logprobs = true;
  c.top_logprobs = top;
  return c;
}

// The oracle: log-softmax in double over the whole vocabulary, fully sorted (higher first, lower id on ties).
TokenLogprobs reference(std::span<const float> logits, int32_t id, int32_t top) {
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - max);
  const double log_z = max + std::log(sum);
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  TokenLogprobs out{.token = {id, static_cast<float>(logits[id] - log_z)}};
  for (int32_t k = 0; k < top; ++k)
    out.top.push_back({order[k], static_cast<float>(logits[order[k]] - log_z)});
  return out;
}

// Values agree within `tol` (the batched and the one-sequence evaluations may round differently); ids
// rank by rank, except where a neighbour is within tol (a near-tie may swap).
void expect_close(const TokenLogprobs& got, const TokenLogprobs& want, float tol, const std::string& what) {
  EXPECT_EQ(got.token.id, want.token.id) << what;
  EXPECT_NEAR(got.token.logprob, want.token.logprob, tol) << what;
  ASSERT_EQ(got.top.size(), want.top.size()) << what;
  for (size_t k = 0; k < want.top.size(); ++k) {
    EXPECT_NEAR(got.top[k].logprob, want.top[k].logprob, tol) << what << " rank " << k;
    const bool tie = (k > 0 && want.top[k - 1].logprob - want.top[k].logprob <= 2 * tol) ||
                     (k + 1 < want.top.size() && want.top[k].logprob - want.top[k + 1].logprob <= 2 * tol);
    if (!tie) {
      EXPECT_EQ(got.top[k].id, want.top[k].id) << what << " rank " << k;
    }
  }
}

void expect_all_close(const GenerateResult& got, const GenerateResult& want, float tol) {
  ASSERT_EQ(got.tokens, want.tokens);
  ASSERT_EQ(got.logprobs.size(), want.logprobs.size());
  for (size_t i = 0; i < want.logprobs.size(); ++i)
    expect_close(got.logprobs[i], want.logprobs[i], tol, "token " + std::to_string(i));
}

GenerateResult generate_fresh(const std::vector<int32_t>& prompt, const GenerateConfig& cfg) {
  auto s = bundled()->new_session();
  EXPECT_TRUE(s.ok());
  auto r = generate(**s, prompt, cfg);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : GenerateResult{};
}

TEST(Logprobs, EqualALogSoftmaxOfEachStepsRawLogits) {
  auto model = bundled();
  ASSERT_TRUE(model);
  const auto prompt = *model->tokenize("Once upon a time");
  for (const float temperature : {0.0f, 1.0f}) {
    // Penalties and a bias change what is sampled, never the reported values: those are the raw logits'.
    GenerateConfig cfg = with_logprobs(24, kMaxTopLogprobs, temperature);
    cfg.sampling.repeat_penalty = 1.3f;
    cfg.sampling.logit_bias = {{prompt.back(), 3.0f}};
    const GenerateResult r = generate_fresh(prompt, cfg);
    ASSERT_EQ(r.tokens.size(), 24u);
    ASSERT_EQ(r.logprobs.size(), r.tokens.size());
    // The same steps again by hand: the logits generate sampled each token from.
    auto s = model->new_session();
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->eval(prompt).ok());
    for (size_t i = 0; i < r.tokens.size(); ++i) {
      const std::string what = "temperature " + std::to_string(temperature) + ", token " + std::to_string(i);
      const TokenLogprobs& e = r.logprobs[i];
      EXPECT_EQ(e.token.id, r.tokens[i]) << what;
      expect_close(e, reference((*s)->last_logits(), r.tokens[i], kMaxTopLogprobs), 1e-5f, what);
      double mass = 0.0;
      for (size_t k = 0; k < e.top.size(); ++k) {
        EXPECT_LE(e.top[k].logprob, 0.0f) << what;
        if (k > 0) {
          EXPECT_GE(e.top[k - 1].logprob, e.top[k].logprob) << what;
        }
        mass += std::exp(static_cast<double>(e.top[k].logprob));
      }
      EXPECT_LE(mass, 1.0 + 1e-5) << what;
      EXPECT_LE(e.token.logprob, e.top.front().logprob) << what;
      ASSERT_TRUE((*s)->eval(std::span<const int32_t>(&r.tokens[i], 1)).ok());
    }
  }
}

TEST(Logprobs, GreedyTokensAreTheirStepsMostLikelyAndAskingChangesNoToken) {
  auto model = bundled();
  ASSERT_TRUE(model);
  const auto prompt = *model->tokenize("Lily and Tom");
  for (const float temperature : {0.0f, 0.9f}) {
    GenerateConfig off = with_logprobs(30, 0, temperature);
    off.logprobs = false;
    const GenerateResult plain = generate_fresh(prompt, off);
    EXPECT_TRUE(plain.logprobs.empty());
    const GenerateResult asked = generate_fresh(prompt, with_logprobs(30, 5, temperature));
    EXPECT_EQ(asked.tokens, plain.tokens) << "temperature " << temperature;
    EXPECT_EQ(asked.text, plain.text);
    ASSERT_EQ(asked.logprobs.size(), asked.tokens.size());
    for (size_t i = 0; i < asked.logprobs.size(); ++i) {
      const TokenLogprobs& e = asked.logprobs[i];
      ASSERT_EQ(e.top.size(), 5u);
      if (temperature == 0.0f) {
        EXPECT_EQ(e.token.id, e.top[0].id) << i;
        EXPECT_EQ(e.token.logprob, e.top[0].logprob) << i;
      }
      // A token among the alternatives has the same value in both places.
      for (const TokenLogprob& t : e.top) {
        if (t.id == e.token.id) {
          EXPECT_EQ(t.logprob, e.token.logprob) << i;
        }
      }
    }
  }
  // logprobs without alternatives: each token's own value only.
  const GenerateResult bare = generate_fresh(prompt, with_logprobs(8, 0));
  ASSERT_EQ(bare.logprobs.size(), 8u);
  for (const TokenLogprobs& e : bare.logprobs) EXPECT_TRUE(e.top.empty());
}

TEST(Logprobs, OutOfRangeConfigsAreInvalidArgumentsNamingTheField) {
  auto model = bundled();
  ASSERT_TRUE(model);
  const auto prompt = *model->tokenize("One day");
  struct Case {
    bool logprobs;
    int32_t top;
  };
  for (const Case c : {Case{true, kMaxTopLogprobs + 1}, Case{true, -1}, Case{false, 3}}) {
    GenerateConfig cfg = with_logprobs(4, c.top);
    cfg.logprobs = c.logprobs;
    auto s = model->new_session();
    auto r = generate(**s, prompt, cfg);
    ASSERT_FALSE(r.ok()) << c.top;
    EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument);
    EXPECT_NE(r.error().message.find("top_logprobs"), std::string::npos) << r.error().message;
    auto batch = generate_batch(*model, {prompt}, {cfg});
    ASSERT_FALSE(batch.ok());
    EXPECT_EQ(batch.error().code, ErrorCode::InvalidArgument);
  }
}

TEST(Logprobs, BatchChatAndEngineGiveGenerateValues) {
  auto model = bundled();
  ASSERT_TRUE(model);
  const std::vector<std::vector<int32_t>> prompts = {*model->tokenize("Once upon a time"),
                                                     *model->tokenize("The big dog ran to the park and")};
  const std::vector<GenerateConfig> cfgs = {with_logprobs(20, 4), with_logprobs(12, 2, 0.8f)};
  const float tol = 1e-4f;  // a batched step's logits may round differently from one sequence's

  auto batch = generate_batch(*model, prompts, cfgs);
  ASSERT_TRUE(batch.ok()) << batch.error().message;
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE("generate_batch sequence " + std::to_string(i));
    expect_all_close((*batch)[i], generate_fresh(prompts[i], cfgs[i]), tol);
  }

  // Session::chat goes through generate: the rendered prompt's continuation.
  LoadOptions opt{.backend = "cpu",
                  .n_ctx = 256,
                  .n_threads = 2,
                  .chat_template = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"};
  auto chat_model = load_llm((test::source_dir() / "models/stories260K.gguf").string(), opt);
  ASSERT_TRUE(chat_model.ok());
  auto session = (*chat_model)->new_session();
  const std::vector<ChatMessage> conv = {{"user", "Lily went to the park."}};
  auto reply = (*session)->chat(conv, with_logprobs(10, 3));
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  auto rendered = (*chat_model)->apply_chat_template(conv);
  ASSERT_TRUE(rendered.ok());
  auto fresh = (*chat_model)->new_session();
  auto want = generate(**fresh, *rendered, with_logprobs(10, 3));
  ASSERT_TRUE(want.ok());
  ASSERT_EQ(reply->logprobs.size(), 10u);
  {
    SCOPED_TRACE("Session::chat");
    expect_all_close(*reply, *want, 0.0f);
  }

  auto engine = Engine::create(model);
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE("engine request " + std::to_string(i));
    // The callback sees each token's entry, in order, before the token's text reaches a piece.
    std::vector<TokenLogprobs> seen;
    std::vector<size_t> seen_at_piece;
    GenerateConfig cfg = cfgs[i];
    cfg.on_logprobs = [&seen](const TokenLogprobs& t) { seen.push_back(t); };
    auto h = (*engine)->submit({.prompt = prompts[i], .config = cfg}, [&](std::string_view) {
      seen_at_piece.push_back(seen.size());
      return true;
    });
    ASSERT_TRUE(h.ok()) << h.error().message;
    auto r = (*h)->wait();
    ASSERT_TRUE(r.ok()) << r.error().message;
    expect_all_close(*r, generate_fresh(prompts[i], cfgs[i]), tol);
    ASSERT_EQ(seen.size(), r->logprobs.size());
    for (size_t k = 0; k < seen.size(); ++k) {
      EXPECT_EQ(seen[k].token.id, r->logprobs[k].token.id);
      EXPECT_EQ(seen[k].token.logprob, r->logprobs[k].token.logprob);
    }
    for (size_t k = 0; k < seen_at_piece.size(); ++k) EXPECT_GE(seen_at_piece[k], 1u);
  }
}

}  // namespace
}  // namespace glass
