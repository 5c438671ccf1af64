// SessionOptions: one loaded model serves sessions and engines of any cache shape, each equal bit
// for bit to a model loaded with that shape, each shape's plans compiled once.
#include <gtest/gtest.h>

#include <cstring>

#include "glass/engine.h"
#include "glass/llm.h"
#include "support/bundled_model.h"
#include "support/fixtures.h"

namespace glass {
namespace {

std::shared_ptr<Model> bundled(LoadOptions opt) { return test::load_bundled(opt); }

std::vector<float> all_logits(Session& s, const std::vector<int32_t>& ids, int64_t vocab) {
  std::vector<float> out(ids.size() * static_cast<size_t>(vocab));
  EXPECT_TRUE(s.eval(ids, out).ok());
  return out;
}

TEST(SessionOptions, EachShapeEqualsAModelLoadedWithIt) {
  const LoadOptions base{.backend = "cpu", .n_ctx = 128, .n_threads = 2};
  auto model = bundled(base);
  ASSERT_TRUE(model);
  const std::vector<int32_t> ids{1, 403, 407, 261, 378, 300, 12, 99, 45, 401, 17, 260, 311};
  const int64_t vocab = model->info().vocab_size;
  struct Shape {
    SessionOptions session;
    LoadOptions load;
  };
  std::vector<Shape> shapes;
  auto with = [&](auto set) {
    Shape s{{}, base};
    set(s.session, s.load);
    shapes.push_back(s);
  };
  with([](SessionOptions& s, LoadOptions& l) { s.kv_size = l.kv_size = 48; });
  with([](SessionOptions& s, LoadOptions& l) {
    s.kv_block_size = l.kv_block_size = 4;
    s.n_seq_max = l.n_seq_max = 3;
  });
  with([](SessionOptions& s, LoadOptions& l) {
    s.cache_type = l.cache_type = CacheType::F16;
    s.kv_size = l.kv_size = 256;
  });
  with([](SessionOptions& s, LoadOptions& l) { s.kv_storage = l.kv_storage = KvStorage::Dense; });
  with([](SessionOptions& s, LoadOptions& l) { s.batch_invariant = l.batch_invariant = true; });
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto own = bundled(shapes[i].load);
    ASSERT_TRUE(own);
    auto want_session = own->new_session();
    auto got_session = model->new_session(shapes[i].session);
    ASSERT_TRUE(want_session.ok() && got_session.ok()) << "shape " << i;
    const auto want = all_logits(**want_session, ids, vocab);
    const auto got = all_logits(**got_session, ids, vocab);
    const uint64_t compiled = model->plans_compiled();
    ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << "shape " << i;
    // A second session of that shape compiles nothing.
    auto again = model->new_session(shapes[i].session);
    ASSERT_TRUE(again.ok());
    const auto twice = all_logits(**again, ids, vocab);
    EXPECT_EQ(model->plans_compiled(), compiled) << "shape " << i;
    EXPECT_EQ(std::memcmp(want.data(), twice.data(), want.size() * sizeof(float)), 0) << "shape " << i;
  }
  // The load's own shape, asked for by value, is the base graph: nothing compiles.
  const uint64_t compiled = model->plans_compiled();
  auto same = model->new_session({.kv_block_size = 16, .cache_type = CacheType::F32});
  ASSERT_TRUE(same.ok());
  all_logits(**same, ids, vocab);
  EXPECT_EQ(model->plans_compiled(), compiled);
}

// The pools' sizes are symbols of the graph (C, W, N, M) bound per session: a session of any size
// runs the plans the load compiled. Only what changes the graph (block size, cache type) compiles.
TEST(SessionOptions, SizesCompileNothing) {
  auto model = bundled({.backend = "cpu", .n_ctx = 128, .n_threads = 2});
  ASSERT_TRUE(model);
  const std::vector<int32_t> ids{1, 403, 407, 261, 378};
  auto base = model->new_session();
  ASSERT_TRUE(base.ok());
  ASSERT_TRUE((*base)->eval(ids).ok());
  ASSERT_TRUE((*base)->eval(std::vector<int32_t>{300}).ok());  // both plans compiled
  const std::vector<float> want((*base)->last_logits().begin(), (*base)->last_logits().end());
  const uint64_t compiled = model->plans_compiled();
  for (const SessionOptions& o :
       {SessionOptions{.kv_size = 4096}, SessionOptions{.kv_size = 32, .n_seq_max = 1},
        SessionOptions{.n_seq_max = 500},
        SessionOptions{.kv_size = 3 * 128, .kv_storage = KvStorage::Dense}}) {
    auto s = model->new_session(o);
    ASSERT_TRUE(s.ok()) << s.error().message;
    ASSERT_TRUE((*s)->eval(ids).ok());
    ASSERT_TRUE((*s)->eval(std::vector<int32_t>{300}).ok());
    EXPECT_EQ(std::memcmp((*s)->last_logits().data(), want.data(), want.size() * sizeof(float)), 0);
  }
  EXPECT_EQ(model->plans_compiled(), compiled);
  auto other = model->new_session({.kv_block_size = 8});
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->eval(ids).ok());
  EXPECT_GT(model->plans_compiled(), compiled);
}

TEST(SessionOptions, AnEngineTakesItsCacheFromThem) {
  auto model = bundled({.backend = "cpu", .n_ctx = 128, .n_threads = 2});
  ASSERT_TRUE(model);
  // Two dense runs of 128 rows: two requests at once, whatever the load said.
  auto engine = Engine::create(
      model, {.session = {.kv_size = 2 * 128, .n_seq_max = 4, .kv_storage = KvStorage::Dense}});
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  GenerateConfig cfg;
  cfg.max_tokens = 8;
  cfg.sampling.temperature = 0.0f;
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (int32_t i = 0; i < 3; ++i) {
    auto h = (*engine)->submit({{1, 403 + i, 407}, cfg});
    ASSERT_TRUE(h.ok()) << h.error().message;
    handles.push_back(*h);
  }
  for (int32_t i = 0; i < 3; ++i) {
    auto r = handles[static_cast<size_t>(i)]->wait();
    ASSERT_TRUE(r.ok()) << r.error().message;
    auto alone = model->new_session();
    ASSERT_TRUE(alone.ok());
    auto want = generate(**alone, std::vector<int32_t>{1, 403 + i, 407}, cfg);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(r->tokens, want->tokens) << "request " << i;
  }
  EXPECT_TRUE((*engine)->check_invariants().ok());
  EXPECT_EQ(Engine::create(
                model, {.max_running = 3, .session = {.kv_size = 2 * 128, .kv_storage = KvStorage::Dense}})
                .error()
                .code,
            ErrorCode::InvalidArgument);
  EXPECT_EQ(Engine::create(model, {.max_running = 5, .session = {.n_seq_max = 4}}).error().code,
            ErrorCode::InvalidArgument);
}

TEST(SessionOptions, OutOfRangeFieldsAreRefusedByName) {
  auto model = bundled({.backend = "ref", .n_ctx = 64});
  ASSERT_TRUE(model);
  for (const SessionOptions& bad :
       {SessionOptions{.kv_size = -1}, SessionOptions{.kv_block_size = -4}, SessionOptions{.n_seq_max = -1},
        SessionOptions{.kv_size = int64_t{1} << 40}, SessionOptions{.n_seq_max = int64_t{1} << 30}}) {
    auto s = model->new_session(bad);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, ErrorCode::InvalidArgument) << s.error().message;
    const bool named = s.error().message.find("kv_size") != std::string::npos ||
                       s.error().message.find("n_seq_max") != std::string::npos;
    EXPECT_TRUE(named) << s.error().message;
  }
}

}  // namespace
}  // namespace glass
