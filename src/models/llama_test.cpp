// The llama family against independent oracles (llama.cpp's logits in ../shared/fixtures): every
// logit at every position, in one prefill call, token by token through the KV cache, and in chunks;
// plus the loading rules (hyper-parameters from metadata, missing or inconsistent keys and tensors).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "formats/npy.h"
#include "glass/llm.h"
#include "support/fixtures.h"
#include "support/tiny_llama.h"

namespace glass {
namespace {

struct Reference {
  std::vector<int32_t> tokens;
  formats::NpyArray logits;
};

Reference read_reference(const std::filesystem::path& json_path, const std::filesystem::path& npy_path) {
  std::ifstream in(json_path);
  const auto doc = nlohmann::json::parse(in);
  auto arr = formats::read_npy_f32(npy_path);
  EXPECT_TRUE(arr.ok()) << npy_path;
  return Reference{doc.at("token_ids").get<std::vector<int32_t>>(),
                   arr.ok() ? std::move(*arr) : formats::NpyArray{}};
}

// Logits for every position, feeding `chunk` tokens per eval call (decode: first 1, then 1 each).
std::vector<float> run_logits(const std::string& model_path, const std::vector<int32_t>& ids, int64_t chunk,
                              bool decompose = false) {
  LoadOptions opt{.backend = "ref"};
  opt.decompose = decompose;
  auto model = load_llm(model_path, opt);
  EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error().message);
  if (!model.ok()) return {};
  auto session = (*model)->new_session();
  const int64_t vocab = (*model)->info().vocab_size;
  std::vector<float> out(ids.size() * static_cast<size_t>(vocab));
  for (size_t done = 0; done < ids.size();) {
    const size_t c = std::min(ids.size() - done, static_cast<size_t>(chunk));
    auto st = (*session)->eval(
        std::span<const int32_t>(ids.data() + done, c),
        std::span<float>(out.data() + done * static_cast<size_t>(vocab), c * static_cast<size_t>(vocab)));
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    done += c;
  }
  return out;
}

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 1e9;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
  return m;
}

struct Case {
  const char* model;      // under fixtures/models
  const char* reference;  // under fixtures/reference, without extension
  const char* json_name;  // the json beside the npy (stories260K uses logits.json)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model; }

class LlamaReference : public test::WithSharedFixtures, public ::testing::WithParamInterface<Case> {};

TEST_P(LlamaReference, EveryLogitInEveryModeWithin1e4) {
  const Case c = GetParam();
  const auto ref_dir = fixtures_ / "reference" / std::filesystem::path(c.reference).parent_path();
  const std::string stem = std::filesystem::path(c.reference).filename().string();
  Reference ref = read_reference(ref_dir / c.json_name, ref_dir / (stem + ".npy"));
  ASSERT_EQ(ref.logits.shape.size(), 2u);
  ASSERT_EQ(ref.logits.shape[0], static_cast<int64_t>(ref.tokens.size()));
  const std::string model = (fixtures_ / "models" / c.model).string();
  const auto n = static_cast<int64_t>(ref.tokens.size());
  for (int64_t chunk : {n, int64_t{1}, int64_t{7}}) {
    const auto got = run_logits(model, ref.tokens, chunk);
    EXPECT_LE(max_abs(got, ref.logits.data), 1e-4) << c.model << " chunk " << chunk;
  }
  // The decomposed graph (primitives only) computes the same function.
  EXPECT_LE(max_abs(run_logits(model, ref.tokens, 7, true), ref.logits.data), 1e-4)
      << c.model << " decomposed";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LlamaReference,
                         ::testing::Values(Case{"stories260K.gguf", "stories260K/logits", "logits.json"},
                                           Case{"synthetic/llama-gqa-f32.gguf", "synthetic/llama-gqa-f32",
                                                "llama-gqa-f32.json"},
                                           Case{"synthetic/llama-tied-f32.gguf", "synthetic/llama-tied-f32",
                                                "llama-tied-f32.json"}),
                         [](const auto& param_info) {
                           std::string s = std::filesystem::path(param_info.param.model).stem().string();
                           for (char& ch : s)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

class LlamaGreedy : public test::WithSharedFixtures {};

TEST_F(LlamaGreedy, ReproducesRecordedContinuations) {
  std::ifstream in(fixtures_ / "reference/stories260K/greedy.json");
  const auto doc = nlohmann::json::parse(in);
  auto model = load_llm((fixtures_ / "models/stories260K.gguf").string(), {.backend = "ref"});
  ASSERT_TRUE(model.ok()) << model.error().message;
  ASSERT_GE(doc.at("cases").size(), 3u);
  for (const auto& c : doc.at("cases")) {
    const std::string prompt = c.at("prompt").get<std::string>();
    auto ids = (*model)->tokenize(prompt);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, c.at("prompt_token_ids").get<std::vector<int32_t>>()) << prompt;
    auto session = (*model)->new_session();
    GenerateConfig cfg;
    cfg.max_tokens = c.at("n_new_tokens_requested").get<int32_t>();
    cfg.sampling.temperature = 0.0f;
    std::string streamed;
    auto r = generate(**session, *ids, cfg, [&](std::string_view piece) {
      streamed += piece;
      return true;
    });
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->tokens, c.at("continuation_token_ids").get<std::vector<int32_t>>()) << prompt;
    EXPECT_EQ(r->text, c.at("continuation_text").get<std::string>()) << prompt;
    EXPECT_EQ(streamed, r->text);
  }
}

// Loading rules, on tiny files that differ from a valid one in one place.
TEST(LlamaLoad, TinyModelLoadsAndRuns) {
  auto path = test::write_tiny_llama({}, "tiny_ok.gguf");
  auto model = load_llm(path.string(), {.backend = "ref"});
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ((*model)->info().n_ctx, 32);
  EXPECT_EQ((*model)->info().summary.find("llama: 1 layers, dim 8, 2 heads (1 kv), head_dim 4"), 0u)
      << (*model)->info().summary;
  auto session = (*model)->new_session();
  const std::vector<int32_t> ids{1, 4, 5};
  ASSERT_TRUE((*session)->eval(ids).ok());
  for (float v : (*session)->last_logits()) EXPECT_TRUE(std::isfinite(v));
}

struct BadLoad {
  test::TinyLlamaSpec spec;
  const char* expect;  // substring of the error
};

void PrintTo(const BadLoad& c, std::ostream* os) { *os << c.expect; }

class LlamaBadLoad : public ::testing::TestWithParam<BadLoad> {};

TEST_P(LlamaBadLoad, FailsAtLoadNamingTheProblem) {
  const BadLoad& c = GetParam();
  auto path = test::write_tiny_llama(c.spec, "tiny_bad.gguf");
  auto model = load_llm(path.string(), {.backend = "ref"});
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.error().message.find(c.expect), std::string::npos) << model.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LlamaBadLoad,
    ::testing::Values(BadLoad{{.drop_keys = {"llama.block_count"}}, "llama.block_count"},
                      BadLoad{{.drop_keys = {"llama.attention.layer_norm_rms_epsilon"}},
                              "llama.attention.layer_norm_rms_epsilon"},
                      BadLoad{{.drop_tensors = {"blk.0.ffn_up.weight"}},
                              "required tensor 'blk.0.ffn_up.weight' is missing"},
                      BadLoad{{.bad_shape_tensor = "blk.0.attn_k.weight"},
                              "tensor 'blk.0.attn_k.weight' has shape [5, 8], expected [4, 8]"},
                      BadLoad{{.n_heads = 2, .n_kv_heads = 3},
                              "is not a multiple of llama.attention.head_count_kv"},
                      BadLoad{{.architecture = "mamba"}, "architecture 'mamba'"},
                      BadLoad{{.drop_keys = {"general.architecture"}}, "general.architecture"}));

}  // namespace
}  // namespace glass
