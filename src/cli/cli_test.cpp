// The glass command end to end, run as a user runs it: `glass synth` writes a model, `glass
// quantize` converts it, `glass bench` measures it with llama-bench's output format, `glass run
// --json --n-probs` reports token probabilities. The files are
// read back with the GGUF reader, and bench's JSON is checked against llama-bench's field names and
// against its own samples (mean, sample standard deviation, tokens per second).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/cli_test_support.h"
#include "formats/gguf.h"
#include "support/fixtures.h"

namespace glass {
namespace {

TEST_F(Cli, SynthWritesTheNamedShapeDeterministically) {
  ASSERT_EQ(glass("synth --shape tiny --type f16 -o a.gguf --seed 3").status, 0);
  ASSERT_EQ(glass("synth --shape tiny --type f16 -o b.gguf --seed 3").status, 0);
  ASSERT_EQ(glass("synth --shape tiny --type f16 -o c.gguf --seed 4").status, 0);
  EXPECT_EQ(read_all(path("a.gguf")), read_all(path("b.gguf")));
  EXPECT_NE(read_all(path("a.gguf")), read_all(path("c.gguf")));

  auto f = formats::GgufFile::open(path("a.gguf"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(*f->get_string("general.architecture"), "llama");
  EXPECT_EQ(*f->get_u32("llama.embedding_length"), 64u);
  EXPECT_EQ(*f->get_u32("llama.block_count"), 2u);
  EXPECT_EQ(*f->get_u32("llama.attention.head_count"), 4u);
  EXPECT_EQ(*f->get_u32("llama.attention.head_count_kv"), 2u);
  EXPECT_EQ(*f->get_u32("llama.feed_forward_length"), 128u);
  const auto* q = f->find_tensor("blk.1.attn_q.weight");
  const auto* k = f->find_tensor("blk.1.attn_k.weight");
  const auto* up = f->find_tensor("blk.0.ffn_up.weight");
  const auto* emb = f->find_tensor("token_embd.weight");
  ASSERT_TRUE(q != nullptr && k != nullptr && up != nullptr && emb != nullptr);
  EXPECT_EQ(q->shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(k->shape, (std::vector<int64_t>{32, 64}));  // 2 kv heads of 16
  EXPECT_EQ(up->shape, (std::vector<int64_t>{128, 64}));
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(q->dtype, graph::DType::F16);
}

// --format hf writes the same model as an HF directory: it tokenizes as the GGUF does (a
// SentencePiece-style tokenizer.json), generates the same text, and `glass quantize` converts it.
TEST_F(Cli, SynthHfIsTheGgufModelAndQuantizes) {
  ASSERT_EQ(glass("synth --shape tiny --type f32 -o t.gguf --seed 5").status, 0);
  ASSERT_EQ(glass("synth --shape tiny --type f32 -o t-hf --format hf --seed 5").status, 0);
  const char* text = "'hello w300 world'";
  Ran a = glass(std::string("tokenize -m t.gguf ") + text);
  Ran b = glass(std::string("tokenize -m t-hf ") + text);
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.out.rfind("1 ", 0), 0u) << a.out;  // BOS, then the text
  Ran ga = glass("run -m t.gguf -p 'w300 w301' -n 6 --temp 0");
  Ran gb = glass("run -m t-hf -p 'w300 w301' -n 6 --temp 0");
  ASSERT_EQ(ga.status, 0) << ga.err;
  EXPECT_EQ(ga.out, gb.out);
  Ran q = glass("quantize t-hf t-q8.gguf q8_0");
  ASSERT_EQ(q.status, 0) << q.err;
  Ran c = glass(std::string("tokenize -m t-q8.gguf ") + text);
  EXPECT_EQ(c.out, a.out);
}

// The gemma3n shapes write llama.cpp's tensor table and keys: at the fixture's size, the test shape
// gives the names, shapes and hyper-parameters of the synthetic-arch gemma3n GGUF (written by another
// tool), and runs. The real shapes have the published parameter counts.
TEST_F(Cli, SynthGemma3nMatchesAnIndependentFileOfItsShape) {
  const fs::path fx = test::shared_fixtures();
  if (fx.empty()) {
    if (test::fixtures_required()) GTEST_FAIL() << "shared fixtures required but not found";
    GTEST_SKIP() << "shared fixtures not found: set GLASS_FIXTURES or place them at ../shared/fixtures";
  }
  ASSERT_EQ(glass("synth --shape gemma3n-tiny --type f32 -o g.gguf").status, 0);
  auto ours = formats::GgufFile::open(path("g.gguf"));
  auto theirs = formats::GgufFile::open((fx / "models" / "synthetic-arch" / "gemma3n-f32.gguf").string());
  ASSERT_TRUE(ours.ok()) << ours.error().message;
  ASSERT_TRUE(theirs.ok()) << theirs.error().message;
  ASSERT_EQ(ours->tensors().size(), theirs->tensors().size());
  for (const auto& t : theirs->tensors()) {
    const auto* o = ours->find_tensor(t.name);
    ASSERT_NE(o, nullptr) << t.name;
    EXPECT_EQ(o->shape, t.shape) << t.name;
    EXPECT_EQ(o->dtype, t.dtype) << t.name;
  }
  int keys = 0;
  for (const auto& [key, value] : theirs->metadata()) {
    if (key.rfind("gemma3n.", 0) != 0) continue;
    ++keys;
    const auto* o = ours->find(key);
    ASSERT_NE(o, nullptr) << key;
    EXPECT_EQ(formats::gguf_value_to_string(*o, 64), formats::gguf_value_to_string(value, 64)) << key;
  }
  EXPECT_EQ(keys, 19);
  Ran run = glass("run -m g.gguf -p 'w300 w301' -n 4 --temp 0");
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("generated 4 tokens"), std::string::npos) << run.err;

  // google/gemma-3n-E4B / E2B's text models as llama.cpp counts them (6.87 B, 4.46 B): the embedding
  // (262144 x 2048), per-layer embeddings (262144 x layers x 256) and their projection, AltUp's two
  // 3 x 2048 x 2048 projections, and per layer attention (8 heads, 2 KV heads of 256), the FFN, the
  // per-layer gate and projection, LAuReL (rank 64), AltUp's router and coefficients, the norms.
  auto count = [](int64_t layers, int64_t ffn) {
    const int64_t dim = 2048, vocab = 262144, ple = 256, attn = 2 * dim * 2048 + 2 * dim * 512;
    const int64_t norms = 8 * dim + 2 * 256;  // 8 of the model width (AltUp's correct scale one), q and k
    const int64_t per_layer =
        attn + 3 * dim * ffn + 2 * dim * ple + 2 * dim * 64 + 4 * 4 + 16 * 4 + 4 * dim + norms;
    return vocab * dim + vocab * layers * ple + dim * layers * ple + ple + 2 * 3 * dim * dim + dim +
           layers * per_layer;
  };
  Ran e4b = glass("synth --shape gemma3n-e4b --dry-run");
  Ran e2b = glass("synth --shape gemma3n-e2b --dry-run");
  EXPECT_EQ(e4b.status, 0);
  EXPECT_NE(e4b.out.find(fmt::format("847 tensors, {} parameters", count(35, 16384))), std::string::npos)
      << e4b.out;
  EXPECT_NE(e2b.out.find(fmt::format("727 tensors, {} parameters", count(30, 8192))), std::string::npos)
      << e2b.out;
  EXPECT_FALSE(fs::exists(path("e4b.gguf")));
}

// The gemma4 shapes write llama.cpp's tensor table and keys: every key and every kind of tensor of
// the repository's gemma4 fixture (written by llama.cpp's gguf-py, tests/fixtures/tools) is in the
// test shape's file, which runs. (llama.cpp 3f545bec loads that file and its logits agree with
// glass's to 2.4e-3, its GELU table's spread.)
TEST_F(Cli, SynthGemma4HasTheKeysAndTensorsOfLlamaCppsWriter) {
  ASSERT_EQ(glass("synth --shape gemma4-tiny --type f32 -o g.gguf").status, 0);
  auto ours = formats::GgufFile::open(path("g.gguf"));
  auto theirs = formats::GgufFile::open(
      (test::source_dir() / "tests/fixtures/models/synthetic-2026/gemma4-f32.gguf").string());
  ASSERT_TRUE(ours.ok()) << ours.error().message;
  ASSERT_TRUE(theirs.ok()) << theirs.error().message;
  int keys = 0;
  for (const auto& [key, value] : theirs->metadata()) {
    if (key.rfind("gemma4.", 0) != 0) continue;
    ++keys;
    const auto* o = ours->find(key);
    ASSERT_NE(o, nullptr) << key;
    EXPECT_EQ(o->type, value.type) << key;
  }
  EXPECT_EQ(keys, 21);
  auto kind = [](const std::string& name) {  // blk.N.x.weight -> x.weight
    return name.rfind("blk.", 0) == 0 ? name.substr(name.find('.', 4) + 1) : name;
  };
  for (const auto& t : theirs->tensors()) {
    bool found = false;
    for (const auto& o : ours->tensors()) found = found || kind(o.name) == kind(t.name);
    EXPECT_TRUE(found) << t.name;
  }
  Ran run = glass("run -m g.gguf -p 'w300 w301' -n 4 --temp 0");
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("generated 4 tokens"), std::string::npos) << run.err;
}

// The gpt-oss shapes: llama.cpp's tensor table and keys with MXFP4 experts, as its converter writes
// them; the test shape runs (llama.cpp 3f545bec loads it and its logits agree with glass's to 1.2e-7),
// and the real shape has gpt-oss-20b's 20.9 B parameters.
TEST_F(Cli, SynthGptOssWritesMxfp4Experts) {
  ASSERT_EQ(glass("synth --shape gpt-oss-tiny --type f32 -o g.gguf").status, 0);
  auto f = formats::GgufFile::open(path("g.gguf"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  const auto* gate = f->find_tensor("blk.3.ffn_gate_exps.weight");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->dtype, graph::DType::MXFP4);
  EXPECT_EQ(gate->shape, (std::vector<int64_t>{8, 32, 64}));
  ASSERT_NE(f->find_tensor("blk.0.attn_sinks.weight"), nullptr);
  EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight")->dtype, graph::DType::F32);
  Ran run = glass("run -m g.gguf -p 'w300 w301' -n 4 --temp 0");
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("generated 4 tokens"), std::string::npos) << run.err;
  Ran big = glass("synth --shape gpt-oss-20b --dry-run");
  EXPECT_NE(big.out.find("459 tensors, 20914757184 parameters"), std::string::npos) << big.out;
}

// --vocab: the file carries a real vocabulary (a llama.cpp vocab GGUF's keys as they are, or an HF
// tokenizer converted), the embedding has its rows, and the model tokenizes as the vocabulary does.
TEST_F(Cli, SynthWithARealVocabularyTokenizesAsIt) {
  const fs::path fx = test::shared_fixtures();
  if (fx.empty()) {
    if (test::fixtures_required()) GTEST_FAIL() << "shared fixtures required but not found";
    GTEST_SKIP() << "shared fixtures not found: set GLASS_FIXTURES or place them at ../shared/fixtures";
  }
  const fs::path gpt2 = fx / "tokenizers" / "gguf" / "ggml-vocab-gpt-2.gguf";
  const fs::path llama3 = fx / "tokenizers" / "hf" / "llama3";
  Ran g = glass("synth --shape tiny --type f32 -o g.gguf --vocab '" + gpt2.string() + "'");
  ASSERT_EQ(g.status, 0) << g.err;
  EXPECT_NE(g.err.find("50257 tokens"), std::string::npos) << g.err;
  Ran l = glass("synth --shape tiny --type f32 -o l.gguf --vocab '" + llama3.string() + "'");
  ASSERT_EQ(l.status, 0) << l.err;

  auto written = formats::GgufFile::open(path("g.gguf"));
  auto vocab = formats::GgufFile::open(gpt2);
  ASSERT_TRUE(written.ok() && vocab.ok());
  EXPECT_EQ(*written->get_u32("llama.vocab_size"), 50257u);
  EXPECT_EQ(written->find_tensor("token_embd.weight")->shape, (std::vector<int64_t>{50257, 64}));
  for (const auto& [key, value] : vocab->metadata()) {
    if (!key.starts_with("tokenizer.")) continue;
    ASSERT_NE(written->find(key), nullptr) << key;
    EXPECT_EQ(formats::gguf_value_to_string(*written->find(key), 1u << 20),
              formats::gguf_value_to_string(value, 1u << 20))
        << key;
  }
  auto l3 = formats::GgufFile::open(path("l.gguf"));
  ASSERT_TRUE(l3.ok());
  EXPECT_EQ(*l3->get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(l3->find_tensor("token_embd.weight")->shape[0], 128256);

  const std::string text = "\"Hello world, it's a test: \u00fcn\u00efcode 123   spaces\"";
  for (const auto& [model, source] :
       {std::pair{std::string("g.gguf"), gpt2}, std::pair{std::string("l.gguf"), llama3}}) {
    Ran ours = glass("tokenize -m " + model + " " + text);
    Ran theirs = glass("tokenize -m '" + source.string() + "' " + text);
    ASSERT_EQ(ours.status, 0) << ours.err;
    ASSERT_EQ(theirs.status, 0) << theirs.err;
    EXPECT_EQ(ours.out, theirs.out) << model;
    EXPECT_GT(ours.out.size(), 10u);
  }
  EXPECT_EQ(glass("run -m l.gguf -p hello -n 3 --temp 0").status, 0);

  Ran hf = glass("synth --shape tiny -o d --format hf --vocab '" + gpt2.string() + "'");
  EXPECT_EQ(hf.status, 2);
  EXPECT_NE(hf.err.find("--vocab writes GGUF only"), std::string::npos) << hf.err;
  Ran missing = glass("synth --shape tiny -o m.gguf --vocab no-such.gguf");
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.err.find("no-such.gguf"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(path("m.gguf")));
}

TEST_F(Cli, QuantizePureGivesEveryMatrixTheType) {
  const fs::path q8 = tiny_model("q8_0");
  auto f = formats::GgufFile::open(q8);
  ASSERT_TRUE(f.ok()) << f.error().message;
  size_t matrices = 0;
  for (const auto& t : f->tensors()) {
    if (t.shape.size() == 2) {
      EXPECT_EQ(t.dtype, graph::DType::Q8_0) << t.name;
      ++matrices;
    } else {
      EXPECT_EQ(t.dtype, graph::DType::F32) << t.name;  // norms stay f32
    }
  }
  EXPECT_EQ(matrices, 2u * 7u + 1u);  // 7 per layer and the (tied) embedding
}

// A quantized input gets another type only when asked (llama-quantize's --allow-requantize).
TEST_F(Cli, QuantizeRequantizesOnlyWhenAllowed) {
  tiny_model("q8_0");
  const Ran refused = glass("quantize tiny-q8_0.gguf tiny-re.gguf q4_0");
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("needs --allow-requantize"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(path("tiny-re.gguf")));
  const Ran allowed = glass("quantize --allow-requantize --pure tiny-q8_0.gguf tiny-re.gguf q4_0");
  ASSERT_EQ(allowed.status, 0) << allowed.err;
  auto f = formats::GgufFile::open(path("tiny-re.gguf"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  for (const auto& t : f->tensors())
    EXPECT_EQ(t.dtype, t.shape.size() == 2 ? graph::DType::Q4_0 : graph::DType::F32) << t.name;
  const Ran run = glass("run -m tiny-re.gguf -p hello -n 4 --temp 0");
  EXPECT_EQ(run.status, 0) << run.err;
}

TEST_F(Cli, BenchJsonHasLlamaBenchFieldsAndItsOwnStatistics) {
  const fs::path model = tiny_model("q4_0");
  const Ran r = glass("bench -m tiny-q4_0.gguf -p 8 -n 4 -r 3 -t 2 -o json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);  // pp8, then tg4

  auto f = formats::GgufFile::open(model);
  ASSERT_TRUE(f.ok());
  uint64_t params = 0, bytes = 0;
  for (const auto& t : f->tensors()) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    params += static_cast<uint64_t>(n);
    bytes += t.nbytes;
  }
  for (const char* field :
       {"model_filename", "model_type", "model_size", "model_n_params", "n_threads", "n_prompt", "n_gen",
        "avg_ts", "stddev_ts", "samples_ts", "samples_ns", "backend", "peak_rss_bytes"})
    for (const auto& test : j) EXPECT_TRUE(test.contains(field)) << field;
  EXPECT_EQ(j[0]["n_prompt"], 8);
  EXPECT_EQ(j[0]["n_gen"], 0);
  EXPECT_EQ(j[1]["n_prompt"], 0);
  EXPECT_EQ(j[1]["n_gen"], 4);
  for (const auto& test : j) {
    EXPECT_EQ(test["model_filename"], "tiny-q4_0.gguf");
    EXPECT_EQ(test["model_n_params"].get<uint64_t>(), params);
    EXPECT_EQ(test["model_size"].get<uint64_t>(), bytes);
    EXPECT_TRUE(test["model_type"].get<std::string>().ends_with("Q4_0")) << test["model_type"];
    EXPECT_EQ(test["n_threads"], 2);
    EXPECT_EQ(test["backend"], "cpu");
    EXPECT_GT(test["peak_rss_bytes"].get<uint64_t>(), 0u);

    const auto ts = test["samples_ts"].get<std::vector<double>>();
    const auto ns = test["samples_ns"].get<std::vector<double>>();
    ASSERT_EQ(ts.size(), 3u);
    ASSERT_EQ(ns.size(), 3u);
    const double tokens = test["n_prompt"].get<double>() + test["n_gen"].get<double>();
    double mean = 0, var = 0;
    for (size_t i = 0; i < ts.size(); ++i) {
      EXPECT_NEAR(ts[i], 1e9 * tokens / ns[i], 1e-6 * ts[i]) << i;  // tokens per second of each sample
      mean += ts[i] / 3;
    }
    for (double t : ts) var += (t - mean) * (t - mean) / 2;  // llama-bench's sample deviation (n - 1)
    EXPECT_NEAR(test["avg_ts"].get<double>(), mean, 1e-9 * mean);
    EXPECT_NEAR(test["stddev_ts"].get<double>(), std::sqrt(var), 1e-6 * mean);
  }
}

TEST_F(Cli, BenchMarkdownHasARowPerTest) {
  tiny_model("f16");
  const Ran r = glass("bench -m tiny-f16.gguf -p 16 -n 2 -r 2 -t 1");
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::vector<std::string> rows;
  while (std::getline(lines, line))
    if (line.starts_with("| ") && line.find("---") == std::string::npos) rows.push_back(line);
  ASSERT_EQ(rows.size(), 3u) << r.out;  // header, pp16, tg2
  EXPECT_NE(rows[0].find("t/s"), std::string::npos);
  EXPECT_NE(rows[1].find(" pp16 "), std::string::npos) << rows[1];
  EXPECT_NE(rows[2].find(" tg2 "), std::string::npos) << rows[2];
  EXPECT_NE(rows[1].find(" F16 "), std::string::npos) << rows[1];
  EXPECT_NE(rows[1].find(" ± "), std::string::npos) << rows[1];
}

// --isa picks the kernel tier and the load line names it; a tier glass has no name for is refused.
TEST_F(Cli, BenchRunsTheNamedKernelTier) {
  tiny_model("q4_0");
  const Ran r = glass("bench -m tiny-q4_0.gguf -p 16 -n 2 -r 1 -t 1 --isa scalar");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("backend cpu (scalar, 1 threads)"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find(" tg2 "), std::string::npos) << r.out;
  const Ran bad = glass("bench -m tiny-q4_0.gguf -p 16 -n 0 -r 1 --isa avx9");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("avx9"), std::string::npos) << bad.err;
}

// glass kernels prints the table plans choose from: every tier's matmuls, the repacked layouts.
TEST_F(Cli, KernelsListsTheTable) {
  const Ran r = glass("kernels");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("matmul(f32, q4_0) scalar\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("attention(f32, {f32|f16}, {f32|f16}, i32, i32, i32) avx2"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("repacked to q4_0x16"), std::string::npos) << r.out;
  const Ran ref = glass("kernels --backend ref");
  ASSERT_EQ(ref.status, 0) << ref.err;
  EXPECT_NE(ref.out.find("matmul("), std::string::npos) << ref.out;
  const Ran bad = glass("kernels --backend tpu");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("tpu"), std::string::npos) << bad.err;
}

// GLASS_DECODE_STRATEGY is the command's: it stands for --decode-strategy where that is not given
// (the library reads no environment), and a name it does not know is refused naming it.
TEST_F(Cli, DecodeStrategyComesFromTheEnvironmentThroughTheCommand) {
  tiny_model("q4_0");
  const Ran r =
      glass("bench -m tiny-q4_0.gguf -p 0 -n 2 -r 1 -t 1 --isa avx2", "", "GLASS_DECODE_STRATEGY=lockstep");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("backend cpu (avx2, 1 threads, lockstep decode)"), std::string::npos) << r.err;
  const Ran flag = glass("bench -m tiny-q4_0.gguf -p 0 -n 2 -r 1 -t 1 --isa avx2 --decode-strategy spread",
                         "", "GLASS_DECODE_STRATEGY=lockstep");
  ASSERT_EQ(flag.status, 0) << flag.err;
  EXPECT_NE(flag.err.find("backend cpu (avx2, 1 threads, spread decode)"), std::string::npos) << flag.err;
  const Ran bad = glass("bench -m tiny-q4_0.gguf -p 0 -n 2 -r 1 -t 1", "", "GLASS_DECODE_STRATEGY=zigzag");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("zigzag"), std::string::npos) << bad.err;
}

// llama-batched-bench's test with its flag spellings: one JSON object per (pp, tg, pl), its fields,
// n_kv = pl (pp + tg), and the aggregate speeds consistent with the times.
TEST_F(Cli, BatchedBenchJsonlHasLlamaBatchedBenchFields) {
  tiny_model("q4_0");
  const Ran r = glass("bench -m tiny-q4_0.gguf -t 1 -npp 8,20 -ntg 3 -npl 1,3 -o jsonl");
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::vector<nlohmann::json> rows;
  while (std::getline(lines, line))
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 4u) << r.out;
  const int want[4][2] = {{8, 1}, {8, 3}, {20, 1}, {20, 3}};
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& j = rows[i];
    for (const char* key : {"pp", "tg", "pl", "n_kv", "t_pp", "speed_pp", "t_tg", "speed_tg", "t", "speed"})
      ASSERT_TRUE(j.contains(key)) << key << " in " << line;
    EXPECT_EQ(j["pp"], want[i][0]);
    EXPECT_EQ(j["tg"], 3);
    EXPECT_EQ(j["pl"], want[i][1]);
    EXPECT_EQ(j["n_kv"], want[i][1] * (want[i][0] + 3));
    const double pl = j["pl"], pp = j["pp"], t_pp = j["t_pp"], t_tg = j["t_tg"];
    EXPECT_NEAR(j["speed_pp"].get<double>(), pl * pp / t_pp, 1e-6 * pl * pp / t_pp);
    EXPECT_NEAR(j["speed_tg"].get<double>(), pl * 3 / t_tg, 1e-6 * pl * 3 / t_tg);
    EXPECT_NEAR(j["t"].get<double>(), t_pp + t_tg, 1e-9);
  }
  const Ran md = glass("bench -m tiny-q4_0.gguf -t 1 --npp 8 --ntg 2 --npl 2");
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_NE(md.out.find("|     8 |      2 |    2 |     20 |"), std::string::npos) << md.out;
}

// --n-probs N (llama.cpp's n_probs) with --json: each generated token's log-probability and its N most
// likely alternatives under "completion_probabilities"; greedy tokens are their step's most likely.
TEST_F(Cli, RunJsonWithNProbsListsEachTokensAlternatives) {
  const Ran r = glass("run -p 'Once upon a time' -n 8 --temp 0 -t 1 --json --n-probs 3");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& tokens = j["tokens"];
  ASSERT_FALSE(tokens.empty());
  const auto& probs = j["completion_probabilities"];
  ASSERT_EQ(probs.size(), tokens.size()) << r.out;
  for (size_t i = 0; i < probs.size(); ++i) {
    const auto& e = probs[i];
    EXPECT_EQ(e["id"], tokens[i]) << i;
    EXPECT_TRUE(e["token"].is_string()) << i;
    EXPECT_TRUE(e["bytes"].is_array()) << i;
    const double lp = e["logprob"];
    EXPECT_LE(lp, 0.0) << i;
    const auto& top = e["top_logprobs"];
    ASSERT_EQ(top.size(), 3u) << i;
    EXPECT_EQ(top[0]["id"], e["id"]) << i;
    EXPECT_EQ(top[0]["logprob"].get<double>(), lp) << i;
    double mass = 0;
    for (size_t k = 0; k < top.size(); ++k) {
      if (k > 0) {
        EXPECT_GE(top[k - 1]["logprob"].get<double>(), top[k]["logprob"].get<double>()) << i;
      }
      mass += std::exp(top[k]["logprob"].get<double>());
    }
    EXPECT_LE(mass, 1.0 + 1e-5) << i;
  }
  // Not asked: no such key, and the same tokens.
  const Ran plain = glass("run -p 'Once upon a time' -n 8 --temp 0 -t 1 --json");
  ASSERT_EQ(plain.status, 0) << plain.err;
  const auto p = nlohmann::json::parse(plain.out);
  EXPECT_FALSE(p.contains("completion_probabilities"));
  EXPECT_EQ(p["tokens"], tokens);
  // Without --json there is nowhere to write them; more than 20 is out of range.
  const Ran no_json = glass("run -p 'Once' -n 2 --n-probs 3");
  EXPECT_NE(no_json.status, 0);
  EXPECT_NE(no_json.err.find("--json"), std::string::npos) << no_json.err;
  const Ran too_many = glass("run -p 'Once' -n 2 --json --n-probs 21");
  EXPECT_NE(too_many.status, 0);
  EXPECT_NE(too_many.err.find("--n-probs"), std::string::npos) << too_many.err;
}

TEST_F(Cli, BenchOfAMissingFileFailsNamingIt) {
  const Ran r = glass("bench -m no-such-model.gguf -p 8 -n 0 -r 1");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("no-such-model.gguf"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace
}  // namespace glass
