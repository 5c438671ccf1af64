// Generation behaviour: batches equal sequential runs, stop strings across token boundaries, stop
// token ids, cancellation from another thread, and the result's usage and counters.
#include <gtest/gtest.h>

#include <thread>

#include "glass/llm.h"
#include "support/fixtures.h"

namespace glass {
namespace {

std::shared_ptr<Model> load(const std::string& path, LoadOptions opt = {.backend = "ref"}) {
  auto m = load_llm(path, opt);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return m.ok() ? *m : nullptr;
}

std::string bundled() { return (test::source_dir() / "models/stories260K.gguf").string(); }

std::vector<std::vector<int32_t>> prompts(const Model& model) {
  std::vector<std::vector<int32_t>> out;
  for (const char* p : {"Once upon a time", "Lily and Tom", "The big dog ran to the park and", "One day"})
    out.push_back(*model.tokenize(p));
  return out;
}

// Each prompt alone in a fresh session.
std::vector<GenerateResult> one_by_one(const Model& model, const std::vector<std::vector<int32_t>>& ps,
                                       const std::vector<GenerateConfig>& cfgs) {
  std::vector<GenerateResult> out;
  for (size_t i = 0; i < ps.size(); ++i) {
    auto s = model.new_session();
    auto r = generate(**s, ps[i], cfgs[i]);
    EXPECT_TRUE(r.ok());
    out.push_back(*r);
  }
  return out;
}

void expect_batch_equals_sequential(const std::string& path, bool greedy,
                                    KvStorage storage = KvStorage::Paged) {
  auto model =
      load(path, LoadOptions{.backend = "ref", .n_ctx = 256, .kv_size = 4 * 256, .kv_storage = storage});
  ASSERT_TRUE(model);
  const auto ps = prompts(*model);
  std::vector<GenerateConfig> cfgs(ps.size());
  for (size_t i = 0; i < cfgs.size(); ++i) {
    cfgs[i].max_tokens = 10 + 7 * static_cast<int32_t>(i);  // they finish at different steps
    cfgs[i].sampling.temperature = greedy ? 0.0f : 0.9f;
    cfgs[i].sampling.seed = 100 + i;
    cfgs[i].stop_at_end_of_generation = false;
  }
  const uint64_t compiled = model->plans_compiled();
  auto batch = generate_batch(*model, ps, cfgs);
  ASSERT_TRUE(batch.ok()) << batch.error().message;
  EXPECT_EQ(model->plans_compiled(), compiled);  // the prefill plan serves the batched steps
  const auto alone = one_by_one(*model, ps, cfgs);
  ASSERT_EQ(batch->size(), alone.size());
  for (size_t i = 0; i < alone.size(); ++i) {
    EXPECT_EQ((*batch)[i].tokens, alone[i].tokens) << "sequence " << i;
    EXPECT_EQ((*batch)[i].text, alone[i].text) << "sequence " << i;
    EXPECT_EQ((*batch)[i].tokens.size(), static_cast<size_t>(cfgs[i].max_tokens));
    EXPECT_EQ((*batch)[i].finish, FinishReason::Length);
  }
}

TEST(GenerateBatch, GreedyBatchOfFourEqualsOneByOneOnStories) {
  expect_batch_equals_sequential(bundled(), true);
}

TEST(GenerateBatch, SeededSamplingIsTheSameAloneAndInABatch) {
  expect_batch_equals_sequential(bundled(), false);
}

TEST(GenerateBatch, DenseStorageBatchEqualsOneByOne) {
  expect_batch_equals_sequential(bundled(), false, KvStorage::Dense);
}

// Four sequences of 3 blocks each over a pool of 4 blocks: the newest wait or are preempted and
// recomputed, and every one still runs to max_tokens with the tokens it gets alone.
TEST(GenerateBatch, APoolTooSmallForAllPreemptsInsteadOfCuttingShort) {
  auto model = load(bundled(), LoadOptions{.backend = "cpu", .n_ctx = 64, .kv_size = 64, .n_threads = 2});
  ASSERT_TRUE(model);
  const auto ps = prompts(*model);
  std::vector<GenerateConfig> cfgs(ps.size());
  for (size_t i = 0; i < cfgs.size(); ++i) {
    cfgs[i].max_tokens = 30;
    cfgs[i].sampling.temperature = i % 2 ? 0.8f : 0.0f;
    cfgs[i].sampling.seed = 9 + i;
    cfgs[i].stop_at_end_of_generation = false;
  }
  std::vector<std::string> streamed(ps.size());
  auto batch = generate_batch(*model, ps, cfgs, [&](size_t i, std::string_view p) {
    streamed[i] += p;
    return true;
  });
  ASSERT_TRUE(batch.ok()) << batch.error().message;
  const auto alone = one_by_one(*model, ps, cfgs);
  for (size_t i = 0; i < alone.size(); ++i) {
    EXPECT_EQ((*batch)[i].tokens.size(), 30u) << "sequence " << i;
    EXPECT_EQ((*batch)[i].tokens, alone[i].tokens) << "sequence " << i;
    EXPECT_EQ((*batch)[i].finish, FinishReason::Length);
    EXPECT_EQ(streamed[i], (*batch)[i].text) << "sequence " << i;
  }
}

class GenerateBatchSynthetic : public test::WithSharedFixtures {};

TEST_F(GenerateBatchSynthetic, GreedyBatchOfFourEqualsOneByOne) {
  expect_batch_equals_sequential((fixtures_ / "models/synthetic/llama-gqa-q4_k_m.gguf").string(), true);
}

TEST(Generate, StopStringSpanningTwoTokensEndsTheTextBeforeIt) {
  auto model = load(bundled());
  ASSERT_TRUE(model);
  GenerateConfig cfg;
  cfg.max_tokens = 64;
  cfg.sampling.temperature = 0.0f;
  // Greedy text: ", there was a little girl named Lily. She loved to play outside in the park. ..."
  cfg.stop = {"girl na"};
  auto s = model->new_session();
  std::string streamed;
  auto r = generate(**s, std::string_view("Once upon a time"), cfg, [&](std::string_view p) {
    streamed += p;
    return true;
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finish, FinishReason::Stop);
  EXPECT_EQ(r->text, ", there was a little ");
  EXPECT_EQ(streamed, r->text);  // nothing past the stop was ever streamed
  // "girl" and " named" are separate tokens: the match spans a token boundary.
  EXPECT_GE(r->tokens.size(), 6u);
}

TEST(Generate, StopTokenIdEndsWithoutEmittingIt) {
  auto model = load(bundled());
  ASSERT_TRUE(model);
  GenerateConfig cfg;
  cfg.max_tokens = 64;
  cfg.sampling.temperature = 0.0f;
  auto s = model->new_session();
  auto full = generate(**s, std::string_view("Once upon a time"), cfg);
  ASSERT_TRUE(full.ok());
  cfg.stop_token_ids = {full->tokens[5]};
  auto s2 = model->new_session();
  auto r = generate(**s2, std::string_view("Once upon a time"), cfg);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finish, FinishReason::Stop);
  EXPECT_EQ(r->tokens, std::vector<int32_t>(full->tokens.begin(), full->tokens.begin() + 5));
  EXPECT_EQ(r->timings.n_prompt_tokens, 5);
  EXPECT_EQ(r->counters.prefix_tokens_recomputed, 0u);
  EXPECT_EQ(r->counters.kv_rows_written, (5u + 5u) * 2u * 5u);  // prompt + 5 decode steps, 2 x 5 layers
}

// Control tokens add no text unless the config asks for their text (harmony's markers are read so).
TEST(Generate, ControlTokensAreTextOnlyWhenAskedFor) {
  auto model = load(bundled());
  ASSERT_TRUE(model);
  GenerateConfig cfg;
  cfg.max_tokens = 3;
  cfg.sampling.temperature = 0.0f;
  cfg.sampling.logit_bias = {{1, 100.0f}};  // <s>, a control token
  auto s = model->new_session();
  auto quiet = generate(**s, std::string_view("Once upon a time"), cfg);
  ASSERT_TRUE(quiet.ok());
  EXPECT_EQ(quiet->tokens, (std::vector<int32_t>{1, 1, 1}));
  EXPECT_EQ(quiet->text, "");
  cfg.render_control_tokens = true;
  auto s2 = model->new_session();
  auto shown = generate(**s2, std::string_view("Once upon a time"), cfg);
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ(shown->text, "<s><s><s>");
}

TEST(Generate, CancelFromAnotherThreadStopsWithinOneStep) {
  auto model = load(bundled(), LoadOptions{.backend = "ref", .n_ctx = 2048});
  ASSERT_TRUE(model);
  GenerateConfig cfg;
  cfg.max_tokens = 1000000;
  cfg.sampling.temperature = 0.0f;
  cfg.stop_at_end_of_generation = false;
  cfg.cancel = std::make_shared<std::atomic<bool>>(false);
  std::atomic<int> pieces{0};
  auto s = model->new_session();
  std::thread canceller([&] {
    while (pieces.load() < 20) std::this_thread::yield();
    cfg.cancel->store(true);
  });
  int after_cancel = 0;
  auto r = generate(**s, std::string_view("Once upon a time"), cfg, [&](std::string_view) {
    if (cfg.cancel->load()) ++after_cancel;
    ++pieces;
    return true;
  });
  canceller.join();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finish, FinishReason::Cancelled);
  EXPECT_LE(after_cancel, 1);  // at most the step already under way
  EXPECT_LT(r->tokens.size(), 1000u);
  // The session stays usable.
  cfg.cancel->store(false);
  cfg.max_tokens = 3;
  auto more = generate(**s, std::vector<int32_t>{}, cfg);
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(more->tokens.size(), 3u);
}

}  // namespace
}  // namespace glass
