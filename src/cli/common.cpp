#include "cli/common.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>

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
  cmd.add_option("-c,--ctx-size", o.load.n_ctx,
                 "KV cache capacity in tokens (default: the model's context, at most 4096, or what the command needs)");
  cmd.add_option("-b,--batch-size", o.load.n_batch,
                 "most tokens per prefill call (default: 512)");
  cmd.add_option("--backend", o.load.backend, "compute backend")->default_val("ref");
  cmd.add_option("-t,--threads", o.load.n_threads, "compute threads (cpu backend; default: one per hardware thread)");
  cmd.add_flag("--decompose", o.load.decompose, "run composite ops through their reference decompositions");
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
      return make_error(ErrorCode::InvalidArgument, fmt::format("cannot read a token id at '{}'", std::string(p, end)));
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
      "glass: loaded {} ({:.1f} MiB) in {:.1f} ms\nglass: {}\nglass: backend {}, context {}, batch {}\n",
      info.path, static_cast<double>(info.file_bytes) / (1024.0 * 1024.0), info.load_ms, info.summary,
      o.load.backend, info.n_ctx, info.n_batch);
  return *model;
}

}  // namespace glass::cli
