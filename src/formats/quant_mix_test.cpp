// choose_types against llama.cpp's rules, restated here as expected lists for a 30-layer model
// (SmolLM2-135M's layer and head counts: 9 heads, 3 kv heads, tied embeddings; dim 512 rather than
// 576 so that the K-types fit: see FallbacksForRowLengths and SmolLm2Dim576). The whole-file test
// (quantize_file_test.cpp) checks the same rules against llama-quantize's own fixture files.
#include "formats/quant_mix.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

namespace glass::formats {
namespace {

using graph::DType;

constexpr int kLayers = 30;

MixModel smollm() { return MixModel{"llama", kLayers, 9, 3, 0}; }

// The llama tensor list in file order (layers 0..29), with or without output.weight.
std::vector<MixTensor> llama_tensors(bool with_output, int64_t dim = 512, int64_t ffn = 1536) {
  std::vector<MixTensor> t{{"token_embd.weight", {49152, dim}, DType::F16},
                           {"output_norm.weight", {dim}, DType::F32}};
  if (with_output) t.push_back({"output.weight", {49152, dim}, DType::F16});
  for (int i = 0; i < kLayers; ++i) {
    auto name = [&](const char* w) { return fmt::format("blk.{}.{}.weight", i, w); };
    t.push_back({name("attn_norm"), {dim}, DType::F32});
    t.push_back({name("attn_q"), {dim, dim}, DType::F16});
    t.push_back({name("attn_k"), {192, dim}, DType::F16});
    t.push_back({name("attn_v"), {192, dim}, DType::F16});
    t.push_back({name("attn_output"), {dim, dim}, DType::F16});
    t.push_back({name("ffn_norm"), {dim}, DType::F32});
    t.push_back({name("ffn_gate"), {ffn, dim}, DType::F16});
    t.push_back({name("ffn_up"), {ffn, dim}, DType::F16});
    t.push_back({name("ffn_down"), {dim, ffn}, DType::F16});
  }
  return t;
}

// Type of each tensor by name.
std::map<std::string, DType> choose(const MixModel& m, const std::vector<MixTensor>& t, FileType ft,
                                    bool pure = false) {
  auto c = choose_types(m, t, ft, pure);
  EXPECT_TRUE(c.ok()) << c.error().message;
  std::map<std::string, DType> out;
  if (!c.ok()) return out;
  for (size_t i = 0; i < t.size(); ++i) out[t[i].name] = (*c)[i].dtype;
  return out;
}

std::string blk(int i, const char* w) { return fmt::format("blk.{}.{}.weight", i, w); }

// llama.cpp's use_more_bits(i, 30): the first and last eighth (i < 3, i >= 26) and every third
// layer between (i - 3) % 3 == 2, written out.
const std::set<int> kMoreBits = {0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 26, 27, 28, 29};

TEST(QuantMix, FileTypeNames) {
  EXPECT_EQ(file_type_from_name("Q4_K_M"), FileType::Q4_K_M);
  EXPECT_EQ(file_type_from_name("q4_k"), FileType::Q4_K_M);  // llama-quantize's alias
  EXPECT_EQ(file_type_from_name("q3_k"), FileType::Q3_K_M);
  EXPECT_EQ(file_type_from_name("q5_k"), FileType::Q5_K_M);
  EXPECT_EQ(file_type_from_name("bf16"), FileType::BF16);
  EXPECT_EQ(static_cast<uint32_t>(*file_type_from_name("q8_0")), 7u);
  EXPECT_EQ(static_cast<uint32_t>(*file_type_from_name("q4_k_s")), 14u);
  EXPECT_FALSE(file_type_from_name("iq2_xs"));
  EXPECT_FALSE(file_type_from_name(""));
}

TEST(QuantMix, Q4KM) {
  const auto c = choose(smollm(), llama_tensors(false), FileType::Q4_K_M);
  EXPECT_EQ(c.at("token_embd.weight"), DType::Q6_K);  // tied: it is the LM head
  EXPECT_EQ(c.at("output_norm.weight"), DType::F32);
  for (int i = 0; i < kLayers; ++i) {
    const DType more = kMoreBits.count(i) ? DType::Q6_K : DType::Q4_K;
    EXPECT_EQ(c.at(blk(i, "attn_v")), more) << i;
    EXPECT_EQ(c.at(blk(i, "ffn_down")), more) << i;
    for (const char* w : {"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"})
      EXPECT_EQ(c.at(blk(i, w)), DType::Q4_K);
    EXPECT_EQ(c.at(blk(i, "attn_norm")), DType::F32);
  }
}

TEST(QuantMix, LayersCountInNumericOrderWhateverTheFileOrder) {
  auto t = llama_tensors(false);
  std::reverse(t.begin(), t.end());
  const auto c = choose(smollm(), t, FileType::Q4_K_M);
  for (int i = 0; i < kLayers; ++i)
    EXPECT_EQ(c.at(blk(i, "attn_v")), kMoreBits.count(i) ? DType::Q6_K : DType::Q4_K) << i;
}

TEST(QuantMix, UntiedOutputTakesQ6KAndTokenEmbdTheBase) {
  const auto c = choose(smollm(), llama_tensors(true), FileType::Q4_K_M);
  EXPECT_EQ(c.at("output.weight"), DType::Q6_K);
  EXPECT_EQ(c.at("token_embd.weight"), DType::Q4_K);
  const auto q8 = choose(smollm(), llama_tensors(true), FileType::Q8_0);
  EXPECT_EQ(q8.at("output.weight"), DType::Q8_0);  // Q8_0 files keep Q8_0 there
  const auto q4 = choose(smollm(), llama_tensors(true), FileType::Q4_0);
  EXPECT_EQ(q4.at("output.weight"), DType::Q6_K);
  EXPECT_EQ(q4.at(blk(0, "ffn_down")), DType::Q4_0);
}

TEST(QuantMix, Q3KMQ4KSQ5KMQ2K) {
  const auto q3 = choose(smollm(), llama_tensors(false), FileType::Q3_K_M);
  const auto q4s = choose(smollm(), llama_tensors(false), FileType::Q4_K_S);
  const auto q5 = choose(smollm(), llama_tensors(false), FileType::Q5_K_M);
  const auto q2 = choose(smollm(), llama_tensors(false), FileType::Q2_K);
  for (int i = 0; i < kLayers; ++i) {
    EXPECT_EQ(q3.at(blk(i, "attn_v")), i < 2 ? DType::Q5_K : DType::Q4_K) << i;
    EXPECT_EQ(q3.at(blk(i, "ffn_down")), i < kLayers / 16 ? DType::Q5_K : DType::Q4_K) << i;
    EXPECT_EQ(q3.at(blk(i, "attn_output")), DType::Q4_K);
    EXPECT_EQ(q3.at(blk(i, "attn_q")), DType::Q3_K);
    EXPECT_EQ(q4s.at(blk(i, "attn_v")), i < 4 ? DType::Q5_K : DType::Q4_K) << i;
    EXPECT_EQ(q4s.at(blk(i, "ffn_down")), i < kLayers / 8 ? DType::Q5_K : DType::Q4_K) << i;
    EXPECT_EQ(q5.at(blk(i, "ffn_down")), kMoreBits.count(i) ? DType::Q6_K : DType::Q5_K) << i;
    EXPECT_EQ(q2.at(blk(i, "attn_v")), DType::Q3_K);  // GQA 3 (< 4)
    EXPECT_EQ(q2.at(blk(i, "ffn_down")), DType::Q3_K);
    EXPECT_EQ(q2.at(blk(i, "attn_output")), DType::Q3_K);
    EXPECT_EQ(q2.at(blk(i, "ffn_up")), DType::Q2_K);
  }
  MixModel gqa4 = smollm();
  gqa4.n_kv_heads = 2;  // 9 / 2 = 4
  EXPECT_EQ(choose(gqa4, llama_tensors(false), FileType::Q2_K).at(blk(7, "attn_v")), DType::Q4_K);
}

TEST(QuantMix, PureAndFloatTypes) {
  const auto pure = choose(smollm(), llama_tensors(true), FileType::Q4_K_M, true);
  EXPECT_EQ(pure.at("output.weight"), DType::Q4_K);
  EXPECT_EQ(pure.at(blk(0, "attn_v")), DType::Q4_K);
  EXPECT_EQ(pure.at("output_norm.weight"), DType::F32);
  const auto f16 = choose(smollm(), llama_tensors(true), FileType::F16);
  EXPECT_EQ(f16.at("output.weight"), DType::F16);
  EXPECT_EQ(f16.at("output_norm.weight"), DType::F32);
  const auto f32 = choose(smollm(), llama_tensors(true), FileType::AllF32);
  EXPECT_EQ(f32.at(blk(3, "ffn_up")), DType::F32);
}

TEST(QuantMix, KeptTensors) {
  const std::vector<MixTensor> t = {
      {"blk.0.attn_norm.weight", {64}, DType::F32},
      {"blk.0.ffn_gate_inp.weight", {8, 64}, DType::F32},  // MoE router
      {"blk.0.attn_q.bias", {64, 64}, DType::F32},         // not a weight
      {"blk.0.ffn_up.weight", {1, 256}, DType::F32},       // 1-D for ggml: outer dimension 1
      {"position_embd.weight", {64, 256}, DType::F32},
  };
  auto c = choose_types(smollm(), t, FileType::Q4_K_M, false);
  ASSERT_TRUE(c.ok()) << c.error().message;
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_FALSE((*c)[i].quantizable) << t[i].name;
    EXPECT_EQ((*c)[i].dtype, DType::F32) << t[i].name;
  }
}

TEST(QuantMix, FallbacksForRowLengths) {
  const std::vector<MixTensor> t = {
      {"blk.0.attn_q.weight", {64, 96}, DType::F32},   // 96 % 256: q4_k -> q5_0
      {"blk.0.attn_k.weight", {64, 80}, DType::F32},   // 80 % 32 too: -> f16
      {"blk.0.ffn_up.weight", {64, 512}, DType::F32},  // fine
      {"output.weight", {64, 96}, DType::F32},         // the LM head: q8_0 when the base type's block fails
  };
  auto c = choose_types(smollm(), t, FileType::Q4_K_M, false);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ((*c)[0].dtype, DType::Q5_0);
  EXPECT_EQ((*c)[0].fallback, "rows of 96 not divisible by 256 (q4_k): falling back to q5_0");
  EXPECT_EQ((*c)[1].dtype, DType::F16);
  EXPECT_EQ((*c)[2].dtype, DType::Q4_K);
  EXPECT_TRUE((*c)[2].fallback.empty());
  EXPECT_EQ((*c)[3].dtype, DType::Q8_0);
  // Q6_K falls back to Q8_0 and Q5_K to Q5_1; legacy types have no fallback (llama.cpp refuses).
  auto q6 = choose_types(smollm(), {t[0]}, FileType::Q6_K, false);
  ASSERT_TRUE(q6.ok());
  EXPECT_EQ((*q6)[0].dtype, DType::Q8_0);
  auto q5 = choose_types(smollm(), {t[0]}, FileType::Q5_K_S, false);
  ASSERT_TRUE(q5.ok());
  EXPECT_EQ((*q5)[0].dtype, DType::Q5_1);
  auto q4 = choose_types(smollm(), {{"blk.0.attn_q.weight", {64, 48}, DType::F32}}, FileType::Q4_0, false);
  ASSERT_FALSE(q4.ok());
  EXPECT_EQ(q4.error().code, ErrorCode::Unsupported);
  EXPECT_NE(q4.error().message.find("blk.0.attn_q.weight"), std::string::npos) << q4.error().message;
}

// SmolLM2-135M's real width, 576, is no multiple of 256: llama.cpp's Q4_K_M of it is mostly Q5_0,
// with Q8_0 where the mix asks for Q6_K.
TEST(QuantMix, SmolLm2Dim576) {
  const auto c = choose(smollm(), llama_tensors(false, 576), FileType::Q4_K_M);
  EXPECT_EQ(c.at("token_embd.weight"), DType::Q8_0);
  EXPECT_EQ(c.at(blk(0, "attn_q")), DType::Q5_0);
  EXPECT_EQ(c.at(blk(0, "attn_v")), DType::Q8_0);
  EXPECT_EQ(c.at(blk(3, "attn_v")), DType::Q5_0);
  EXPECT_EQ(c.at(blk(0, "ffn_down")), DType::Q6_K);  // its rows are 1536 wide
}

TEST(QuantMix, EightExperts) {
  const MixModel moe{"llama", 2, 8, 8, 8};
  const std::vector<MixTensor> t = {{"blk.1.attn_v.weight", {64, 256}, DType::F32},
                                    {"blk.1.ffn_down_exps.weight", {8, 256, 512}, DType::F32},
                                    {"blk.1.attn_output.weight", {256, 256}, DType::F32}};
  auto c = choose_types(moe, t, FileType::Q4_K_M, false);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ((*c)[0].dtype, DType::Q8_0);
  EXPECT_EQ((*c)[1].dtype, DType::Q6_K);  // layer 1 of 2 is in the last eighth
  EXPECT_EQ((*c)[2].dtype, DType::Q5_K);
  auto bad =
      choose_types(moe, {{"experts.ffn_down.weight", {256, 512}, DType::F32}}, FileType::Q4_K_M, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::InvalidFile);
}

}  // namespace
}  // namespace glass::formats
