// The scheduler as a function: states built by hand (no model, no threads), each step's batch
// checked, and a stand-in for the engine's evaluation committing the batch to the sequence state.
#include "runtime/scheduler.h"

#include <gtest/gtest.h>

#include <numeric>

namespace glass::runtime {
namespace {

std::unique_ptr<kv::State> pool(int64_t rows, int64_t block, int32_t n_seq) {
  kv::StateSpec spec;
  spec.groups.push_back({rows, block, /*max_blocks=*/64, 0});
  spec.n_seq = n_seq;
  spec.n_batch = 64;
  auto s = kv::State::create(spec);
  EXPECT_TRUE(s.ok());
  return std::move(*s);
}

std::unique_ptr<Request> request(int n_prompt, int32_t first = 1) {
  auto r = std::make_unique<Request>();
  r->tokens.resize(static_cast<size_t>(n_prompt));
  std::iota(r->tokens.begin(), r->tokens.end(), first);
  r->prompt_size = r->tokens.size();
  return r;
}

SchedulerState state(int32_t max_running) {
  SchedulerState st;
  st.id_used.assign(static_cast<size_t>(max_running), 0);
  return st;
}

// What the engine does with a batch, less the model: the rows written and committed, and a new
// token for each sequence whose pending tokens were all evaluated.
void evaluate(kv::State& kv, const StepBatch& b) {
  for (const StepEntry& e : b.entries) {
    ASSERT_TRUE(kv.prepare(e.r->seq, e.n).ok());
    kv.commit(e.r->seq,
              std::span(e.r->tokens).subspan(static_cast<size_t>(e.r->n_eval), static_cast<size_t>(e.n)));
    kv.finish_step(e.r->seq);
    e.r->n_eval += e.n;
    if (e.r->pending() == 0) e.r->tokens.push_back(500 + static_cast<int32_t>(e.r->tokens.size()));
  }
}

std::vector<std::pair<Request*, int64_t>> entries(const StepBatch& b) {
  std::vector<std::pair<Request*, int64_t>> out;
  for (const StepEntry& e : b.entries) out.emplace_back(e.r, e.n);
  return out;
}

using Entries = std::vector<std::pair<Request*, int64_t>>;

TEST(Scheduler, DecodesFirstThenPrefillChunksThenAdmissionsWithinTheBudget) {
  auto kv = pool(256, 4, 4);
  SchedulerState st = state(4);
  const SchedulePolicy policy{.step_tokens = 8, .max_running = 4};
  st.queue.push_back(request(10));
  st.queue.push_back(request(3, 100));
  Request* a = st.queue[0].get();
  Request* b = st.queue[1].get();
  StepBatch out;
  schedule(st, *kv, policy, out);
  EXPECT_EQ(entries(out), (Entries{{a, 8}}));  // the budget ends inside a's prompt: b waits
  EXPECT_EQ(out.admitted, std::vector<Request*>{a});
  ASSERT_EQ(st.queue.size(), 1u);
  evaluate(*kv, out);
  schedule(st, *kv, policy, out);
  EXPECT_EQ(entries(out), (Entries{{a, 2}, {b, 3}}));  // a's last chunk, then b admitted
  evaluate(*kv, out);
  st.queue.push_back(request(20, 200));
  Request* c = st.queue[0].get();
  schedule(st, *kv, policy, out);
  EXPECT_EQ(entries(out), (Entries{{a, 1}, {b, 1}, {c, 6}}));  // decodes first, then c's first chunk
  EXPECT_EQ(a->seq, 0);
  EXPECT_EQ(b->seq, 1);
  EXPECT_EQ(c->seq, 2);
  evaluate(*kv, out);
  schedule(st, *kv, policy, out);
  EXPECT_EQ(entries(out), (Entries{{a, 1}, {b, 1}, {c, 6}}));
  ASSERT_TRUE(check_schedule(st, *kv, policy).ok());
}

TEST(Scheduler, APoolTooSmallPreemptsTheNewestWhichWaitsFirstInLine) {
  auto kv = pool(16, 4, 3);  // 4 blocks
  SchedulerState st = state(3);
  const SchedulePolicy policy{.step_tokens = 16, .max_running = 3};
  st.queue.push_back(request(7));
  st.queue.push_back(request(7, 100));
  Request* a = st.queue[0].get();
  Request* b = st.queue[1].get();
  StepBatch out;
  schedule(st, *kv, policy, out);
  EXPECT_EQ(entries(out), (Entries{{a, 7}, {b, 7}}));
  evaluate(*kv, out);  // 8 tokens each: every block taken
  schedule(st, *kv, policy, out);
  EXPECT_EQ(entries(out), (Entries{{a, 1}, {b, 1}}));  // the last row of each's second block
  evaluate(*kv, out);
  schedule(st, *kv, policy, out);
  // a needs a third block: b, the newest, gives its two back and waits at the front of the queue.
  EXPECT_EQ(entries(out), (Entries{{a, 1}}));
  EXPECT_EQ(out.preempted, 1);
  EXPECT_EQ(b->seq, -1);
  EXPECT_EQ(b->n_eval, 0);
  EXPECT_EQ(b->preemptions, 1);
  ASSERT_EQ(st.queue.size(), 1u);
  EXPECT_EQ(st.queue.front().get(), b);
  EXPECT_EQ(b->tokens.size(), 9u);  // its prompt and what it generated, recomputed on return
  ASSERT_TRUE(check_schedule(st, *kv, policy).ok());
}

TEST(Scheduler, TheWatermarkHoldsAdmissionsBackWhileOthersRun) {
  auto kv = pool(32, 4, 2);  // 8 blocks
  SchedulerState st = state(2);
  const SchedulePolicy policy{.step_tokens = 32, .max_running = 2, .watermark_tokens = 12};
  st.queue.push_back(request(12));
  StepBatch out;
  schedule(st, *kv, policy, out);  // alone: admitted whatever the watermark
  Request* a = st.running.front().get();
  evaluate(*kv, out);
  st.queue.push_back(request(10, 100));
  schedule(st, *kv, policy, out);
  // 16 rows free after a's decode block; 10 for b would leave 6 < 12: b waits.
  EXPECT_EQ(entries(out), (Entries{{a, 1}}));
  EXPECT_EQ(st.queue.size(), 1u);
  EXPECT_FALSE(kv->holds(1));  // the id it tried gave back what its prefix match took
  ASSERT_TRUE(check_schedule(st, *kv, policy).ok());
}

TEST(Scheduler, WhatCannotFitEvenAloneFinishes) {
  auto kv = pool(8, 4, 2);
  SchedulerState st = state(2);
  const SchedulePolicy policy{.step_tokens = 4, .max_running = 2};
  st.queue.push_back(request(8));
  Request* a = st.queue[0].get();
  StepBatch out;
  for (int i = 0; i < 2; ++i) {
    schedule(st, *kv, policy, out);
    evaluate(*kv, out);
  }
  EXPECT_EQ(a->n_eval, 8);
  schedule(st, *kv, policy, out);  // the ninth token has no block, and nothing else to preempt
  ASSERT_EQ(out.finished.size(), 1u);
  EXPECT_EQ(out.finished[0].get(), a);
  EXPECT_TRUE(st.running.empty());
  EXPECT_FALSE(kv->holds(0));
  EXPECT_EQ(st.id_used[0], 0);
  ASSERT_TRUE(check_schedule(st, *kv, policy).ok());
}

TEST(Scheduler, AdmissionTakesTheCachedPrefixUnlessTheCacheIsOff) {
  for (bool prefix_cache : {true, false}) {
    auto kv = pool(64, 4, 2);
    SchedulerState st = state(2);
    const SchedulePolicy policy{.step_tokens = 32, .max_running = 2, .prefix_cache = prefix_cache};
    st.queue.push_back(request(12));
    StepBatch out;
    schedule(st, *kv, policy, out);
    evaluate(*kv, out);
    // a ends: its blocks stay in the prefix index.
    kv->release(st.running[0]->seq);
    st.id_used[static_cast<size_t>(st.running[0]->seq)] = 0;
    st.running.clear();
    st.queue.push_back(request(14));  // the same 12 tokens, then two more
    Request* b = st.queue[0].get();
    schedule(st, *kv, policy, out);
    EXPECT_EQ(out.prefix_hit_tokens, prefix_cache ? 12 : 0);
    EXPECT_EQ(entries(out), (Entries{{b, prefix_cache ? 2 : 14}}));
    EXPECT_EQ(b->prefix_hits, prefix_cache ? 12 : 0);
    ASSERT_TRUE(check_schedule(st, *kv, policy).ok());
  }
}

TEST(Scheduler, TheCheckFindsABrokenState) {
  auto kv = pool(64, 4, 2);
  SchedulerState st = state(2);
  const SchedulePolicy policy{.step_tokens = 32, .max_running = 2};
  st.queue.push_back(request(5));
  StepBatch out;
  schedule(st, *kv, policy, out);
  evaluate(*kv, out);
  ASSERT_TRUE(check_schedule(st, *kv, policy).ok());
  st.running[0]->n_eval = 4;  // the request and the cache disagree
  EXPECT_FALSE(check_schedule(st, *kv, policy).ok());
  st.running[0]->n_eval = 5;
  st.id_used[0] = 0;
  EXPECT_FALSE(check_schedule(st, *kv, policy).ok());
  st.id_used[0] = 1;
  ASSERT_TRUE(kv->prepare(1, 3).ok());  // an id no request holds takes blocks
  EXPECT_FALSE(check_schedule(st, *kv, policy).ok());
}

}  // namespace
}  // namespace glass::runtime

namespace glass::runtime {
namespace {

// With recurrent state (checkpoint_every = the block size) a prompt chunk that would end inside a
// block ends where that block starts, so the state after the step is one a checkpoint can keep; the
// tail follows in the next step, and decode steps are never cut.
TEST(Scheduler, PromptChunksEndOnBlockBoundariesForRecurrentState) {
  auto kv = pool(256, 16, 2);
  SchedulerState st = state(2);
  const SchedulePolicy policy{.step_tokens = 64, .max_running = 2, .checkpoint_every = 16};
  st.queue.push_back(request(41));
  Request* a = st.queue[0].get();
  StepBatch out;
  schedule(st, *kv, policy, out);
  EXPECT_EQ(entries(out), (Entries{{a, 32}}));  // 41 would end inside block 2: cut at 32
  evaluate(*kv, out);
  schedule(st, *kv, policy, out);
  EXPECT_EQ(entries(out), (Entries{{a, 9}}));  // no boundary inside [32, 41): the rest
  evaluate(*kv, out);
  schedule(st, *kv, policy, out);
  EXPECT_EQ(entries(out), (Entries{{a, 1}}));  // decode
  st.queue.push_back(request(10, 300));
  Request* b = st.queue[0].get();
  evaluate(*kv, out);
  schedule(st, *kv, policy, out);
  EXPECT_EQ(entries(out), (Entries{{a, 1}, {b, 10}}));  // a prompt inside its first block is not cut
  // Without recurrent state the budget alone decides.
  auto kv2 = pool(256, 16, 2);
  SchedulerState st2 = state(2);
  st2.queue.push_back(request(41));
  Request* c = st2.queue[0].get();
  schedule(st2, *kv2, SchedulePolicy{.step_tokens = 64, .max_running = 2}, out);
  EXPECT_EQ(entries(out), (Entries{{c, 41}}));
}

}  // namespace
}  // namespace glass::runtime
