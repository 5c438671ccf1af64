// load_llm on HF model directories: format detection, the same logits as the equivalent GGUF
// (q/k rows permuted by the converter there, rotate-half RoPE here), and one clear error for each
// way a directory can be wrong.
#include "runtime/hf_source.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "glass/llm.h"
#include "runtime/verify.h"
#include "support/fixtures.h"
#include "support/safetensors_writer.h"
#include "support/tiny_hf_llama.h"

namespace glass {
namespace {

std::vector<float> all_logits(const std::string& path, const std::vector<int32_t>& ids,
                              const std::string& mode, const GraphRewrite& rewrite = {}) {
  auto model = load_llm_rewritten(path, {.backend = "ref"}, rewrite);
  EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error().message);
  if (!model.ok()) return {};
  auto m = verify::parse_mode(mode, static_cast<int64_t>(ids.size()));
  auto out = verify::eval_logits(**model, ids, *m);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
  return out.ok() ? *out : std::vector<float>{};
}

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return 1e9;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
  return m;
}

const std::vector<int32_t> kIds{1, 4, 6, 3, 7, 5, 5, 2, 4, 3, 6, 7};

TEST(HfLoad, SameLogitsAsTheConvertedGguf) {
  for (bool tied : {false, true}) {
    const auto tiny = test::write_tiny_hf_llama({.tied = tied}, tied ? "tiny_hf_tied" : "tiny_hf");
    const auto want = all_logits(tiny.gguf.string(), kIds, "prefill");
    for (const char* mode : {"prefill", "decode", "chunked:5"})
      EXPECT_LE(max_abs(all_logits(tiny.dir.string(), kIds, mode), want), 1e-5) << mode << " tied " << tied;
  }
}

// Negative control: the HF weights with GGUF's interleaved pairing are a different function.
TEST(HfLoad, InterleavedPairingOnHfWeightsDiffers) {
  const auto tiny = test::write_tiny_hf_llama({}, "tiny_hf_control");
  const GraphRewrite interleaved = [](const graph::Graph& g) -> Result<graph::Graph> {
    graph::Graph out = g;
    for (graph::Node& n : out.nodes)
      if (n.op == graph::Op::Rope) std::get<graph::RopeAttrs>(n.attrs).mode = graph::RopeMode::Normal;
    return out;
  };
  EXPECT_GT(max_abs(all_logits(tiny.dir.string(), kIds, "prefill", interleaved),
                    all_logits(tiny.gguf.string(), kIds, "prefill")),
            1e-3);
}

TEST(HfLoad, ReportsWhatItLoaded) {
  const auto tiny = test::write_tiny_hf_llama({}, "tiny_hf_info");
  auto model = load_llm(tiny.dir.string(), {.backend = "ref"});
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelInfo& info = (*model)->info();
  EXPECT_EQ(info.architecture, "llama");
  EXPECT_EQ(info.n_layers, 2);
  EXPECT_EQ(info.n_ctx_train, 64);
  EXPECT_EQ(info.weight_type, "f32");
  EXPECT_EQ(info.file_type, "F32");  // no general.file_type: the dominant type
  EXPECT_EQ(info.file_bytes, std::filesystem::file_size(tiny.dir / "model.safetensors"));
  EXPECT_EQ(info.n_params, 2u * 8 * 16 + 16 + 2 * (2 * 16 + 16 * 16 * 2 + 8 * 16 * 2 + 3 * 24 * 16));
  EXPECT_TRUE((*model)->is_end_of_generation(2));
  auto ids = (*model)->tokenize("cab");
  ASSERT_TRUE(ids.ok()) << ids.error().message;
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 6, 5}));  // <s> "ca" "b"
}

void expect_load_error(const std::filesystem::path& path, std::initializer_list<std::string_view> parts,
                       ErrorCode code = ErrorCode::InvalidFile) {
  auto model = load_llm(path.string(), {.backend = "ref"});
  ASSERT_FALSE(model.ok()) << path;
  EXPECT_EQ(model.error().code, code) << model.error().message;
  for (auto p : parts)
    EXPECT_NE(model.error().message.find(p), std::string::npos)
        << "missing '" << p << "' in: " << model.error().message;
}

TEST(HfLoadErrors, FormatDetection) {
  const auto empty = test::make_temp_dir("hf_empty");
  expect_load_error(empty, {"holds no model: no config.json, no *.gguf"}, ErrorCode::InvalidArgument);
  const auto tiny = test::write_tiny_hf_llama({}, "hf_parts");
  expect_load_error(tiny.dir / "config.json", {"part of a Hugging Face checkpoint", "pass its directory"},
                    ErrorCode::InvalidArgument);
  expect_load_error(tiny.dir / "model.safetensors", {"pass its directory"}, ErrorCode::InvalidArgument);
  // A bare file name: its directory is the current one, named, not an empty "()".
  expect_load_error("model.safetensors", {"pass its directory (.)"}, ErrorCode::InvalidArgument);
}

TEST(HfLoadErrors, ConfigWithoutWeights) {
  const auto tiny = test::write_tiny_hf_llama({}, "hf_no_weights");
  std::filesystem::remove(tiny.dir / "model.safetensors");
  expect_load_error(tiny.dir, {"directory has config.json but no *.safetensors"});
}

TEST(HfLoadErrors, RemoteCodeIsRefused) {
  const auto tiny = test::write_tiny_hf_llama(
      {.extra_config = R"("auto_map": {"AutoModelForCausalLM": "modeling_custom.CustomForCausalLM"})"},
      "hf_remote_code");
  expect_load_error(tiny.dir, {"auto_map", "custom model code", "trust_remote_code"}, ErrorCode::Unsupported);
}

TEST(HfLoadErrors, UnknownModelType) {
  const auto tiny = test::write_tiny_hf_llama({}, "hf_model_type");
  test::write_text(tiny.dir / "config.json", R"({"model_type": "mamba", "hidden_size": 4})");
  expect_load_error(tiny.dir, {"model_type 'mamba' is not supported", "llama"}, ErrorCode::Unsupported);
}

TEST(HfLoadErrors, MissingTensorsAllNamed) {
  const auto tiny = test::write_tiny_hf_llama(
      {.drop_tensors = {"model.layers.1.mlp.up_proj.weight", "model.norm.weight"}}, "hf_missing");
  expect_load_error(tiny.dir, {"2 missing", "model.layers.1.mlp.up_proj.weight", "model.norm.weight"});
}

TEST(HfLoadErrors, UntiedWithoutLmHeadIsMissingNotTied) {
  const auto tiny = test::write_tiny_hf_llama({.drop_tensors = {"lm_head.weight"}}, "hf_no_head");
  expect_load_error(tiny.dir, {"1 missing: lm_head.weight"});
}

TEST(HfLoadErrors, NoTokenizerJson) {
  const auto tiny = test::write_tiny_hf_llama({}, "hf_no_tokenizer");
  std::filesystem::remove(tiny.dir / "tokenizer.json");
  expect_load_error(tiny.dir, {"no tokenizer.json"});
}

TEST(HfLoadErrors, GenerationConfigEosOutsideTheVocabulary) {
  const auto tiny = test::write_tiny_hf_llama({}, "hf_bad_eos");
  test::write_text(tiny.dir / "generation_config.json", R"({"eos_token_id": [2, 999]})");
  expect_load_error(tiny.dir, {"999"}, ErrorCode::InvalidArgument);
}

TEST(HfLoadErrors, CorruptSafetensorsNamesTheFile) {
  const auto tiny = test::write_tiny_hf_llama({}, "hf_corrupt");
  test::write_bytes(tiny.dir / "model.safetensors", {255, 0, 0, 0, 0, 0, 0, 0, '{', '}'});
  expect_load_error(tiny.dir, {"model.safetensors", "header length 255 runs past the end"});
}

// HF embeddings are often padded past the tokenizer (Qwen2.5: 151936 rows, 151665 tokens).
TEST(HfLoad, EmbeddingRowsBeyondTheTokenizerAreAllowed) {
  const auto tiny = test::write_tiny_hf_llama({.vocab_rows = 12}, "hf_padded_vocab");
  auto model = load_llm(tiny.dir.string(), {.backend = "ref"});
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ((*model)->info().vocab_size, 12);
  EXPECT_EQ((*model)->token_to_piece(11), "");
}

TEST(HfLoadErrors, ArchitectureErrorsNameTheConfig) {
  const auto tiny = test::write_tiny_hf_llama({}, "hf_bad_kv_heads");
  std::ifstream in(tiny.dir / "config.json");
  std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = R"("num_key_value_heads": 2)";
  ASSERT_NE(config.find(from), std::string::npos);
  config.replace(config.find(from), from.size(), R"("num_key_value_heads": 4)");
  test::write_text(tiny.dir / "config.json", config);
  expect_load_error(tiny.dir, {"blk.0.attn_k.weight", "expected [16, 16]", "config.json"});
}

// The generation_config eos list joins the end-of-generation set.
TEST(HfLoad, GenerationConfigEosIdsStopGeneration) {
  const auto tiny = test::write_tiny_hf_llama({}, "hf_eos_list");
  test::write_text(tiny.dir / "generation_config.json", R"({"eos_token_id": [2, 7]})");
  auto model = load_llm(tiny.dir.string(), {.backend = "ref"});
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_TRUE((*model)->is_end_of_generation(7));
  EXPECT_TRUE((*model)->is_end_of_generation(2));
  EXPECT_FALSE((*model)->is_end_of_generation(6));
}

}  // namespace
}  // namespace glass
