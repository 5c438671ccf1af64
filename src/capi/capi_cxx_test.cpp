// The C API against the C++ API it wraps: the same tokens, logits (bit for bit) and generations for
// the same inputs, defaults that track LoadOptions / GenerateConfig, cancellation from another
// thread, and exceptions stopped at the boundary.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "glass/glass.h"
#include "glass/llm.h"
#include "support/fixtures.h"

namespace glass {
namespace {

std::string bundled() { return (test::source_dir() / "models/stories260K.gguf").string(); }

// The options both APIs load with.
constexpr int64_t kCtx = 256;
constexpr int32_t kThreads = 2;

struct Pieces {
  std::vector<std::string> list;
  std::string joined() const {
    std::string s;
    for (const auto& p : list) s += p;
    return s;
  }
};

int collect(const char* piece, size_t len, void* user) {
  static_cast<Pieces*>(user)->list.emplace_back(piece, len);
  return 0;
}

class CApi : public ::testing::Test {
 protected:
  void SetUp() override {
    glass_load_options opt = glass_load_options_default();
    opt.n_ctx = kCtx;
    opt.n_threads = kThreads;
    ASSERT_EQ(glass_model_load(bundled().c_str(), &opt, &c_model_), GLASS_OK) << glass_last_error();
    auto m = load_llm(bundled(), LoadOptions{.backend = "cpu", .n_ctx = kCtx, .n_threads = kThreads});
    ASSERT_TRUE(m) << m.error().message;
    model_ = *m;
  }
  void TearDown() override { glass_model_free(c_model_); }

  std::unique_ptr<Session> session() {
    auto s = model_->new_session();
    EXPECT_TRUE(s);
    return std::move(*s);
  }

  glass_model* c_model_ = nullptr;
  std::shared_ptr<Model> model_;
};

TEST(CApiDefaults, TrackTheCxxDefaults) {
  const LoadOptions lo;
  const glass_load_options o = glass_load_options_default();
  EXPECT_EQ(o.backend, nullptr);
  EXPECT_EQ(lo.backend, "cpu");  // what NULL means
  EXPECT_EQ(o.n_ctx, lo.n_ctx);
  EXPECT_EQ(o.n_threads, lo.n_threads);
  EXPECT_EQ(o.kv_size, lo.kv_size);
  EXPECT_EQ(o.cache_type, GLASS_CACHE_F32);

  const GenerateConfig gc;
  const glass_generate_params p = glass_generate_params_default();
  EXPECT_EQ(p.max_tokens, gc.max_tokens);
  EXPECT_EQ(p.temperature, gc.sampling.temperature);
  EXPECT_EQ(p.top_k, gc.sampling.top_k);
  EXPECT_EQ(p.top_p, gc.sampling.top_p);
  EXPECT_EQ(p.min_p, gc.sampling.min_p);
  EXPECT_EQ(p.seed, gc.sampling.seed);
  EXPECT_EQ(GLASS_SEED_RANDOM, SamplingConfig::kRandomSeed);
  EXPECT_EQ(p.n_stop, 0u);
}

TEST_F(CApi, InfoAndTokensEqualTheCxxModel) {
  glass_model_info info;
  ASSERT_EQ(glass_model_get_info(c_model_, &info), GLASS_OK);
  EXPECT_EQ(info.architecture, model_->info().architecture);
  EXPECT_EQ(info.backend, model_->info().backend);
  EXPECT_EQ(info.vocab_size, model_->info().vocab_size);
  EXPECT_EQ(info.n_ctx, model_->info().n_ctx);
  EXPECT_EQ(info.n_ctx_train, model_->info().n_ctx_train);
  EXPECT_EQ(info.n_layers, model_->info().n_layers);

  for (const std::string& text :
       std::vector<std::string>{"Once upon a time", "", " Lily<s>and</s> Tom\n", "caf\xc3\xa9"}) {
    for (int special : {0, 1}) {
      SCOPED_TRACE(text + (special ? " +special" : ""));
      auto want = model_->tokenize(text, special != 0, special != 0);
      ASSERT_TRUE(want);
      std::vector<int32_t> got(64);
      size_t n = 0;
      ASSERT_EQ(
          glass_tokenize(c_model_, text.data(), text.size(), special, special, got.data(), got.size(), &n),
          GLASS_OK)
          << glass_last_error();
      got.resize(n);
      EXPECT_EQ(got, *want);

      std::string back(text.size() + 16, '\0');
      size_t len = 0;
      ASSERT_EQ(glass_detokenize(c_model_, got.data(), got.size(), back.data(), back.size(), &len), GLASS_OK);
      back.resize(len);
      EXPECT_EQ(back, model_->detokenize(got));
    }
  }
}

TEST_F(CApi, LogitsEqualSessionEvalBitForBit) {
  auto ids = model_->tokenize("Once upon a time, there was");
  ASSERT_TRUE(ids);
  const size_t vocab = static_cast<size_t>(model_->info().vocab_size);

  auto cxx = session();
  ASSERT_TRUE(cxx->eval(*ids));
  glass_session* s = nullptr;
  ASSERT_EQ(glass_session_new(c_model_, &s), GLASS_OK);
  ASSERT_EQ(glass_session_eval(s, ids->data(), ids->size()), GLASS_OK) << glass_last_error();
  const float* logits = nullptr;
  size_t n = 0;
  ASSERT_EQ(glass_session_logits(s, &logits, &n), GLASS_OK);
  ASSERT_EQ(n, vocab);
  EXPECT_EQ(std::memcmp(logits, cxx->last_logits().data(), vocab * sizeof(float)), 0);

  // One decode step on both.
  const int32_t next = 403;
  ASSERT_TRUE(cxx->eval(std::span<const int32_t>(&next, 1)));
  ASSERT_EQ(glass_session_eval(s, &next, 1), GLASS_OK);
  ASSERT_EQ(glass_session_logits(s, &logits, &n), GLASS_OK);
  EXPECT_EQ(std::memcmp(logits, cxx->last_logits().data(), vocab * sizeof(float)), 0);
  EXPECT_EQ(glass_session_n_past(s), cxx->n_past());
  glass_session_free(s);

  // Every token's logits.
  std::vector<float> want(ids->size() * vocab), got(ids->size() * vocab);
  ASSERT_TRUE(session()->eval(*ids, want));
  ASSERT_EQ(glass_session_new(c_model_, &s), GLASS_OK);
  ASSERT_EQ(glass_session_eval_all(s, ids->data(), ids->size(), got.data(), got.size()), GLASS_OK);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
  glass_session_free(s);
}

struct Case {
  const char* name;
  GenerateConfig config;
};

TEST_F(CApi, GenerationEqualsGenerateBitForBit) {
  GenerateConfig greedy;
  greedy.max_tokens = 48;
  greedy.sampling.temperature = 0;
  GenerateConfig sampled;
  sampled.max_tokens = 48;
  sampled.sampling.temperature = 0.9f;
  sampled.sampling.top_k = 20;
  sampled.sampling.top_p = 0.9f;
  sampled.sampling.min_p = 0.02f;
  sampled.sampling.seed = 7;
  GenerateConfig stopped = greedy;
  stopped.stop = {" the", "zzz"};
  for (const Case& c : {Case{"greedy", greedy}, Case{"sampled", sampled}, Case{"stop", stopped}}) {
    SCOPED_TRACE(c.name);
    Pieces cxx_pieces;
    auto want = generate(*session(), "Once upon a time", c.config, [&](std::string_view piece) {
      cxx_pieces.list.emplace_back(piece);
      return true;
    });
    ASSERT_TRUE(want) << want.error().message;

    glass_generate_params p = glass_generate_params_default();
    p.max_tokens = c.config.max_tokens;
    p.temperature = c.config.sampling.temperature;
    p.top_k = c.config.sampling.top_k;
    p.top_p = c.config.sampling.top_p;
    p.min_p = c.config.sampling.min_p;
    p.seed = c.config.sampling.seed;
    std::vector<const char*> stops;
    for (const auto& s : c.config.stop) stops.push_back(s.c_str());
    p.stop = stops.data();
    p.n_stop = stops.size();
    glass_session* s = nullptr;
    glass_request* r = nullptr;
    ASSERT_EQ(glass_session_new(c_model_, &s), GLASS_OK);
    ASSERT_EQ(glass_request_new(&r), GLASS_OK);
    Pieces c_pieces;
    ASSERT_EQ(glass_generate(s, "Once upon a time", &p, collect, &c_pieces, r), GLASS_OK)
        << glass_last_error();

    size_t len = 0, n = 0;
    const char* text = glass_request_text(r, &len);
    const int32_t* tokens = glass_request_tokens(r, &n);
    EXPECT_EQ(std::string(text, len), want->text);
    EXPECT_EQ(std::vector<int32_t>(tokens, tokens + n), want->tokens);
    EXPECT_EQ(static_cast<int>(glass_request_finish_reason(r)), static_cast<int>(want->finish));
    // The same pieces as the C++ callback, then what generate held back at the end.
    ASSERT_GE(c_pieces.list.size(), cxx_pieces.list.size());
    EXPECT_TRUE(std::equal(cxx_pieces.list.begin(), cxx_pieces.list.end(), c_pieces.list.begin()));
    EXPECT_EQ(c_pieces.joined(), want->text);
    EXPECT_FALSE(want->text.empty());
    glass_request_free(r);
    glass_session_free(s);
  }
}

TEST_F(CApi, CancelFromAnotherThread) {
  glass_session* s = nullptr;
  glass_request* r = nullptr;
  ASSERT_EQ(glass_session_new(c_model_, &s), GLASS_OK);
  ASSERT_EQ(glass_request_new(&r), GLASS_OK);
  struct Shared {
    glass_request* request;
    std::atomic<bool> cancelled{false};
    int pieces = 0;
  } shared{r};
  auto on_piece = [](const char*, size_t, void* user) -> int {
    auto* sh = static_cast<Shared*>(user);
    if (++sh->pieces == 1) {
      std::thread([sh] {
        glass_request_cancel(sh->request);
        sh->cancelled = true;
      }).detach();
      // Hold the token loop here until the other thread has set the flag.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!sh->cancelled && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    }
    return 0;
  };
  glass_generate_params p = glass_generate_params_default();
  p.temperature = 0;
  p.max_tokens = 64;
  ASSERT_EQ(glass_generate(s, "Once upon a time", &p, on_piece, &shared, r), GLASS_OK);
  EXPECT_TRUE(shared.cancelled);
  EXPECT_EQ(glass_request_finish_reason(r), GLASS_FINISH_CANCELLED);
  size_t n = 0;
  glass_request_tokens(r, &n);
  EXPECT_EQ(n, 1u);
  glass_request_free(r);
  glass_session_free(s);
}

TEST_F(CApi, NoExceptionCrossesTheBoundary) {
  glass_session* s = nullptr;
  ASSERT_EQ(glass_session_new(c_model_, &s), GLASS_OK);
  auto throwing = [](const char*, size_t, void*) -> int {
    throw std::runtime_error("boom from the callback");
  };
  glass_generate_params p = glass_generate_params_default();
  p.max_tokens = 8;
  EXPECT_EQ(glass_generate(s, "Once upon a time", &p, throwing, nullptr, nullptr), GLASS_ERR_INTERNAL);
  EXPECT_NE(std::string(glass_last_error()).find("unexpected exception: boom from the callback"),
            std::string::npos)
      << glass_last_error();
  // The session still works.
  ASSERT_EQ(glass_session_reset(s), GLASS_OK);
  EXPECT_EQ(glass_generate(s, "Once upon a time", &p, nullptr, nullptr, nullptr), GLASS_OK)
      << glass_last_error();
  glass_session_free(s);
}

TEST_F(CApi, ErrorsArePerThread) {
  ASSERT_EQ(glass_session_truncate(nullptr, 0), GLASS_ERR_INVALID_ARGUMENT);
  const std::string mine = glass_last_error();
  std::string theirs;
  std::thread([&] {
    EXPECT_STREQ(glass_last_error(), "");
    glass_model* m = nullptr;
    EXPECT_NE(glass_model_load("/nonexistent.gguf", nullptr, &m), GLASS_OK);
    theirs = glass_last_error();
  }).join();
  EXPECT_EQ(mine, "glass_session_truncate: session is NULL");
  EXPECT_EQ(glass_last_error(), mine);
  EXPECT_NE(theirs.find("/nonexistent.gguf"), std::string::npos) << theirs;
}

TEST_F(CApi, SessionsKeepTheirModelAlive) {
  glass_session* s = nullptr;
  ASSERT_EQ(glass_session_new(c_model_, &s), GLASS_OK);
  glass_model_free(c_model_);
  c_model_ = nullptr;
  glass_generate_params p = glass_generate_params_default();
  p.max_tokens = 4;
  EXPECT_EQ(glass_generate(s, "Once upon a time", &p, nullptr, nullptr, nullptr), GLASS_OK)
      << glass_last_error();
  glass_session_free(s);
}

}  // namespace
}  // namespace glass
