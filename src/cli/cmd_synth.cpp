// glass synth: a deterministic random-weight GGUF of a named real shape (SmolLM2-135M,
// Llama-3.2-1B, Qwen2.5-0.5B-like as llama; SmolLM3-3B; LFM2-1.2B / 350M; Gemma 3n E4B / E2B's
// text model as gemma3n), so
// benchmarks run anywhere without downloads. The file is a GGUF v3 under llama.cpp's names and keys
// (F32 / F16 / BF16 matrices, F32 norms and small tensors, a synthetic SentencePiece vocabulary of the
// shape's size, or with --vocab a real one and its size) that llama.cpp loads and llama-quantize
// converts.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/common.h"
#include "cli/progress.h"
#include "cli/synth_gguf.h"
#include "cli/synth_hf.h"
#include "glass/files.h"
#include "glass/half.h"
#include "glass/tools.h"

namespace glass::cli {
namespace {

using namespace synth;  // NOLINT(google-build-using-namespace): the writer and its tables

// Qwen3.5-2B's published size (24 layers of width 2048, a 248,320-token vocabulary: llama.cpp's 2B)
// with the family's layout (3 Gated DeltaNet layers to 1 attention, head_dim 256 with a quarter of
// it rotated, 128-wide DeltaNet heads); the head counts and the FFN width are assumptions where the
// published configuration was not at hand, so measure it side by side, not against other numbers.
constexpr Shape qwen35_2b() {
  Shape s{"qwen3.5-2b", "qwen35", 2048, 24, 8, 2, 6144, 248320, 262144, 10000000.0f, 1e-6f};
  s.head_dim = 256, s.global_every = 4, s.conv_width = 4;
  s.delta_k_heads = 16, s.delta_v_heads = 16, s.delta_dim = 128, s.n_rot = 64;
  return s;
}

// LiquidAI/LFM2-1.2B's config: 16 layers, 6 of them attention (layer_types).
constexpr Shape lfm2_sized(const char* name, int64_t dim, int64_t n_heads, int64_t n_kv_heads,
                           int64_t ffn_dim, const char* kinds) {
  Shape s{name, "lfm2", dim, 0, n_heads, n_kv_heads, ffn_dim, 65536, 128000, 1000000.0f, 1e-5f};
  s.layer_kinds = kinds, s.conv_width = 3;
  for (const char* k = kinds; *k != 0; ++k) ++s.n_layers;
  return s;
}

// google/gemma-3n-E4B's text_config: 262,144 embedding rows (vocab_size_per_layer_input; the 256
// audio/vision tokens past it are not the text model's), layer_types (4 sliding, 1 full) x 7.
constexpr Shape gemma3n_e4b() {
  Shape s{"gemma3n-e4b", "gemma3n", 2048, 35, 8, 2, 16384, 262144, 32768, 1000000.0f, 1e-6f};
  s.head_dim = 256, s.per_layer_dim = 256, s.laurel_rank = 64, s.altup_inputs = 4, s.kv_shared = 15;
  s.sliding_window = 512, s.global_every = 5, s.sparse_layers = 10, s.rope_base_swa = 10000.0f;
  return s;
}

// Another size of the same structure.
constexpr Shape gemma3n_sized(const char* name, int64_t dim, int64_t n_layers, int64_t n_heads,
                              int64_t n_kv_heads, int64_t head_dim, int64_t ffn_dim, int64_t vocab,
                              int64_t n_ctx, int64_t kv_shared, int64_t sliding_window) {
  Shape s = gemma3n_e4b();
  s.name = name;
  s.dim = dim, s.n_layers = n_layers, s.n_heads = n_heads, s.n_kv_heads = n_kv_heads, s.head_dim = head_dim;
  s.ffn_dim = ffn_dim, s.vocab = vocab, s.n_ctx = n_ctx, s.kv_shared = kv_shared,
  s.sliding_window = sliding_window;
  return s;
}

// Gemma 4 E4B / E2B's text models as llama.cpp reads them (42 / 35 layers: its E4B / E2B types):
// local layers with 256-wide heads and a 512 window, global layers with 512-wide heads and
// proportional RoPE, per-layer inputs of width 256, the last layers sharing KV. The widths, head
// counts, layer periods and shared-layer counts are assumptions where the published configuration
// was not at hand (llama.cpp's rule for shared layers fixes that layer n_kv - 1 is global and
// n_kv - 2 local): measure it side by side, not against other numbers.
constexpr Shape gemma4_sized(const char* name, int64_t dim, int64_t n_layers, int64_t n_kv_heads,
                             int64_t ffn_dim, int64_t kv_shared, int64_t global_every, bool double_wide) {
  Shape s{name, "gemma4", dim, n_layers, 8, n_kv_heads, ffn_dim, 262144, 131072, 1000000.0f, 1e-6f};
  s.head_dim = 256, s.global_head_dim = 512, s.global_kv_heads = n_kv_heads, s.per_layer_dim = 256;
  s.kv_shared = kv_shared, s.sliding_window = 512, s.global_every = global_every, s.rope_base_swa = 10000.0f;
  s.double_wide_mlp = double_wide;
  return s;
}

constexpr Shape gemma4_tiny() {
  Shape s = gemma4_sized("gemma4-tiny", 64, 8, 1, 128, 4, 4, true);
  s.n_heads = 2, s.head_dim = 32, s.global_head_dim = 64, s.per_layer_dim = 16, s.vocab = 512, s.n_ctx = 256;
  s.sliding_window = 12;
  return s;
}

// openai/gpt-oss-20b's config.json: 24 layers of 2880, 64 query heads and 8 KV heads of 64, 32
// experts of 2880 (top 4), sliding window 128 on every other layer, YaRN factor 32 over 4096
// positions, vocabulary 201,088. The experts are written as MXFP4 blocks (as its converter writes
// them), the other matrices in the file's type.
constexpr Shape gptoss_20b() {
  Shape s{"gpt-oss-20b", "gpt-oss", 2880, 24, 64, 8, 2880, 201088, 131072, 150000.0f, 1e-5f};
  s.head_dim = 64, s.n_expert = 32, s.n_expert_used = 4, s.sliding_window = 128;
  s.yarn_factor = 32.0f, s.yarn_orig_ctx = 4096;
  return s;
}

constexpr Shape gptoss_tiny() {
  Shape s = gptoss_20b();
  s.name = "gpt-oss-tiny";
  s.dim = 64, s.n_layers = 4, s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 16, s.ffn_dim = 32, s.vocab = 512;
  s.n_ctx = 256, s.n_expert = 8, s.n_expert_used = 2, s.sliding_window = 8;
  return s;
}

constexpr Shape kShapes[] = {
    {"smollm2-135m", "llama", 576, 30, 9, 3, 1536, 49152, 8192, 100000.0f, 1e-5f},
    {"llama-1b", "llama", 2048, 16, 32, 8, 8192, 128256, 131072, 500000.0f, 1e-5f},
    {"qwen2.5-0.5b", "llama", 896, 24, 14, 2, 4864, 151936, 32768, 1000000.0f, 1e-6f},
    {"tiny", "llama", 64, 2, 4, 2, 128, 512, 256, 10000.0f, 1e-5f},
    // HuggingFaceTB/SmolLM3-3B: Llama's tensors, no RoPE in every fourth layer, tied embeddings.
    {"smollm3-3b", "smollm3", 2048, 36, 16, 4, 11008, 128256, 65536, 5000000.0f, 1e-6f},
    lfm2_sized("lfm2-1.2b", 2048, 32, 8, 8192,
               "ccacca"
               "ccacac"
               "acac"),
    // LiquidAI/LFM2-350M: the same layer pattern, narrower.
    lfm2_sized("lfm2-350m", 1024, 16, 8, 4608,
               "ccacca"
               "ccacac"
               "acac"),
    qwen35_2b(),
    gemma3n_e4b(),
    // google/gemma-3n-E2B: 30 layers, a narrower FFN, the last 10 sharing KV.
    gemma3n_sized("gemma3n-e2b", 2048, 30, 8, 2, 256, 8192, 262144, 32768, 10, 512),
    // The same structure at test size: every kind of tensor and key, local and global layers, shared
    // KV, sparse and dense FFNs. llama.cpp fixes three of Gemma 3n's sizes rather than reading them
    // (the per-layer width 256, LAuReL's rank 64, KV computed by the first 20 layers): with those and
    // 21 layers, the last sharing, llama.cpp loads this shape and reads it as glass does.
    gemma3n_sized("gemma3n-tiny", 64, 21, 2, 1, 32, 128, 512, 256, 1, 12),
    gemma4_sized("gemma4-e4b", 2560, 42, 2, 10240, 18, 6, false),
    gemma4_sized("gemma4-e2b", 1536, 35, 1, 6144, 20, 5, true),
    // The same structure at test size: local and global layers of different head sizes, shared KV
    // (layers 4-7 read layers 2 and 3), double-wide MLPs.
    gemma4_tiny(),
    gptoss_20b(),
    // The same structure at test size (MXFP4 experts of 64 x 32).
    gptoss_tiny(),
};

// splitmix64 -> approximately normal values (sum of four uniforms, rescaled): fast and portable.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t bits() { return next(); }
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

struct SynthOptions {
  std::string shape = "smollm2-135m";
  std::string type = "f16";
  std::string out;
  uint64_t seed = 1234;
  std::string format = "gguf";
  bool no_vocab = false;
  std::string vocab;
  bool dry_run = false;
};

int write_synth(const SynthOptions& o) {
  const std::string& shape_name = o.shape;
  const std::string& type = o.type;
  const std::string& out = o.out;
  const std::string& format = o.format;
  const std::string& vocab_path = o.vocab;
  const bool no_vocab = o.no_vocab;
  if (out.empty() && !o.dry_run)
    return report(make_error(ErrorCode::InvalidArgument, "synth: -o/--output is required (or --dry-run)"));
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
  if (std::string(s->arch) != "llama" && format != "gguf")
    return report(
        make_error(ErrorCode::InvalidArgument,
                   fmt::format("synth: --format hf writes llama shapes only ({} is {})", s->name, s->arch)));
  const std::string arch = s->arch;
  const std::vector<Tensor> tensors = arch == "gemma3n"   ? gemma3n_tensors(*s, vocab_size)
                                      : arch == "gemma4"  ? gemma4_tensors(*s, vocab_size)
                                      : arch == "gpt-oss" ? gptoss_tensors(*s, vocab_size)
                                      : arch == "lfm2"    ? lfm2_tensors(*s, vocab_size)
                                      : arch == "qwen35"  ? qwen35_tensors(*s, vocab_size)
                                                          : llama_tensors(*s, vocab_size);
  Meta meta;
  meta.str("general.architecture", s->arch);
  meta.str("general.name", fmt::format("glass synth {} {}", s->name, type));
  meta.u32("general.file_type", file_type);
  meta.u32("general.alignment", 32);
  if (arch == "gemma3n")
    gemma3n_keys(*s, meta);
  else if (arch == "qwen35")
    qwen35_keys(*s, vocab_size, meta);
  else if (arch == "gemma4")
    gemma4_keys(*s, vocab_size, meta);
  else if (arch == "gpt-oss")
    gptoss_keys(*s, vocab_size, meta);
  else
    llama_keys(*s, vocab_size, meta);
  // --no-vocab: llama.cpp's weights-only files (tokenizer.ggml.model = "no_vocab", no token list).
  const auto n_vocab = static_cast<uint64_t>(vocab_size);
  if (!vocab_path.empty()) {
    meta.records(vocab.records, vocab.count);
  } else {
    meta.str("tokenizer.ggml.model", no_vocab ? "no_vocab" : "llama");
  }
  if (!no_vocab && vocab_path.empty()) {
    meta.u32("tokenizer.ggml.bos_token_id", 1);
    meta.u32("tokenizer.ggml.eos_token_id", 2);
    meta.u32("tokenizer.ggml.unknown_token_id", 0);
    // The vocabulary: <unk> <s> </s>, the 256 byte tokens, then "▁w<i>" pieces.
    meta.array("tokenizer.ggml.tokens", kString, n_vocab);
    for (uint64_t i = 0; i < n_vocab; ++i) meta.b.str(token_text(i));
    meta.array("tokenizer.ggml.scores", kF32, n_vocab);
    for (uint64_t i = 0; i < n_vocab; ++i) meta.b.f32(i < 259 ? 0.0f : -static_cast<float>(i));
    meta.array("tokenizer.ggml.token_type", kI32, n_vocab);
    for (uint64_t i = 0; i < n_vocab; ++i) meta.b.u32(i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1);
  }

  Bytes h;
  h.raw("GGUF", 4);
  h.u32(3);
  h.u64(tensors.size());
  h.u64(meta.n);
  h.raw(meta.b.data.data(), meta.b.data.size());
  meta = Meta{};
  uint64_t offset = 0;
  std::vector<uint64_t> sizes;
  for (const Tensor& t : tensors) {
    h.str(t.name);
    h.u32(static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) h.u64(static_cast<uint64_t>(*it));
    h.u32(t.mxfp4 ? kGgmlMxfp4 : t.matrix ? ggml_type : kGgmlF32);
    h.u64(offset);
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    sizes.push_back(t.mxfp4 ? n / 32 * 17 : n * (t.matrix ? elem : 4));
    offset += (sizes.back() + 31) / 32 * 32;
  }
  h.data.resize((h.data.size() + 31) / 32 * 32, 0);
  if (o.dry_run) {
    uint64_t params = 0;
    for (const Tensor& t : tensors) {
      uint64_t n = 1;
      for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
      params += n;
    }
    fmt::print("{} ({}, {}): {} tensors, {} parameters, {} bytes\n", s->name, s->arch, type, tensors.size(),
               params, h.data.size() + offset);
    return 0;
  }

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
  Rng rng(o.seed);
  std::vector<uint8_t> buf;
  Progress progress("synth", Progress::Unit::Bytes);
  uint64_t done = 0;
  // GGUF tensors go out in pieces of at most 16M values (the E4B shape's per-layer embedding alone is
  // 4.4 GiB at f16); an HF tensor whole, as its q/k rows are reordered across the tensor.
  constexpr uint64_t kPiece = uint64_t{1} << 24;
  for (size_t k = 0; k < tensors.size() && written.ok(); ++k) {
    progress.update(done, offset);
    done += sizes[k];
    const Tensor& t = tensors[k];
    if (t.mxfp4) {  // random blocks: exponent 2^-8 to 2^-6 (values up to 0.05), random E2M1 nibbles
      std::vector<uint8_t> blocks(17 * 4096);
      for (uint64_t at = 0; at < sizes[k] && written.ok(); at += blocks.size()) {
        const uint64_t count = std::min<uint64_t>(blocks.size(), sizes[k] - at);
        for (uint64_t i = 0; i < count; ++i)
          blocks[i] =
              i % 17 == 0 ? static_cast<uint8_t>(120 + rng.bits() % 3) : static_cast<uint8_t>(rng.bits());
        written = f->write(blocks.data(), count);
      }
      const std::vector<uint8_t> pad((sizes[k] + 31) / 32 * 32 - sizes[k], 0);
      if (written.ok() && !pad.empty()) written = f->write(pad.data(), pad.size());
      continue;
    }
    const uint64_t bytes_per = t.matrix ? elem : 4;
    const uint64_t n = sizes[k] / bytes_per;
    const uint64_t piece = hf ? n : kPiece;
    for (uint64_t first = 0; first < n && written.ok(); first += piece) {
      const uint64_t count = std::min(piece, n - first);
      buf.assign(count * bytes_per, 0);
      for (uint64_t i = 0; i < count; ++i) {
        const float v = !t.values.empty()
                            ? t.values[first + i]
                            : t.sign * (t.stddev > 0 ? rng.normal() * t.stddev : 1.0f + 0.1f * rng.normal());
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
    if (!hf && written.ok()) {  // GGUF's 32-byte alignment of the next tensor
      const std::vector<uint8_t> pad((sizes[k] + 31) / 32 * 32 - sizes[k], 0);
      if (!pad.empty()) written = f->write(pad.data(), pad.size());
    }
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
  auto* cmd = app.add_subcommand("synth", "write a deterministic random-weight GGUF of a real model's shape");
  auto o = std::make_shared<SynthOptions>();
  cmd->add_option("--shape", o->shape,
                  "smollm2-135m, llama-1b, qwen2.5-0.5b, tiny (llama); smollm3-3b; lfm2-1.2b, lfm2-350m; "
                  "qwen3.5-2b; gemma3n-e4b, "
                  "gemma3n-e2b, gemma3n-tiny (gemma3n: the text model of Gemma 3n); gemma4-e4b, gemma4-e2b; "
                  "gpt-oss-20b, gpt-oss-tiny")
      ->capture_default_str();
  cmd->add_option("--type", o->type, "matrix storage: f32, f16 or bf16")->capture_default_str();
  cmd->add_option("-o,--output", o->out, "output GGUF file (--format hf: output directory)");
  cmd->add_option("--format", o->format,
                  "gguf, or hf: a Hugging Face directory (config.json, model.safetensors, "
                  "tokenizer.json) holding the same model (llama shapes)")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed")->capture_default_str();
  cmd->add_flag(
      "--no-vocab", o->no_vocab,
      "write no vocabulary (tokenizer.ggml.model = \"no_vocab\"), as llama.cpp's weights-only files");
  cmd->add_option(
      "--vocab", o->vocab,
      "a real vocabulary, its size the embedding's rows: a GGUF whose tokenizer.* keys are copied "
      "(llama.cpp's ggml-vocab-*.gguf, a model) or an HF tokenizer.json or its directory");
  cmd->add_flag("--dry-run", o->dry_run,
                "print the shape's tensors, parameters and file size (stdout) and write nothing");
  cmd->callback([&exit_code, o] { exit_code = write_synth(*o); });
}

}  // namespace glass::cli
