// The analysis hooks on the bundled stories260K model (F32): Model::tensor_f32 gives the stored weights,
// Session::set_capture keeps graph nodes' values without changing the logits, and the captured
// final norm times output.weight gives the logits back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "glass/llm.h"
#include "support/bundled_model.h"
#include "support/fixtures.h"

namespace glass {
namespace {

std::shared_ptr<Model> bundled(LoadOptions opt = {}) { return test::load_bundled(opt); }

const std::vector<int32_t> kIds{1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 290};

TEST(Analysis, TensorF32GivesTheStoredWeightWithItsShape) {
  auto model = bundled();
  ASSERT_TRUE(model);
  const std::vector<std::string> names = model->tensor_names();
  ASSERT_FALSE(names.empty());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "blk.0.attn_q.weight"), names.end());
  std::vector<int64_t> shape;
  auto embd = model->tensor_f32("token_embd.weight", &shape);
  ASSERT_TRUE(embd.ok()) << embd.error().message;
  EXPECT_EQ(shape, (std::vector<int64_t>{model->info().vocab_size, 64}));
  ASSERT_EQ(embd->size(), static_cast<size_t>(model->info().vocab_size * 64));
  // The graph's first node gathers embedding rows: captured, they are the weight's rows, exactly.
  auto s = model->new_session();
  ASSERT_TRUE((*s)->set_capture({"token_embd"}).ok());
  ASSERT_TRUE((*s)->eval(kIds).ok());
  const Session::Captured& rows = (*s)->captured().at(0);
  ASSERT_EQ(rows.values.size(), kIds.size() * 64);
  for (size_t t = 0; t < kIds.size(); ++t)
    EXPECT_EQ(std::memcmp(rows.values.data() + t * 64, embd->data() + static_cast<size_t>(kIds[t]) * 64,
                          64 * sizeof(float)),
              0)
        << "token " << t;

  auto missing = model->tensor_f32("blk.99.attn_q.weight");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::InvalidArgument);
  EXPECT_NE(missing.error().message.find("blk.99.attn_q.weight"), std::string::npos);
}

// Captured residual streams ([T, dim]) and the final norm ([O, dim]) of an eval in chunks of 4;
// the logits equal those of a session without captures, bit for bit, on both backends.
TEST(Analysis, CaptureKeepsNodesAndLeavesLogitsUnchanged) {
  for (const char* backend : {"ref", "cpu"}) {
    LoadOptions opt;
    opt.backend = backend;
    opt.n_batch = 4;
    auto model = bundled(opt);
    ASSERT_TRUE(model);
    const auto vocab = static_cast<size_t>(model->info().vocab_size);
    const uint64_t plans = model->plans_compiled();

    auto plain = model->new_session();
    std::vector<float> want(kIds.size() * vocab);
    ASSERT_TRUE((*plain)->eval(kIds, want).ok());

    auto s = model->new_session();
    ASSERT_TRUE((*s)->set_capture({"blk.0.out", "blk.3.out", "output_norm"}).ok());
    std::vector<float> got(kIds.size() * vocab);
    ASSERT_TRUE((*s)->eval(kIds, got).ok());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << backend;
    const auto& c = (*s)->captured();
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[0].name, "blk.0.out");
    EXPECT_EQ(c[0].shape, (std::vector<int64_t>{static_cast<int64_t>(kIds.size()), 64}));
    EXPECT_EQ(c[0].values.size(), kIds.size() * 64);
    EXPECT_EQ(c[2].shape, (std::vector<int64_t>{static_cast<int64_t>(kIds.size()), 64}));

    // logits = output_norm x output.weight^T, recomputed from the capture and the weights.
    std::vector<int64_t> wshape;
    auto w = model->tensor_f32("output.weight", &wshape);
    ASSERT_TRUE(w.ok());
    ASSERT_EQ(wshape, (std::vector<int64_t>{static_cast<int64_t>(vocab), 64}));
    double worst = 0;
    for (size_t t = 0; t < kIds.size(); ++t)
      for (size_t v = 0; v < vocab; ++v) {
        double acc = 0;
        for (size_t k = 0; k < 64; ++k) acc += double{c[2].values[t * 64 + k]} * double{(*w)[v * 64 + k]};
        worst = std::max(worst, std::abs(acc - double{got[t * vocab + v]}));
      }
    EXPECT_LT(worst, 1e-4) << backend;

    // Without all_logits the O nodes give the last token's row, the T nodes every token's.
    const int32_t next = 432;
    ASSERT_TRUE((*s)->eval(std::span<const int32_t>(&next, 1)).ok());
    EXPECT_EQ(c[0].shape[0], 1);
    EXPECT_EQ(c[2].shape[0], 1);
    ASSERT_TRUE((*plain)->eval(std::span<const int32_t>(&next, 1)).ok());
    EXPECT_EQ(std::memcmp((*s)->last_logits().data(), (*plain)->last_logits().data(), vocab * sizeof(float)),
              0);

    // Back to the model's plans: nothing is captured, and the model compiled nothing for it.
    ASSERT_TRUE((*s)->set_capture({}).ok());
    ASSERT_TRUE((*s)->eval(std::span<const int32_t>(&next, 1)).ok());
    EXPECT_TRUE((*s)->captured().empty());
    EXPECT_EQ((*s)->n_past(), static_cast<int64_t>(kIds.size()) + 2);
    EXPECT_GE(model->plans_compiled(), plans);
  }
}

TEST(Analysis, CaptureRefusesWhatHasNoRowPerToken) {
  auto model = bundled();
  ASSERT_TRUE(model);
  auto s = model->new_session();
  for (const char* name : {"no.such.node", "tokens", "token_embd.weight", "blk.0.cache_k.write"}) {
    auto st = (*s)->set_capture({name});
    ASSERT_FALSE(st.ok()) << name;
    EXPECT_EQ(st.error().code, ErrorCode::InvalidArgument);
    EXPECT_NE(st.error().message.find(name), std::string::npos) << st.error().message;
  }
  EXPECT_FALSE((*s)->set_capture({"blk.1.out", "blk.1.out"}).ok());
  EXPECT_TRUE((*s)->captured().empty());  // a refused set leaves the session as it was
}

}  // namespace
}  // namespace glass
