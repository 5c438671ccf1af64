// models::hf_to_gguf on the stories260K HF directories (single file, sharded, tied): the written
// GGUF is the fixture's stories260K.gguf tensor for tensor (bit for bit, which checks the q/k
// permutation), gives llama.cpp's reference logits and the HF directory's own, tokenizes as the HF
// tokenizer does, and its quantized forms load and generate.
#include "models/hf_to_gguf.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "formats/gguf.h"
#include "formats/npy.h"
#include "glass/llm.h"
#include "runtime/verify.h"
#include "support/fixtures.h"
#include "support/safetensors_writer.h"
#include "support/tiny_hf_llama.h"

namespace glass {
namespace {

using Ids = std::vector<int32_t>;
using Json = nlohmann::json;

// This process's own folder: ctest runs tests in parallel processes, which must not share files.
std::filesystem::path scratch() {
  static const std::filesystem::path dir = test::make_temp_dir("hf2gguf");
  return dir;
}

Json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return Json::parse(in, nullptr, false);
}

std::vector<float> logits(const std::string& path, const Ids& ids) {
  LoadOptions lo{.backend = "ref"};
  lo.min_ctx = static_cast<int64_t>(ids.size());
  auto model = load_llm(path, lo);
  EXPECT_TRUE(model.ok()) << path << ": " << (model.ok() ? "" : model.error().message);
  if (!model.ok()) return {};
  auto mode = verify::parse_mode("prefill", static_cast<int64_t>(ids.size()));
  auto out = verify::eval_logits(**model, ids, *mode);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
  return out.ok() ? *out : std::vector<float>{};
}

class HfToGguf : public test::WithSharedFixtures {
 protected:
  std::filesystem::path convert(const std::string& dir, const std::string& type) {
    const auto out = scratch() / ("hf2gguf-" + dir + "-" + type + ".gguf");
    formats::QuantizeOptions o;
    o.ftype = *formats::file_type_from_name(type);
    auto r = models::hf_to_gguf(fixtures_ / "models" / dir, out, o);
    EXPECT_TRUE(r.ok()) << dir << ": " << (r.ok() ? "" : r.error().message);
    return out;
  }
  Ids reference_ids() const {
    const Json doc = read_json(fixtures_ / "reference" / "stories260K" / "logits.json");
    return doc["token_ids"].get<Ids>();
  }
};

constexpr const char* kDirs[] = {"stories260K-hf", "stories260K-hf-sharded", "stories260K-hf-tied"};

TEST_F(HfToGguf, F32LogitsMatchLlamaCppAndTheHfDirectory) {
  const Ids ids = reference_ids();
  ASSERT_EQ(ids.size(), 64u);
  auto ref = formats::read_npy_f32(fixtures_ / "reference" / "stories260K" / "logits.npy");
  ASSERT_TRUE(ref.ok()) << ref.error().message;
  for (const char* dir : kDirs) {
    const auto out = convert(dir, "f32");
    const auto got = logits(out.string(), ids);
    ASSERT_EQ(got.size(), ref->data.size()) << dir;
    const verify::Metrics vs_ref = verify::compare(got, ref->data, 512);
    EXPECT_LE(vs_ref.max_abs, 1e-4) << dir;
    const verify::Metrics vs_hf =
        verify::compare(got, logits((fixtures_ / "models" / dir).string(), ids), 512);
    EXPECT_LE(vs_hf.max_abs, 1e-5) << dir;
    RecordProperty(std::string(dir) + "_max_abs_vs_llama_cpp", std::to_string(vs_ref.max_abs));
  }
}

TEST_F(HfToGguf, TensorsAreStories260KGgufBitForBit) {
  auto want = formats::GgufFile::open(fixtures_ / "models" / "stories260K.gguf");
  ASSERT_TRUE(want.ok()) << want.error().message;
  for (const char* dir : kDirs) {
    const bool tied = std::string(dir).ends_with("tied");
    auto got = formats::GgufFile::open(convert(dir, "f32"));
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->tensors().size(), want->tensors().size() - (tied ? 1 : 0)) << dir;
    for (const formats::GgufTensorInfo& w : want->tensors()) {
      const formats::GgufTensorInfo* g = got->find_tensor(w.name);
      if (tied && w.name == "output.weight") {
        EXPECT_EQ(g, nullptr);
        continue;
      }
      ASSERT_NE(g, nullptr) << dir << ": " << w.name;
      EXPECT_EQ(g->shape, w.shape) << w.name;
      EXPECT_EQ(g->dtype, w.dtype) << w.name;
      ASSERT_EQ(g->nbytes, w.nbytes) << w.name;
      EXPECT_EQ(std::memcmp(g->data, w.data, w.nbytes), 0) << dir << ": " << w.name << " differs";
    }
    EXPECT_EQ(got->get_u32("general.file_type").value(), 0u);
    for (const char* key :
         {"llama.embedding_length", "llama.feed_forward_length", "llama.block_count",
          "llama.attention.head_count", "llama.attention.head_count_kv", "llama.rope.dimension_count"})
      EXPECT_EQ(got->get_u32(key).value(), want->get_u32(key).value()) << key;
  }
}

TEST_F(HfToGguf, TokenizesAsTheHfTokenizer) {
  const Json cases = read_json(fixtures_ / "reference" / "stories260K" / "tokenizer_cases.json")["cases"];
  ASSERT_EQ(cases.size(), 20u);
  auto gguf = load_llm(convert("stories260K-hf", "f32").string(), {.backend = "ref"});
  ASSERT_TRUE(gguf.ok()) << gguf.error().message;
  auto hf = load_llm((fixtures_ / "models" / "stories260K-hf").string(), {.backend = "ref"});
  ASSERT_TRUE(hf.ok()) << hf.error().message;
  for (const Json& c : cases) {
    const std::string text = c["text"];
    for (bool special : {false, true}) {
      auto g = (*gguf)->tokenize(text, special);
      ASSERT_TRUE(g.ok()) << g.error().message;
      EXPECT_EQ(*g, (*hf)->tokenize(text, special).value()) << text;
      EXPECT_EQ(*g, c[special ? "ids_with_bos" : "ids"].get<Ids>()) << text;
    }
  }
}

// stories260K's FFN rows (172) fit no legacy quant block (llama-quantize refuses them too), so the
// quantized conversions use a random-weight llama of block-friendly shape, stored in BF16 like most
// HF checkpoints, with stories260K's tokenizer: dim 64, 4 heads of 16 (2 kv), FFN 128, 2 layers,
// 512 tokens. Norms are BF16 too with `bf16_norms` (glass loads those from GGUF only, as F32),
// else the same values as F32.
std::filesystem::path write_bf16_llama(const std::filesystem::path& tokenizer_dir, bool bf16_norms) {
  constexpr int kDim = 64, kHeads = 4, kKv = 2, kHd = 16, kFfn = 128, kLayers = 2, kVocab = 512;
  const auto dir = test::make_temp_dir(bf16_norms ? "hf2gguf_bf16_norms" : "hf2gguf_bf16_llama");
  test::write_text(dir / "config.json", fmt::format(R"({{"model_type": "llama", "hidden_size": {},
    "intermediate_size": {}, "num_hidden_layers": {}, "num_attention_heads": {}, "num_key_value_heads": {},
    "head_dim": {}, "vocab_size": {}, "max_position_embeddings": 256, "rms_norm_eps": 1e-05,
    "tie_word_embeddings": false, "bos_token_id": 1, "eos_token_id": 2}})",
                                                    kDim, kFfn, kLayers, kHeads, kKv, kHd, kVocab));
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    std::filesystem::copy_file(tokenizer_dir / f, dir / f);
  test::SafetensorsWriter st;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.15f);
  auto tensor = [&](const std::string& name, std::vector<int64_t> shape, bool norm = false) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const bool f32 = norm && !bf16_norms;
    std::vector<uint8_t> data(static_cast<size_t>(n) * (f32 ? 4 : 2));
    for (int64_t i = 0; i < n; ++i) {
      const float x = norm ? 1.0f + normal(rng) : normal(rng);
      uint32_t bits = 0;
      std::memcpy(&bits, &x, 4);
      bits &= 0xFFFF0000u;  // truncated to BF16 (any BF16 value will do)
      if (f32)
        std::memcpy(data.data() + 4 * i, &bits, 4);
      else
        std::memcpy(data.data() + 2 * i, reinterpret_cast<const uint8_t*>(&bits) + 2, 2);
    }
    st.tensor({name, f32 ? "F32" : "BF16", std::move(shape), std::move(data), std::nullopt});
  };
  tensor("model.embed_tokens.weight", {kVocab, kDim});
  tensor("model.norm.weight", {kDim}, true);
  tensor("lm_head.weight", {kVocab, kDim});
  for (int i = 0; i < kLayers; ++i) {
    auto hf = [&](const char* s) { return fmt::format("model.layers.{}.{}.weight", i, s); };
    tensor(hf("input_layernorm"), {kDim}, true);
    tensor(hf("self_attn.q_proj"), {kHeads * kHd, kDim});
    tensor(hf("self_attn.k_proj"), {kKv * kHd, kDim});
    tensor(hf("self_attn.v_proj"), {kKv * kHd, kDim});
    tensor(hf("self_attn.o_proj"), {kDim, kHeads * kHd});
    tensor(hf("post_attention_layernorm"), {kDim}, true);
    tensor(hf("mlp.gate_proj"), {kFfn, kDim});
    tensor(hf("mlp.up_proj"), {kFfn, kDim});
    tensor(hf("mlp.down_proj"), {kDim, kFfn});
  }
  test::write_bytes(dir / "model.safetensors", st.build());
  return dir;
}

TEST_F(HfToGguf, QuantizedConversionsLoadAndGenerate) {
  const auto dir = write_bf16_llama(fixtures_ / "models" / "stories260K-hf", false);
  const auto dir_bf16_norms = write_bf16_llama(fixtures_ / "models" / "stories260K-hf", true);
  const Ids ids = reference_ids();
  auto convert_dir = [&](const char* type, bool bf16_norms = false) {
    const auto out = scratch() / (std::string("hf2gguf-bf16-") + type + (bf16_norms ? "-n" : "") + ".gguf");
    formats::QuantizeOptions o;
    o.ftype = *formats::file_type_from_name(type);
    auto r = models::hf_to_gguf(bf16_norms ? dir_bf16_norms : dir, out, o);
    EXPECT_TRUE(r.ok()) << type << ": " << (r.ok() ? "" : r.error().message);
    return out;
  };
  // BF16 kept as BF16 (norms widened to F32, as convert_hf_to_gguf.py stores 1-D tensors): the
  // same function as the HF directory.
  const auto bf16 = convert_dir("bf16");
  auto bf16_file = formats::GgufFile::open(bf16);
  ASSERT_TRUE(bf16_file.ok()) << bf16_file.error().message;
  EXPECT_EQ(bf16_file->find_tensor("blk.1.attn_k.weight")->dtype, graph::DType::BF16);
  EXPECT_EQ(bf16_file->find_tensor("blk.1.ffn_norm.weight")->dtype, graph::DType::F32);
  const auto base = logits(bf16.string(), ids);
  EXPECT_LE(verify::compare(base, logits(dir.string(), ids), 512).max_abs, 1e-4);

  const Json greedy = read_json(fixtures_ / "reference" / "stories260K" / "greedy.json")["cases"][0];
  for (const char* type : {"q8_0", "q4_0"}) {
    const auto out = convert_dir(type);
    auto f = formats::GgufFile::open(out);
    ASSERT_TRUE(f.ok()) << f.error().message;
    const auto expected = std::string(type) == "q8_0" ? graph::DType::Q8_0 : graph::DType::Q4_0;
    EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight")->dtype, expected) << type;
    EXPECT_EQ(f->find_tensor("blk.0.ffn_down.weight")->dtype, expected) << type;
    EXPECT_EQ(f->find_tensor("blk.0.attn_norm.weight")->dtype, graph::DType::F32) << type;

    // The same bytes as quantizing the BF16 GGUF (glass quantize's GGUF path, which writes what
    // llama-quantize writes), and as converting the checkpoint whose norms are BF16.
    const auto via_gguf = scratch() / (std::string("hf2gguf-via-") + type);
    formats::QuantizeOptions o;
    o.ftype = *formats::file_type_from_name(type);
    ASSERT_TRUE(formats::quantize_gguf(bf16, via_gguf, o).ok());
    for (const auto& other : {via_gguf, convert_dir(type, true)}) {
      auto g = formats::GgufFile::open(other);
      ASSERT_TRUE(g.ok()) << g.error().message;
      ASSERT_EQ(g->tensors().size(), f->tensors().size());
      for (size_t i = 0; i < f->tensors().size(); ++i) {
        const formats::GgufTensorInfo &a = f->tensors()[i], &b = g->tensors()[i];
        EXPECT_EQ(a.name, b.name);
        EXPECT_EQ(a.dtype, b.dtype) << a.name;
        ASSERT_EQ(a.nbytes, b.nbytes) << a.name;
        EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes), 0) << type << ": " << a.name << " vs " << other;
      }
    }

    // Random weights give nearly flat logits, so this is a loose bound (measured: q8_0 0.998,
    // q4_0 0.76); the byte comparison above is the exact check.
    const verify::Metrics m = verify::compare(logits(out.string(), ids), base, 512);
    EXPECT_GE(m.min_pearson, std::string(type) == "q8_0" ? 0.99 : 0.6) << type;
    RecordProperty(std::string(type) + "_min_pearson", std::to_string(m.min_pearson));

    auto model = load_llm(out.string(), {.backend = "ref"});
    ASSERT_TRUE(model.ok()) << model.error().message;
    auto session = (*model)->new_session();
    ASSERT_TRUE(session.ok());
    GenerateConfig cfg;
    cfg.max_tokens = 16;
    cfg.sampling.temperature = 0;
    cfg.stop_at_end_of_generation = false;
    auto r = generate(**session, greedy["prompt"].get<std::string>(), cfg);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->tokens.size(), 16u) << type;
  }
}

// The sizes llama-quantize refuses are refused here too, naming the tensor.
TEST_F(HfToGguf, Stories260KHasNoQ8_0) {
  const auto out = scratch() / "hf2gguf-refused.gguf";
  formats::QuantizeOptions o;
  o.ftype = formats::FileType::Q8_0;
  auto r = models::hf_to_gguf(fixtures_ / "models" / "stories260K-hf", out, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("blk.0.ffn_down.weight"), std::string::npos) << r.error().message;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(HfToGgufRows, RotateHalfToInterleaved) {
  // One head of 6 rows, 4 rotated: HF pairs (0,2) (1,3); GGUF (0,1) (2,3); rows 4, 5 stay.
  EXPECT_EQ(models::rope_rows_hf_to_gguf(1, 6, 4), (std::vector<int64_t>{0, 2, 1, 3, 4, 5}));
  EXPECT_EQ(models::rope_rows_hf_to_gguf(2, 4, 4), (std::vector<int64_t>{0, 2, 1, 3, 4, 6, 5, 7}));
}

void expect_error(const std::filesystem::path& dir, std::initializer_list<std::string_view> parts) {
  const auto out = scratch() / "hf2gguf-error.gguf";
  auto r = models::hf_to_gguf(dir, out, {});
  ASSERT_FALSE(r.ok()) << dir;
  for (auto p : parts)
    EXPECT_NE(r.error().message.find(p), std::string::npos)
        << "missing '" << p << "' in: " << r.error().message;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(HfToGgufErrors, NameWhatIsAtFault) {
  const auto remote = test::write_tiny_hf_llama(
      {.extra_config = R"("auto_map": {"AutoModelForCausalLM": "modeling_custom.CustomForCausalLM"})"},
      "hf2gguf_remote_code");
  expect_error(remote.dir, {"auto_map"});
  const auto mamba = test::write_tiny_hf_llama({}, "hf2gguf_model_type");
  test::write_text(mamba.dir / "config.json", R"({"model_type": "mamba", "hidden_size": 4})");
  expect_error(mamba.dir, {"model_type 'mamba' is not supported"});
  const auto no_tok = test::write_tiny_hf_llama({}, "hf2gguf_no_tokenizer");
  std::filesystem::remove(no_tok.dir / "tokenizer.json");
  expect_error(no_tok.dir, {"tokenizer.json is missing"});
  // The tiny tokenizer is a BPE with neither byte fallback nor a byte-level pre-tokenizer.
  const auto odd = test::write_tiny_hf_llama({}, "hf2gguf_odd_tokenizer");
  expect_error(odd.dir, {"tokenizer.json: pre_tokenizer", "not a byte-level pre-tokenizer"});
}

}  // namespace
}  // namespace glass
