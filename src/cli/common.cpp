#include "cli/common.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace glass::cli {
namespace {

// The bundled default model: ./models/stories260K.gguf, else the source tree's copy.
std::string default_model() {
  const std::filesystem::path rel = "models/stories260K.gguf";
  std::error_code ec;
  if (std::filesystem::exists(rel, ec)) return rel.string();
  return (std::filesystem::path(GLASS_SOURCE_DIR) / rel).string();
}

}  // namespace

void add_model_options(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("-m,--model", o.path,
                 "GGUF file or Hugging Face model directory (default: the bundled models/stories260K.gguf)");
  cmd.add_option(
      "-c,--ctx-size", o.load.n_ctx,
      "KV cache capacity in tokens (default: the model's context, at most 4096, or what the command needs)");
  cmd.add_option("-b,--batch-size", o.load.n_batch, "most tokens per prefill call (default: 512)");
  cmd.add_option("--kv-size", o.load.kv_size,
                 "token rows of the KV cache pool all sequences share (default: the context size)");
  cmd.add_option("--kv-block-size", o.load.kv_block_size, "token rows per KV cache block")
      ->capture_default_str();
  cmd.add_flag("--batch-invariant", o.load.batch_invariant,
               "a sequence's logits do not depend on what else its steps hold (slower; see "
               "docs/performance.md)");
  cmd.add_option("--kv-size-window", o.load.kv_size_window,
                 "token rows of the sliding-window layers' own pool (Gemma 2/3/3n; default: each sequence's "
                 "window plus one batch)");
  cmd.add_option_function<std::string>(
         "--cache-type",
         [&o](const std::string& t) { o.load.cache_type = t == "f16" ? CacheType::F16 : CacheType::F32; },
         "KV cache element type: f32 (exact) or f16 (half the memory; llama.cpp's default)")
      ->check(CLI::IsMember({"f32", "f16"}))
      ->default_str("f32");
  cmd.add_option("--backend", o.load.backend, "compute backend: cpu or ref")->capture_default_str();
  cmd.add_option("-t,--threads", o.load.n_threads,
                 "compute threads (cpu backend; default: one per hardware thread)");
  cmd.add_option("--isa", o.load.isa,
                 "cpu backend: kernel tier, avx512, avx2 or scalar (default: the best this CPU runs)")
      ->check(CLI::IsMember({"avx512", "avx2", "scalar"}));
  cmd.add_flag("!--no-repack", o.load.repack_weights,
               "cpu backend: multiply every weight in its file layout (no one-time repack into a kernel's "
               "faster layout, e.g. q4_0 in 16-row groups)");
  cmd.add_flag("--decompose", o.load.decompose, "run composite ops through their reference decompositions");
  cmd.add_flag_callback(
      "--no-fuse", [&o] { o.load.fuse = false; },
      "skip the backend's fusion rewrites and fused kernels (compare with and without)");
  cmd.add_option_function<std::string>(
      "--chat-template-file",
      [&o](const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw CLI::ValidationError("--chat-template-file", "cannot read " + path);
        o.load.chat_template.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      },
      "Jinja chat template to use instead of the model's (glass chat)");
}

void add_sampling_options(CLI::App& cmd, GenerateConfig& gen) {
  SamplingConfig& s = gen.sampling;
  cmd.add_option("--temp", s.temperature, "temperature; 0 = greedy")->capture_default_str();
  cmd.add_option("--top-k", s.top_k, "top-k (0 = off)")->capture_default_str();
  cmd.add_option("--top-p", s.top_p, "top-p (1 = off)")->capture_default_str();
  cmd.add_option("--min-p", s.min_p, "min-p (0 = off)")->capture_default_str();
  cmd.add_option("--typical", s.typical_p, "locally typical sampling mass (1 = off)")->capture_default_str();
  cmd.add_option("--repeat-penalty", s.repeat_penalty, "repetition penalty (1 = off)")->capture_default_str();
  cmd.add_option("--repeat-last-n", s.penalty_last_n, "penalty window in tokens (0 = off, -1 = context)")
      ->capture_default_str();
  cmd.add_option("--presence-penalty", s.presence_penalty, "presence penalty (0 = off)")
      ->capture_default_str();
  cmd.add_option("--frequency-penalty", s.frequency_penalty, "frequency penalty (0 = off)")
      ->capture_default_str();
  // As llama.cpp: -1 draws a random seed, which the result reports.
  cmd.add_option_function<int64_t>(
      "-s,--seed",
      [&s](int64_t v) { s.seed = v < 0 ? SamplingConfig::kRandomSeed : static_cast<uint64_t>(v); },
      "sampling seed (-1 = random; default 12648430)");
  cmd.add_option("--stop", gen.stop, "stop string (repeatable)");
}

Result<std::vector<int32_t>> parse_token_ids(const std::string& text) {
  std::vector<int32_t> ids;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    while (p < end && (*p == ',' || *p == ' ' || *p == '[' || *p == ']' || *p == '\n')) ++p;
    if (p == end) break;
    int32_t v = 0;
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || next == p)
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("cannot read a token id at '{}'", std::string(p, end)));
    ids.push_back(v);
    p = next;
  }
  if (ids.empty()) return make_error(ErrorCode::InvalidArgument, "no token ids given");
  return ids;
}

int report(const Error& e) {
  fmt::print(stderr, "glass: error: {}\n", e.message);
  return e.code == ErrorCode::InvalidArgument ? 2 : 1;
}

std::shared_ptr<Model> load_or_report(const ModelOptions& o) {
  const std::string path = o.path.empty() ? default_model() : o.path;
  auto model = load_llm(path, o.load);
  if (!model) {
    report(model.error());
    return nullptr;
  }
  const ModelInfo& info = (*model)->info();
  fmt::print(
      stderr,
      "glass: loaded {} ({:.1f} MiB) in {:.1f} ms\nglass: {}\nglass: backend {}, context {} ({} "
      "cache of {} rows{} in blocks of {}), batch {}\n",
      info.path, static_cast<double>(info.file_bytes) / (1024.0 * 1024.0), info.load_ms, info.summary,
      info.backend, info.n_ctx, o.load.cache_type == CacheType::F16 ? "f16" : "f32", info.kv_size,
      info.kv_size_window > 0 ? fmt::format(", {} for the sliding-window layers", info.kv_size_window) : "",
      info.kv_block_size, info.n_batch);
  return *model;
}

}  // namespace glass::cli
