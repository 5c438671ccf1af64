// Engine on the bundled stories260K model: every result equals the same request run alone with
// generate, whatever was batched, chunked, cached or preempted around it; the prefix cache skips
// shared prompt blocks; cancellation, busy and the pool's bookkeeping hold under a random schedule.
#include "glass/engine.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "backend/cpu/cpu_test_support.h"
#include "support/bundled_model.h"
#include "support/fixtures.h"
#include "support/gate.h"

namespace glass {
namespace {

std::shared_ptr<Model> bundled(LoadOptions opt) { return test::load_bundled(opt); }

LoadOptions cpu(int64_t kv_size, int64_t n_ctx = 256) {
  return LoadOptions{.backend = "cpu", .n_ctx = n_ctx, .kv_size = kv_size, .n_threads = 2};
}

using test::Gate;

GenerateResult solo(const Model& model, const std::vector<int32_t>& prompt, const GenerateConfig& cfg) {
  auto s = model.new_session();
  EXPECT_TRUE(s.ok());
  GenerateConfig c = cfg;
  c.cancel = nullptr;
  auto r = generate(**s, prompt, c);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : GenerateResult{};
}

std::vector<int32_t> random_prompt(std::mt19937& rng, const Model& model, int len) {
  std::uniform_int_distribution<int32_t> id(3, static_cast<int32_t>(model.info().vocab_size) - 1);
  std::vector<int32_t> p{1};  // BOS, then arbitrary ids
  while (static_cast<int>(p.size()) < len) p.push_back(id(rng));
  p.resize(static_cast<size_t>(len));
  return p;
}

GenerateConfig random_config(std::mt19937& rng, int max_tokens_hi, size_t i) {
  GenerateConfig c;
  c.max_tokens = std::uniform_int_distribution<int>(1, max_tokens_hi)(rng);
  c.sampling.temperature = i % 2 == 0 ? 0.0f : 0.8f;
  c.sampling.seed = 1000 + i;
  if (i % 5 == 3) c.stop = {"."};
  if (i % 3 == 1) c.stop_at_end_of_generation = false;
  return c;
}

void expect_same(const GenerateResult& got, const GenerateResult& want, size_t i) {
  EXPECT_EQ(got.tokens, want.tokens) << "request " << i;
  EXPECT_EQ(got.text, want.text) << "request " << i;
  EXPECT_EQ(got.finish, want.finish) << "request " << i << ": " << finish_reason_name(got.finish) << " vs "
                                     << finish_reason_name(want.finish);
}

bool is_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

struct Submitted {
  std::vector<int32_t> prompt;
  GenerateConfig config;
  std::shared_ptr<RequestHandle> handle;
  std::string streamed;  // by the callback, on the engine thread; read after wait()
};

void many_threads_equal_solo(const LoadOptions& lo, size_t n_requests, const std::string& path = {}) {
  std::shared_ptr<Model> model;
  if (path.empty()) {
    model = bundled(lo);
  } else {
    auto m = load_llm(path, lo);
    ASSERT_TRUE(m.ok()) << m.error().message;
    model = *m;
  }
  ASSERT_TRUE(model);
  std::vector<Submitted> reqs(n_requests);  // before the engine: its callbacks write here
  auto engine = Engine::create(model, {.step_tokens = 64});
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  std::mt19937 rng(7);
  for (size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].prompt = random_prompt(rng, *model, std::uniform_int_distribution<int>(1, 60)(rng));
    reqs[i].config = random_config(rng, 40, i);
  }
  constexpr size_t kThreads = 4;
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = t; i < reqs.size(); i += kThreads) {
        Submitted& q = reqs[i];
        auto h = (*engine)->submit({q.prompt, q.config}, [&q](std::string_view p) {
          q.streamed += p;
          return true;
        });
        ASSERT_TRUE(h.ok()) << h.error().message;
        q.handle = *h;
      }
    });
  for (auto& t : threads) t.join();
  // Half of them are also read by pulling, from this thread.
  size_t one_by_one_steps = 0;  // plan calls the requests would make alone
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_TRUE(reqs[i].handle);
    std::string pulled;
    if (i % 2 == 0)
      while (auto p = reqs[i].handle->next_piece()) pulled += *p;
    auto r = reqs[i].handle->wait();
    ASSERT_TRUE(r.ok()) << r.error().message;
    expect_same(*r, solo(*model, reqs[i].prompt, reqs[i].config), i);
    EXPECT_EQ(reqs[i].streamed, r->text) << "request " << i;
    if (i % 2 == 0) {
      EXPECT_EQ(pulled, r->text) << "request " << i;
    }
    EXPECT_EQ(r->timings.n_prompt_tokens, static_cast<int64_t>(reqs[i].prompt.size()));
    one_by_one_steps += 1 + r->tokens.size();
  }
  const auto st = (*engine)->stats();
  EXPECT_EQ(st.completed, static_cast<int64_t>(n_requests));
  EXPECT_EQ(st.running + st.queued, 0);
  EXPECT_EQ(st.blocks_used, 0);
  EXPECT_LT(st.steps, static_cast<int64_t>(one_by_one_steps) / 2);  // batched, not one by one
  EXPECT_TRUE((*engine)->check_invariants().ok());
}

TEST(Engine, ThirtyTwoRequestsFromFourThreadsEqualSoloRunsOnCpu) {
  many_threads_equal_solo(cpu(/*kv_size=*/32 * 112), 32);
}

// The same on the synthetic fixture model in the weight types whose cpu kernels compute a row the
// same way in the decode plan (one token alone) and in the prefill plan (a token among others): a
// request's tokens do not depend on what else its steps hold. Not yet so for F16, BF16, Q4_K and Q6_K
// weights, whose decode and prefill kernels round differently (docs/performance.md, batch invariance).
class EngineWeightTypes : public test::WithSharedFixtures,
                          public ::testing::WithParamInterface<const char*> {};

TEST_P(EngineWeightTypes, ThirtyTwoRequestsEqualSoloRuns) {
  const std::string path =
      (fixtures_ / "models/synthetic" / (std::string("llama-gqa-") + GetParam() + ".gguf")).string();
  LoadOptions lo = cpu(/*kv_size=*/32 * 112);
  // Q8_0 holds by default only where the best tier has its 16-row layout (AVX-512); an AVX2-only
  // CPU runs the row-major kernels, invariant under batch_invariant (as EngineWeightTypesAvx2 says).
  if (std::string(GetParam()) == "q8_0" && !backend::cpu::testing::repacks(graph::DType::Q8_0))
    lo.batch_invariant = true;
  many_threads_equal_solo(lo, 32, path);
}

// The same on the AVX2 kernels, which an AVX-512 machine runs only when asked (LoadOptions::isa).
// Not Q8_0: AVX2 has no 16-row layout for it, and its row-major packed prefill path sums in another
// order than its decode kernel (under batch_invariant it holds, below).
class EngineWeightTypesAvx2 : public EngineWeightTypes {};

TEST_P(EngineWeightTypesAvx2, ThirtyTwoRequestsEqualSoloRuns) {
  const std::string path =
      (fixtures_ / "models/synthetic" / (std::string("llama-gqa-") + GetParam() + ".gguf")).string();
  LoadOptions lo = cpu(/*kv_size=*/32 * 112);
  lo.isa = "avx2";
  many_threads_equal_solo(lo, 32, path);
}

INSTANTIATE_TEST_SUITE_P(Types, EngineWeightTypes,
                         ::testing::Values("f32", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1"));
INSTANTIATE_TEST_SUITE_P(Types, EngineWeightTypesAvx2,
                         ::testing::Values("f32", "q4_0", "q4_1", "q5_0", "q5_1"));

// Every weight type with LoadOptions::batch_invariant: the tokens of 32 requests equal their solo runs
// for the types whose default kernels do not guarantee it too (F16, BF16, the k-quants, and Q8_0 on
// AVX2), on the best tier and on AVX2.
class EngineBatchInvariant : public EngineWeightTypes {};

TEST_P(EngineBatchInvariant, ThirtyTwoRequestsEqualSoloRuns) {
  const std::string path =
      (fixtures_ / "models/synthetic" / (std::string("llama-gqa-") + GetParam() + ".gguf")).string();
  LoadOptions lo = cpu(/*kv_size=*/32 * 112);
  lo.batch_invariant = true;
  many_threads_equal_solo(lo, 32, path);
}

TEST_P(EngineBatchInvariant, ThirtyTwoRequestsEqualSoloRunsOnAvx2) {
  const std::string path =
      (fixtures_ / "models/synthetic" / (std::string("llama-gqa-") + GetParam() + ".gguf")).string();
  LoadOptions lo = cpu(/*kv_size=*/32 * 112);
  lo.batch_invariant = true;
  lo.isa = "avx2";
  many_threads_equal_solo(lo, 32, path);
}

INSTANTIATE_TEST_SUITE_P(Types, EngineBatchInvariant,
                         ::testing::Values("f16", "bf16", "q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k",
                                           "q8_0"));

// Dense storage is a fixed block assignment of the same pool: the engine serves it too, as many
// sequences at once as the pool has full-length runs of rows for (four here), the rest queued.
TEST(Engine, ServesDenseStorageFourSequencesAtATime) {
  many_threads_equal_solo(LoadOptions{.backend = "cpu",
                                      .n_ctx = 128,
                                      .kv_size = 4 * 128,
                                      .n_seq_max = 8,
                                      .kv_storage = KvStorage::Dense,
                                      .n_threads = 2},
                          16);
}

TEST(Engine, RequestsEqualSoloRunsOnRef) {
  many_threads_equal_solo(LoadOptions{.backend = "ref", .n_ctx = 256, .kv_size = 12 * 112}, 12);
}

TEST(Engine, SharedSystemPromptIsTakenFromThePrefixCache) {
  auto model = bundled(cpu(1024));
  ASSERT_TRUE(model);
  std::mt19937 rng(11);
  const std::vector<int32_t> system = random_prompt(rng, *model, 40);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 8; ++i) {
    std::vector<int32_t> p = system;
    const auto tail = random_prompt(rng, *model, 2 + 3 * i);
    p.insert(p.end(), tail.begin() + 1, tail.end());
    prompts.push_back(p);
  }
  std::vector<std::vector<int32_t>> cached_tokens;
  for (bool prefix_cache : {true, false}) {
    auto engine = Engine::create(model, {.step_tokens = 32, .prefix_cache = prefix_cache});
    ASSERT_TRUE(engine.ok());
    std::vector<std::vector<int32_t>> tokens;
    for (size_t i = 0; i < prompts.size(); ++i) {
      GenerateConfig cfg;
      cfg.max_tokens = 12;
      cfg.sampling.temperature = i % 2 ? 0.8f : 0.0f;
      cfg.sampling.seed = 5 + i;
      auto h = (*engine)->submit({prompts[i], cfg});
      ASSERT_TRUE(h.ok());
      auto r = (*h)->wait();
      ASSERT_TRUE(r.ok());
      expect_same(*r, solo(*model, prompts[i], cfg), i);
      const int64_t hits = (*h)->info().prefix_hit_tokens;
      if (!prefix_cache || i == 0) {
        EXPECT_EQ(hits, 0) << "request " << i;
      } else {
        EXPECT_GE(hits, 32) << "request " << i;  // the two full 16-row blocks of the 40-token prefix
      }
      tokens.push_back(r->tokens);
    }
    const auto st = (*engine)->stats();
    if (prefix_cache) {
      EXPECT_GE(st.prefix_hit_tokens, 7 * 32);
      EXPECT_GT(st.blocks_cached, 0);
      cached_tokens = tokens;
    } else {
      EXPECT_EQ(st.prefix_hit_tokens, 0);
      EXPECT_EQ(tokens, cached_tokens);
    }
    EXPECT_EQ(st.blocks_used, 0);
    EXPECT_TRUE((*engine)->check_invariants().ok());
  }
}

TEST(Engine, PoolPressurePreemptsAndResultsStillEqualSoloRuns) {
  // 6 blocks of 16 rows; each request needs 3-5 of them, one more than the whole pool alone.
  auto model = bundled(cpu(/*kv_size=*/96));
  ASSERT_TRUE(model);
  auto engine = Engine::create(model, {.step_tokens = 24});
  ASSERT_TRUE(engine.ok());
  std::mt19937 rng(3);
  std::vector<Submitted> reqs(10);
  for (size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].prompt = random_prompt(rng, *model, i == 4 ? 60 : 10 + 4 * static_cast<int>(i));
    reqs[i].config.max_tokens = i == 4 ? 60 : 30;  // 4: 120 tokens, more than the pool's 96 rows
    reqs[i].config.sampling.temperature = i % 2 ? 0.8f : 0.0f;
    reqs[i].config.sampling.seed = 77 + i;
    reqs[i].config.stop_at_end_of_generation = false;
  }
  for (auto& q : reqs) {
    auto h = (*engine)->submit({q.prompt, q.config});
    ASSERT_TRUE(h.ok());
    q.handle = *h;
  }
  int preempted_requests = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    auto r = reqs[i].handle->wait();
    ASSERT_TRUE(r.ok()) << r.error().message;
    expect_same(*r, solo(*model, reqs[i].prompt, reqs[i].config), i);
    preempted_requests += reqs[i].handle->info().preemptions > 0;
    EXPECT_TRUE((*engine)->check_invariants().ok());
  }
  EXPECT_EQ(reqs[4].handle->wait()->finish, FinishReason::Length);
  EXPECT_LT(reqs[4].handle->wait()->tokens.size(), 60u);  // ran out of pool, as alone
  const auto st = (*engine)->stats();
  EXPECT_GT(st.preempted, 0);
  EXPECT_GT(preempted_requests, 0);
  EXPECT_EQ(st.blocks_used, 0);
}

// Two requests of 5 blocks each over a pool of 6: admitted side by side, the first needs a fourth block
// while the second holds the other three, and the second is preempted. With a watermark of half the
// pool the second waits for the first instead. Either way both equal their solo runs.
TEST(Engine, AdmissionWatermarkKeepsRoomForRunningSequences) {
  auto model = bundled(cpu(/*kv_size=*/96));
  ASSERT_TRUE(model);
  std::mt19937 rng(5);
  std::vector<std::vector<int32_t>> prompts = {random_prompt(rng, *model, 40),
                                               random_prompt(rng, *model, 40)};
  GenerateConfig cfg;
  cfg.max_tokens = 40;
  cfg.stop_at_end_of_generation = false;
  for (const float watermark : {0.0f, 0.5f}) {
    auto engine = Engine::create(model, {.step_tokens = 96, .admit_watermark = watermark});
    ASSERT_TRUE(engine.ok()) << engine.error().message;
    // The second arrives while the first's first piece holds the engine thread: the first then holds
    // 3 blocks (41 tokens) and the second fits in the other 3.
    Gate first_piece, second_submitted;
    bool held = false;
    std::vector<std::shared_ptr<RequestHandle>> handles;
    auto h0 = (*engine)->submit({prompts[0], cfg}, [&](std::string_view) {
      if (!held) {
        held = true;
        first_piece.open();
        EXPECT_TRUE(second_submitted.wait());
      }
      return true;
    });
    ASSERT_TRUE(h0.ok()) << h0.error().message;
    handles.push_back(*h0);
    ASSERT_TRUE(first_piece.wait());
    auto h1 = (*engine)->submit({prompts[1], cfg});
    ASSERT_TRUE(h1.ok()) << h1.error().message;
    handles.push_back(*h1);
    second_submitted.open();
    for (size_t i = 0; i < handles.size(); ++i) {
      auto r = handles[i]->wait();
      ASSERT_TRUE(r.ok()) << r.error().message;
      expect_same(*r, solo(*model, prompts[i], cfg), i);
    }
    const auto st = (*engine)->stats();
    if (watermark == 0.0f) {
      EXPECT_GT(st.preempted, 0) << "without a watermark the second request is admitted and preempted";
    } else {
      EXPECT_EQ(st.preempted, 0) << "the watermark holds the second request back";
    }
    EXPECT_TRUE((*engine)->check_invariants().ok());
  }
}

TEST(Engine, CancelMidPrefillAndMidDecodeReleasesEveryBlock) {
  auto model = bundled(cpu(2048));
  ASSERT_TRUE(model);
  // The callbacks' state first, so that it outlives the engine even when an assertion returns early.
  std::atomic<bool> pre_submitted{false};
  Gate paused, resume;
  int pieces_after = 0, stop_pieces = 0;
  auto engine = Engine::create(model, {.step_tokens = 8});
  ASSERT_TRUE(engine.ok());
  std::mt19937 rng(5);
  GenerateConfig long_cfg;
  long_cfg.max_tokens = 200;
  long_cfg.sampling.temperature = 0;
  long_cfg.stop_at_end_of_generation = false;
  // The decoding request stops in its callback once the long prompt has had a step, and waits
  // there until both cancels were made.
  const auto dec_prompt = random_prompt(rng, *model, 4);
  const auto pre_prompt = random_prompt(rng, *model, 150);
  auto dec = (*engine)->submit({dec_prompt, long_cfg}, [&](std::string_view) {
    if (pre_submitted.load() && ++pieces_after == 3) {
      paused.open();
      resume.wait();
    }
    return true;
  });
  ASSERT_TRUE(dec.ok());
  GenerateConfig pre_cfg = long_cfg;
  pre_cfg.max_tokens = 5;
  auto pre = (*engine)->submit({pre_prompt, pre_cfg});
  ASSERT_TRUE(pre.ok());
  pre_submitted = true;
  // One more that cancels itself by returning false from its callback.
  auto self = (*engine)->submit({dec_prompt, long_cfg}, [&](std::string_view) { return ++stop_pieces < 2; });
  ASSERT_TRUE(self.ok());
  paused.wait();
  (*pre)->cancel();
  (*dec)->cancel();
  resume.open();
  auto rp = (*pre)->wait(), rd = (*dec)->wait(), rs = (*self)->wait();
  ASSERT_TRUE(rp.ok() && rd.ok() && rs.ok());
  EXPECT_EQ(rp->finish, FinishReason::Cancelled);
  EXPECT_TRUE(rp->tokens.empty());
  const uint64_t rows_per_token = 2 * static_cast<uint64_t>(model->info().n_layers);
  EXPECT_GT(rp->counters.kv_rows_written, 0u);                     // part of its prompt ran
  EXPECT_LT(rp->counters.kv_rows_written, 150u * rows_per_token);  // not all of it
  EXPECT_EQ(rd->finish, FinishReason::Cancelled);
  EXPECT_GE(rd->tokens.size(), 3u);
  EXPECT_LT(rd->tokens.size(), 200u);
  const auto alone = solo(*model, dec_prompt, long_cfg);
  EXPECT_TRUE(is_prefix(rd->tokens, alone.tokens));
  EXPECT_EQ(rs->finish, FinishReason::Cancelled);
  EXPECT_GE(rs->tokens.size(), 2u);
  EXPECT_LT(rs->tokens.size(), 200u);
  EXPECT_TRUE(is_prefix(rs->tokens, alone.tokens));
  const auto st = (*engine)->stats();
  EXPECT_EQ(st.blocks_used, 0);
  EXPECT_EQ(st.cancelled, 3);
  EXPECT_EQ(st.running + st.queued, 0);
  EXPECT_TRUE((*engine)->check_invariants().ok());
}

TEST(Engine, SubmitPastMaxQueuedIsBusy) {
  auto model = bundled(cpu(1024));
  ASSERT_TRUE(model);
  Gate entered, release;
  auto engine = Engine::create(model, {.max_queued = 2});
  ASSERT_TRUE(engine.ok());
  GenerateConfig cfg;
  cfg.max_tokens = 4;
  cfg.sampling.temperature = 0;
  cfg.stop_at_end_of_generation = false;
  auto first = (*engine)->submit({{1, 400, 300}, cfg}, [&](std::string_view) {
    entered.open();
    release.wait();  // the loop is held here
    return true;
  });
  ASSERT_TRUE(first.ok());
  entered.wait();
  auto second = (*engine)->submit({{1, 401}, cfg});
  auto third = (*engine)->submit({{1, 402}, cfg});
  ASSERT_TRUE(second.ok() && third.ok());
  EXPECT_EQ((*engine)->stats().queued, 2);
  auto fourth = (*engine)->submit({{1, 403}, cfg});
  ASSERT_FALSE(fourth.ok());
  EXPECT_EQ(fourth.error().code, ErrorCode::CapacityExceeded);
  EXPECT_EQ(fourth.error().message.rfind("engine: busy", 0), 0u) << fourth.error().message;
  release.open();
  for (auto* h : {&*first, &*second, &*third}) {
    auto r = (*h)->wait();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->tokens.size(), 4u);
  }
  auto later = (*engine)->submit({{1, 403}, cfg});  // room again
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE((*later)->wait().ok());
}

TEST(Engine, RefusesBadRequestsAndOptions) {
  auto model = bundled(cpu(64, 128));
  ASSERT_TRUE(model);
  EXPECT_EQ(Engine::create(nullptr, {}).error().code, ErrorCode::InvalidArgument);
  EXPECT_EQ(Engine::create(model, {.max_running = 1000}).error().code, ErrorCode::InvalidArgument);
  EXPECT_EQ(Engine::create(model, {.step_tokens = 100000}).error().code, ErrorCode::InvalidArgument);
  EXPECT_EQ(Engine::create(model, {.admit_watermark = 1.0f}).error().code, ErrorCode::InvalidArgument);
  EXPECT_EQ(Engine::create(model, {.admit_watermark = -0.1f}).error().code, ErrorCode::InvalidArgument);
  // A dense cache of n_ctx rows holds one sequence: more running at once is refused.
  auto dense = bundled(LoadOptions{.backend = "cpu", .kv_storage = KvStorage::Dense, .n_threads = 2});
  ASSERT_TRUE(dense);
  EXPECT_EQ(Engine::create(dense, {.max_running = 2}).error().code, ErrorCode::InvalidArgument);
  auto engine = Engine::create(model, {});
  ASSERT_TRUE(engine.ok());
  GenerateConfig cfg;
  EXPECT_EQ((*engine)->submit({{}, cfg}).error().code, ErrorCode::InvalidArgument);
  EXPECT_EQ((*engine)->submit({{1, 100000}, cfg}).error().code, ErrorCode::InvalidArgument);
  EXPECT_EQ((*engine)->submit({{1, -1}, cfg}).error().code, ErrorCode::InvalidArgument);
  EXPECT_EQ((*engine)->submit({std::vector<int32_t>(100, 5), cfg}).error().code,
            ErrorCode::InvalidArgument);  // longer than the 64-row pool
  EXPECT_EQ((*engine)->submit({std::vector<int32_t>(129, 5), cfg}).error().code,
            ErrorCode::InvalidArgument);  // longer than n_ctx
  GenerateConfig bad = cfg;
  bad.max_tokens = -1;
  EXPECT_EQ((*engine)->submit({{1, 5}, bad}).error().code, ErrorCode::InvalidArgument);
  bad = cfg;
  bad.sampling.order = {"no_such_sampler"};
  EXPECT_EQ((*engine)->submit({{1, 5}, bad}).error().code, ErrorCode::InvalidArgument);
  GenerateConfig none = cfg;
  none.max_tokens = 0;
  auto r = (*engine)->submit({{1, 5}, none});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)->wait()->tokens.empty());
  EXPECT_EQ((*engine)->stats().completed, 1);
}

TEST(Engine, DestroyingTheEngineCancelsWhatIsLeft) {
  auto model = bundled(cpu(1024, 1024));
  ASSERT_TRUE(model);
  std::shared_ptr<RequestHandle> h;
  Gate started;
  {
    auto engine = Engine::create(model, {});
    ASSERT_TRUE(engine.ok());
    GenerateConfig cfg;
    cfg.max_tokens = 1000;
    cfg.stop_at_end_of_generation = false;
    auto r = (*engine)->submit({{1, 400}, cfg}, [&](std::string_view) {
      started.open();
      return true;
    });
    ASSERT_TRUE(r.ok());
    h = *r;
    started.wait();
  }
  auto r = h->wait();  // the handle outlives the engine
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finish, FinishReason::Cancelled);
  EXPECT_GE(r->tokens.size(), 1u);
}

// on_finished tells a reader of the pieces that the request ended, once, after its last piece,
// however it ended: by length, cancelled mid-decode, or left when the engine went away.
TEST(Engine, OnFinishedRunsOnceAfterTheLastPiece) {
  auto model = bundled(cpu(1024, 1024));
  ASSERT_TRUE(model);
  struct Seen {
    std::mutex mu;
    std::string text;            // pieces, in order
    std::string text_at_finish;  // what the pieces made when on_finished ran
    int finished = 0;
  };
  auto submit = [](Engine& engine, Seen& seen, int max_tokens, Gate* first_piece) {
    GenerateConfig cfg;
    cfg.max_tokens = max_tokens;
    cfg.stop_at_end_of_generation = false;
    EngineRequest req{.prompt = {1, 400, 35}, .config = cfg};
    req.on_finished = [&seen] {
      std::lock_guard lk(seen.mu);
      ++seen.finished;
      seen.text_at_finish = seen.text;
    };
    return engine.submit(std::move(req), [&seen, first_piece](std::string_view p) {
      {
        std::lock_guard lk(seen.mu);
        seen.text += p;
      }
      if (first_piece) first_piece->open();
      return true;
    });
  };
  Seen by_length, cancelled, abandoned;
  std::shared_ptr<RequestHandle> left;
  {
    auto engine = Engine::create(model, {});
    ASSERT_TRUE(engine.ok());
    auto a = submit(**engine, by_length, 12, nullptr);
    ASSERT_TRUE(a.ok());
    auto ra = (*a)->wait();
    ASSERT_TRUE(ra.ok());
    EXPECT_EQ(ra->finish, FinishReason::Length);
    Gate started_b, started_c;
    auto b = submit(**engine, cancelled, 1000, &started_b);
    auto c = submit(**engine, abandoned, 1000, &started_c);
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE(c.ok());
    started_b.wait();
    started_c.wait();
    (*b)->cancel();
    auto rb = (*b)->wait();
    ASSERT_TRUE(rb.ok());
    EXPECT_EQ(rb->finish, FinishReason::Cancelled);
    left = *c;
  }
  auto rc = left->wait();
  ASSERT_TRUE(rc.ok());
  EXPECT_EQ(rc->finish, FinishReason::Cancelled);
  for (Seen* s : {&by_length, &cancelled, &abandoned}) {
    std::lock_guard lk(s->mu);
    EXPECT_EQ(s->finished, 1);
    EXPECT_FALSE(s->text.empty());
    EXPECT_EQ(s->text_at_finish, s->text);  // no piece after the end
  }
}

// Random arrivals, cancels and waits over a small pool: preemption, prefix sharing and cancels all
// mix; the invariants hold after every completion and every finished request equals its solo run.
void random_schedule(const std::shared_ptr<Model>& model, size_t n_requests, const EngineOptions& eo,
                     int prefix_len) {
  ASSERT_TRUE(model);
  auto engine = Engine::create(model, eo);
  ASSERT_TRUE(engine.ok());
  std::mt19937 rng(2024);
  std::vector<std::vector<int32_t>> prefixes;
  for (int i = 0; i < 3; ++i) prefixes.push_back(random_prompt(rng, *model, prefix_len + prefix_len * i));
  std::vector<Submitted> reqs(n_requests);
  std::vector<bool> cancelled(n_requests, false);
  size_t submitted = 0, waited = 0;
  while (waited < n_requests) {
    const int action = std::uniform_int_distribution<int>(0, 9)(rng);
    if (submitted < n_requests && (action < 5 || waited == submitted)) {
      Submitted& q = reqs[submitted];
      const int len = std::uniform_int_distribution<int>(1, 60)(rng);
      if (action % 2 == 0) {
        q.prompt = prefixes[static_cast<size_t>(action / 2) % prefixes.size()];
        const auto tail = random_prompt(rng, *model, len);
        q.prompt.insert(q.prompt.end(), tail.begin() + 1, tail.end());
        q.prompt.resize(std::min<size_t>(q.prompt.size(), 100));
      } else {
        q.prompt = random_prompt(rng, *model, len);
      }
      q.config = random_config(rng, 50, submitted);
      auto h = (*engine)->submit({q.prompt, q.config});
      ASSERT_TRUE(h.ok()) << h.error().message;
      q.handle = *h;
      ++submitted;
    } else if (action < 7 && waited < submitted) {
      const size_t i = std::uniform_int_distribution<size_t>(waited, submitted - 1)(rng);
      reqs[i].handle->cancel();
      cancelled[i] = true;
    } else if (waited < submitted) {
      auto r = reqs[waited].handle->wait();
      ASSERT_TRUE(r.ok()) << r.error().message;
      const Status inv = (*engine)->check_invariants();
      ASSERT_TRUE(inv.ok()) << inv.error().message;
      const GenerateResult alone = solo(*model, reqs[waited].prompt, reqs[waited].config);
      if (r->finish == FinishReason::Cancelled) {
        EXPECT_TRUE(cancelled[waited]) << "request " << waited;
        EXPECT_TRUE(is_prefix(r->tokens, alone.tokens)) << "request " << waited;
      } else {
        expect_same(*r, alone, waited);
      }
      ++waited;
    }
  }
  const auto st = (*engine)->stats();
  EXPECT_EQ(st.completed, static_cast<int64_t>(n_requests));
  EXPECT_GT(st.preempted, 0);
  EXPECT_GT(st.prefix_hit_tokens, 0);
  EXPECT_GT(st.cancelled, 0);
  EXPECT_EQ(st.blocks_used, 0);
  EXPECT_TRUE((*engine)->check_invariants().ok());
}

TEST(Engine, RandomScheduleKeepsInvariantsAndSoloResults) {
  // 10 blocks of 16 rows for up to 6 sequences.
  random_schedule(bundled(cpu(/*kv_size=*/160, 128)), 160,
                  {.max_running = 6, .max_queued = 1000, .step_tokens = 20}, 16);
}

// Gemma 2 / 3: the sliding-window layers' pool gives back what fell out of the window (prompts and
// shared prefixes run past it), and its prefix index serves a cached prefix only with the window's
// blocks still there; a small window pool (kv_size_window) adds its own pressure.
class EngineSlidingWindow : public test::WithSharedFixtures,
                            public ::testing::WithParamInterface<const char*> {};

TEST_P(EngineSlidingWindow, RandomScheduleKeepsInvariantsAndSoloResults) {
  LoadOptions lo = cpu(/*kv_size=*/160, 128);
  lo.n_seq_max = 6;
  lo.kv_size_window = 112;
  auto m = load_llm((fixtures_ / "models/synthetic-arch" / (std::string(GetParam()) + ".gguf")).string(), lo);
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ((*m)->info().kv_size_window, 112 + 16);  // + the null block
  random_schedule(*m, 80, {.max_running = 6, .max_queued = 1000, .step_tokens = 20}, 32);
}

INSTANTIATE_TEST_SUITE_P(Families, EngineSlidingWindow, ::testing::Values("gemma2-f32", "gemma3-f32"));

}  // namespace
}  // namespace glass

namespace glass {
namespace {

// The hybrids: LFM2, whose convolutions keep their state as rows of the sliding-window pool
// (window 3), and Qwen 3.5, whose DeltaNet states live in slots (kv/recurrent.h) beside the conv
// rows and the attention pool. Batched, chunked, preempted, cancelled and prefix-hit requests all
// equal their solo runs, so the state each sequence resumes from (its rows, a checkpoint of its
// slot, or zeros) is exactly its own. Gemma 4 is no hybrid but shares the tests: its local layers
// (window 12) and global layers differ in head size and KV-head count, and its last layers read
// earlier layers' rows in both pools; gpt-oss's experts and sinks in alternating windowed layers.
// The fixtures are the repository's.
class Engine2026Families : public ::testing::TestWithParam<const char*> {
 protected:
  std::string path() const {
    return (test::source_dir() / "tests/fixtures/models/synthetic-2026" / (std::string(GetParam()) + ".gguf"))
        .string();
  }
};

TEST_P(Engine2026Families, ThirtyTwoRequestsFromFourThreadsEqualSoloRuns) {
  LoadOptions lo = cpu(/*kv_size=*/32 * 112);
  lo.n_seq_max = 32;
  many_threads_equal_solo(lo, 32, path());
}

TEST_P(Engine2026Families, RandomScheduleKeepsInvariantsAndSoloResults) {
  LoadOptions lo = cpu(/*kv_size=*/160, 128);
  lo.n_seq_max = 6;
  lo.kv_size_window = 112;  // a solo run prefills up to 100 tokens in one step
  auto m = load_llm(path(), lo);
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ((*m)->info().kv_size_window, 112 + 16);  // + the null block
  random_schedule(*m, 80, {.max_running = 6, .max_queued = 1000, .step_tokens = 20}, 32);
}

INSTANTIATE_TEST_SUITE_P(Families2026, Engine2026Families,
                         ::testing::Values("lfm2-f32", "qwen35-f32", "qwen35moe-f32", "gemma4-f32",
                                           "gemma4moe-f32", "gptoss-f32"));

}  // namespace
}  // namespace glass
