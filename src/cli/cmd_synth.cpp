// glass synth: a deterministic random-weight llama GGUF of a named real shape (SmolLM2-135M,
// Llama-3.2-1B, Qwen2.5-0.5B-like), so benchmarks run anywhere without downloads. The file is a
// plain llama-architecture GGUF v3 (F32 / F16 / BF16 matrices, F32 norms, a synthetic SentencePiece
// vocabulary of the shape's size, or with --vocab a real one and its size) that llama.cpp loads
// and llama-quantize converts.
#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/common.h"
#include "cli/progress.h"
#include "cli/synth_hf.h"
#include "glass/files.h"
#include "glass/half.h"
#include "glass/tools.h"

namespace glass::cli {
namespace {

struct Shape {
  const char* name;
  int64_t dim, n_layers, n_heads, n_kv_heads, ffn_dim, vocab, n_ctx;
  float rope_base, rms_eps;
};

constexpr Shape kShapes[] = {
    {"smollm2-135m", 576, 30, 9, 3, 1536, 49152, 8192, 100000.0f, 1e-5f},
    {"llama-1b", 2048, 16, 32, 8, 8192, 128256, 131072, 500000.0f, 1e-5f},
    {"qwen2.5-0.5b", 896, 24, 14, 2, 4864, 151936, 32768, 1000000.0f, 1e-6f},
    {"tiny", 64, 2, 4, 2, 128, 512, 256, 10000.0f, 1e-5f},
};

// ggml type ids and GGUF metadata type ids.
enum : uint32_t { kGgmlF32 = 0, kGgmlF16 = 1, kGgmlBF16 = 30 };
enum : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kString = 8, kArray = 9 };

class Bytes {
 public:
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void f32(float v) { raw(&v, 4); }
  void str(const std::string& s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    data.insert(data.end(), b, b + n);
  }
  std::vector<uint8_t> data;
};

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;  // outermost first
  bool matrix;                 // written in the chosen type; otherwise F32 (norms)
  float stddev;
};

// splitmix64 -> approximately normal values (sum of four uniforms, rescaled): fast and portable.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  float normal() {
    float u = 0;
    for (int i = 0; i < 4; ++i) u += static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);
    return (u - 2.0f) * 1.7320508f;  // variance of the sum is 4/12
  }

 private:
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t s_;
};

// The synthetic vocabulary: <unk> <s> </s>, the 256 byte tokens, then "▁w<i>" pieces.
std::string token_text(uint64_t i) {
  return i == 0    ? "<unk>"
         : i == 1  ? "<s>"
         : i == 2  ? "</s>"
         : i < 259 ? fmt::format("<0x{:02X}>", i - 3)
                   : fmt::format("\xE2\x96\x81w{}", i);
}

int synth(const std::string& shape_name, const std::string& type, const std::string& out, uint64_t seed,
          const std::string& format, bool no_vocab, const std::string& vocab_path) {
  if (no_vocab && format != "gguf")
    return report(
        make_error(ErrorCode::InvalidArgument, "synth: --no-vocab writes GGUF only (--format gguf)"));
  if (!vocab_path.empty() && (no_vocab || format != "gguf"))
    return report(make_error(ErrorCode::InvalidArgument,
                             "synth: --vocab writes GGUF only (--format gguf), and not with --no-vocab"));
  const Shape* s = nullptr;
  for (const Shape& c : kShapes)
    if (shape_name == c.name) s = &c;
  std::string names;
  for (const Shape& c : kShapes) names += std::string(names.empty() ? "" : ", ") + c.name;
  if (s == nullptr)
    return report(make_error(ErrorCode::InvalidArgument,
                             fmt::format("synth: unknown shape '{}' ({})", shape_name, names)));
  uint32_t ggml_type = 0, file_type = 0, elem = 0;
  if (type == "f32") {
    ggml_type = kGgmlF32, file_type = 0, elem = 4;
  } else if (type == "f16") {
    ggml_type = kGgmlF16, file_type = 1, elem = 2;
  } else if (type == "bf16") {
    ggml_type = kGgmlBF16, file_type = 32, elem = 2;
  } else {
    return report(make_error(ErrorCode::InvalidArgument,
                             fmt::format("synth: type '{}' (f32, f16 or bf16; quantize the result with glass "
                                         "quantize or llama-quantize)",
                                         type)));
  }
  // A real vocabulary's keys (--vocab): its token count is the embedding's rows.
  GgufVocabularyKeys vocab;
  if (!vocab_path.empty()) {
    auto v = vocabulary_gguf_keys(vocab_path);
    if (!v) return report(v.error());
    vocab = std::move(*v);
  }
  const int64_t vocab_size = vocab_path.empty() ? s->vocab : vocab.n_tokens;
  const int64_t head_dim = s->dim / s->n_heads, kv_dim = s->n_kv_heads * head_dim;
  std::vector<Tensor> tensors{{"token_embd.weight", {vocab_size, s->dim}, true, 0.02f},
                              {"output_norm.weight", {s->dim}, false, 0.0f}};
  for (int64_t i = 0; i < s->n_layers; ++i) {
    auto blk = [&](const char* w) { return fmt::format("blk.{}.{}.weight", i, w); };
    tensors.push_back({blk("attn_norm"), {s->dim}, false, 0.0f});
    tensors.push_back({blk("attn_q"), {s->dim, s->dim}, true, 0.02f});
    tensors.push_back({blk("attn_k"), {kv_dim, s->dim}, true, 0.02f});
    tensors.push_back({blk("attn_v"), {kv_dim, s->dim}, true, 0.02f});
    tensors.push_back({blk("attn_output"), {s->dim, s->dim}, true, 0.02f});
    tensors.push_back({blk("ffn_norm"), {s->dim}, false, 0.0f});
    tensors.push_back({blk("ffn_gate"), {s->ffn_dim, s->dim}, true, 0.02f});
    tensors.push_back({blk("ffn_up"), {s->ffn_dim, s->dim}, true, 0.02f});
    tensors.push_back({blk("ffn_down"), {s->dim, s->ffn_dim}, true, 0.02f});
  }

  Bytes h;
  h.raw("GGUF", 4);
  h.u32(3);
  h.u64(tensors.size());
  h.u64(14 + (no_vocab ? 1 : !vocab_path.empty() ? vocab.count : 7));  // metadata entries below
  auto kv_u32 = [&](const std::string& k, uint32_t v) { h.str(k), h.u32(kU32), h.u32(v); };
  auto kv_f32 = [&](const std::string& k, float v) { h.str(k), h.u32(kF32), h.f32(v); };
  auto kv_str = [&](const std::string& k, const std::string& v) { h.str(k), h.u32(kString), h.str(v); };
  kv_str("general.architecture", "llama");
  kv_str("general.name", fmt::format("glass synth {} {}", s->name, type));
  kv_u32("general.file_type", file_type);
  kv_u32("general.alignment", 32);
  kv_u32("llama.block_count", static_cast<uint32_t>(s->n_layers));
  kv_u32("llama.context_length", static_cast<uint32_t>(s->n_ctx));
  kv_u32("llama.embedding_length", static_cast<uint32_t>(s->dim));
  kv_u32("llama.feed_forward_length", static_cast<uint32_t>(s->ffn_dim));
  kv_u32("llama.attention.head_count", static_cast<uint32_t>(s->n_heads));
  kv_u32("llama.attention.head_count_kv", static_cast<uint32_t>(s->n_kv_heads));
  kv_u32("llama.rope.dimension_count", static_cast<uint32_t>(head_dim));
  kv_u32("llama.vocab_size", static_cast<uint32_t>(vocab_size));
  kv_f32("llama.rope.freq_base", s->rope_base);
  kv_f32("llama.attention.layer_norm_rms_epsilon", s->rms_eps);
  // --no-vocab: llama.cpp's weights-only files (tokenizer.ggml.model = "no_vocab", no token list).
  const auto n_vocab = static_cast<uint64_t>(vocab_size);
  if (!vocab_path.empty()) {
    h.raw(vocab.records.data(), vocab.records.size());
  } else {
    kv_str("tokenizer.ggml.model", no_vocab ? "no_vocab" : "llama");
  }
  if (!no_vocab && vocab_path.empty()) {
    kv_u32("tokenizer.ggml.bos_token_id", 1);
    kv_u32("tokenizer.ggml.eos_token_id", 2);
    kv_u32("tokenizer.ggml.unknown_token_id", 0);
    // The vocabulary: <unk> <s> </s>, the 256 byte tokens, then "▁w<i>" pieces.
    h.str("tokenizer.ggml.tokens"), h.u32(kArray), h.u32(kString), h.u64(n_vocab);
    for (uint64_t i = 0; i < n_vocab; ++i) h.str(token_text(i));
    h.str("tokenizer.ggml.scores"), h.u32(kArray), h.u32(kF32), h.u64(n_vocab);
    for (uint64_t i = 0; i < n_vocab; ++i) h.f32(i < 259 ? 0.0f : -static_cast<float>(i));
    h.str("tokenizer.ggml.token_type"), h.u32(kArray), h.u32(kI32), h.u64(n_vocab);
    for (uint64_t i = 0; i < n_vocab; ++i) h.u32(i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1);
  }

  uint64_t offset = 0;
  std::vector<uint64_t> sizes;
  for (const Tensor& t : tensors) {
    h.str(t.name);
    h.u32(static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) h.u64(static_cast<uint64_t>(*it));
    h.u32(t.matrix ? ggml_type : kGgmlF32);
    h.u64(offset);
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    sizes.push_back(n * (t.matrix ? elem : 4));
    offset += (sizes.back() + 31) / 32 * 32;
  }
  h.data.resize((h.data.size() + 31) / 32 * 32, 0);

  // --format hf: the same tensors and values as an HF directory (synth_hf.h), data unpadded.
  const bool hf = format == "hf";
  SynthHfModel hf_model{s->dim,     s->n_layers,
                        s->n_heads, s->n_kv_heads,
                        s->ffn_dim, s->vocab,
                        s->n_ctx,   s->rope_base,
                        s->rms_eps, type == "f32" ? "F32" : type == "f16" ? "F16" : "BF16",
                        {}};
  std::vector<SynthTensorInfo> hf_tensors;
  std::string data_path = out;
  if (hf) {
    for (uint64_t i = 0; i < n_vocab; ++i) hf_model.tokens.push_back(token_text(i));
    for (size_t k = 0; k < tensors.size(); ++k)
      hf_tensors.push_back({tensors[k].name, tensors[k].shape, tensors[k].matrix, sizes[k]});
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (auto st = write_hf_json_files(out, hf_model); !st) return report(st.error());
    h.data = safetensors_header(hf_model, hf_tensors);
    data_path = (std::filesystem::path(out) / "model.safetensors").string();
  } else if (format != "gguf") {
    return report(
        make_error(ErrorCode::InvalidArgument, fmt::format("synth: format '{}' (gguf or hf)", format)));
  }

  // A temporary file renamed over the target when complete (glass/files.h).
  auto f = OutputFile::create(data_path, "synth");
  if (!f) return report(f.error());
  Status written = f->write(h.data.data(), h.data.size());
  Rng rng(seed);
  std::vector<uint8_t> buf;
  Progress progress("synth", Progress::Unit::Bytes);
  uint64_t done = 0;
  for (size_t k = 0; k < tensors.size() && written.ok(); ++k) {
    progress.update(done, offset);
    done += sizes[k];
    const Tensor& t = tensors[k];
    const uint64_t n = sizes[k] / (t.matrix ? elem : 4);
    buf.assign(hf ? sizes[k] : (sizes[k] + 31) / 32 * 32, 0);
    for (uint64_t i = 0; i < n; ++i) {
      const float v = t.matrix ? rng.normal() * t.stddev : 1.0f + 0.1f * rng.normal();
      if (!t.matrix || ggml_type == kGgmlF32) {
        std::memcpy(buf.data() + 4 * i, &v, 4);
      } else {
        const uint16_t b = ggml_type == kGgmlF16 ? f32_to_f16(v) : f32_to_bf16(v);
        std::memcpy(buf.data() + 2 * i, &b, 2);
      }
    }
    if (hf) to_hf_rows(hf_model, hf_tensors[k], buf);
    written = f->write(buf.data(), buf.size());
  }
  if (written.ok()) written = f->commit();
  if (!written.ok()) return report(written.error());
  progress.finish();
  fmt::print(stderr, "glass: wrote {} ({}, {}, {} tensors, {} tokens, {:.1f} MiB)\n", out, s->name, type,
             tensors.size(), vocab_size, static_cast<double>(h.data.size() + offset) / (1024.0 * 1024.0));
  return 0;
}

}  // namespace

void add_synth_command(CLI::App& app, int& exit_code) {
  auto* cmd =
      app.add_subcommand("synth", "write a deterministic random-weight llama GGUF of a real model's shape");
  auto shape = std::make_shared<std::string>("smollm2-135m");
  auto type = std::make_shared<std::string>("f16");
  auto out = std::make_shared<std::string>();
  auto seed = std::make_shared<uint64_t>(1234);
  auto format = std::make_shared<std::string>("gguf");
  cmd->add_option("--shape", *shape, "smollm2-135m, llama-1b, qwen2.5-0.5b or tiny")->capture_default_str();
  cmd->add_option("--type", *type, "matrix storage: f32, f16 or bf16")->capture_default_str();
  cmd->add_option("-o,--output", *out, "output GGUF file (--format hf: output directory)")->required();
  cmd->add_option("--format", *format,
                  "gguf, or hf: a Hugging Face directory (config.json, model.safetensors, "
                  "tokenizer.json) holding the same model")
      ->capture_default_str();
  cmd->add_option("--seed", *seed, "random seed")->capture_default_str();
  auto no_vocab = std::make_shared<bool>(false);
  cmd->add_flag(
      "--no-vocab", *no_vocab,
      "write no vocabulary (tokenizer.ggml.model = \"no_vocab\"), as llama.cpp's weights-only files");
  auto vocab = std::make_shared<std::string>();
  cmd->add_option(
      "--vocab", *vocab,
      "a real vocabulary, its size the embedding's rows: a GGUF whose tokenizer.* keys are copied "
      "(llama.cpp's ggml-vocab-*.gguf, a model) or an HF tokenizer.json or its directory");
  cmd->callback([&exit_code, shape, type, out, seed, format, no_vocab, vocab] {
    exit_code = synth(*shape, *type, *out, *seed, *format, *no_vocab, *vocab);
  });
}

}  // namespace glass::cli
