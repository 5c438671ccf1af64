#include "cli/common.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "cli/progress.h"
#include "glass/files.h"

namespace glass::cli {

std::string default_model() {
  const std::filesystem::path rel = "models/stories260K.gguf";
  std::error_code ec;
  if (std::filesystem::exists(rel, ec)) return rel.string();
  return (std::filesystem::path(GLASS_SOURCE_DIR) / rel).string();
}

const char* const kGpuFooter =
    "llama.cpp's GPU options (-ngl N, -fa [on|off|auto], -sm, -mg, -ts, -dev, -nkvo) are accepted and\n"
    "ignored with a note: this build has no GPU backend.";

namespace {

// More threads than this many per hardware thread only contend; far more is a typo (-t 4000).
constexpr int kThreadsPerCore = 4;
constexpr int kMaxThreads = 1024;
// Positions past this are no context any model has (and size tables in the plan): a typo.
constexpr int64_t kMaxContext = int64_t{1} << 24;

Error invalid(std::string message) { return make_error(ErrorCode::InvalidArgument, std::move(message)); }

// -ctk / -ctv (llama.cpp's names): glass's cache holds f32 or f16, K and V in the same type.
Status check_cache_types(const ModelOptions& o) {
  for (auto [flag, type] :
       {std::pair{"--cache-type-k", &o.cache_type_k}, std::pair{"--cache-type-v", &o.cache_type_v}}) {
    if (type->empty() || *type == "f32" || *type == "f16") continue;
    return invalid(
        fmt::format("{} {}: glass's KV cache holds f32 or f16 (llama.cpp's quantized cache "
                    "types are not implemented)",
                    flag, *type));
  }
  if (!o.cache_type_k.empty() && !o.cache_type_v.empty() && o.cache_type_k != o.cache_type_v)
    return invalid(
        fmt::format("--cache-type-k {} and --cache-type-v {} differ: glass keeps K and V in one "
                    "type (--cache-type f32 or f16)",
                    o.cache_type_k, o.cache_type_v));
  return {};
}

// Arguments checked before anything is loaded: the message names the flag and its value.
Status check_resources(const ModelOptions& o) {
  const LoadOptions& l = o.load;
  const int hw = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int most = std::min(kMaxThreads, kThreadsPerCore * hw);
  if (l.n_threads < -1 || l.n_threads > most)
    return invalid(
        fmt::format("-t {}: threads must be in [1, {}] ({} per hardware thread of {}), or 0 / -1 "
                    "for one per hardware thread",
                    l.n_threads, most, kThreadsPerCore, hw));
  if (l.n_ctx < 0 || l.n_ctx > kMaxContext)
    return invalid(
        fmt::format("-c {}: the context must be in [1, {}] (0: the model's)", l.n_ctx, kMaxContext));
  if (l.n_batch < 0 || l.n_batch > kMaxContext)
    return invalid(
        fmt::format("-b {}: the batch must be in [1, {}] (0: the default)", l.n_batch, kMaxContext));
  const bool both_given =
      o.ctx_given && o.ctx_given->count() > 0 && o.batch_given && o.batch_given->count() > 0;
  if (both_given && l.n_ctx > 0 && l.n_batch > l.n_ctx)
    return invalid(
        fmt::format("-b {} is larger than the context (-c {}): a batch never holds more tokens "
                    "than the context",
                    l.n_batch, l.n_ctx));
  if (l.kv_size < 0 || l.kv_size > kMaxContext * 64)
    return invalid(fmt::format("--kv-size {}: out of range", l.kv_size));
  if (l.kv_block_size < 1 || l.kv_block_size > 4096)
    return invalid(fmt::format("--kv-block-size {}: must be in [1, 4096]", l.kv_block_size));
  return check_cache_types(o);
}

}  // namespace

void add_model_options(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option("-m,--model", o.path,
                 "GGUF file or Hugging Face model directory (default: the bundled models/stories260K.gguf)");
  o.ctx_given = cmd.add_option(
      "-c,--ctx-size", o.load.n_ctx,
      "context: positions a sequence may reach (default: the model's training context, as far as "
      "half the memory the weights leave holds its cache, at most 131072, at least 4096 or what the "
      "command needs; "
      "more than the training context warns)");
  o.batch_given = cmd.add_option("-b,--batch-size", o.load.n_batch,
                                 "most tokens per prefill call (default: 512, at most -c)");
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
  // Either sets the cache type (the two must agree: check_cache_types).
  for (auto [name, given, help] : {std::tuple{"--cache-type-k", &o.cache_type_k,
                                              "llama.cpp's -ctk: the cache type of K (f32 or f16, as V's)"},
                                   std::tuple{"--cache-type-v", &o.cache_type_v,
                                              "llama.cpp's -ctv: the cache type of V (f32 or f16, as K's)"}})
    cmd.add_option_function<std::string>(
        name,
        [&o, given](const std::string& t) {
          *given = t;
          if (t == "f16" || t == "f32") o.load.cache_type = t == "f16" ? CacheType::F16 : CacheType::F32;
        },
        help);
  cmd.add_option("--backend", o.load.backend, "compute backend: cpu or ref")->capture_default_str();
  cmd.add_option("-t,--threads", o.load.n_threads,
                 "compute threads (cpu backend; default: one per hardware thread)");
  cmd.add_option(
         "--isa", o.load.isa,
         "cpu backend: kernel tier, avx512bf16, avx512, avx2 or scalar (default: the best this CPU runs)")
      ->check(CLI::IsMember({"avx512bf16", "avx512", "avx2", "scalar"}));
  // The environment is read here, by the command, never by the library.
  cmd.add_option("--decode-strategy", o.load.decode_strategy,
                 "cpu backend: how decode reads the weights, spread, lockstep or sequential (default: "
                 "GLASS_DECODE_STRATEGY where set, else by the CPU; the load line names it)")
      ->envname("GLASS_DECODE_STRATEGY")
      ->check(CLI::IsMember({"spread", "lockstep", "sequential"}));
  cmd.add_flag("!--no-repack", o.load.repack_weights,
               "cpu backend: multiply every weight in its file layout (no one-time repack into a kernel's "
               "faster layout, e.g. q4_0 in 16-row groups)");
  cmd.add_flag("--decompose", o.load.decompose, "run composite ops through their reference decompositions");
  cmd.add_flag_callback(
      "--no-fuse", [&o] { o.load.fuse = false; },
      "skip the backend's fusion rewrites and fused kernels (compare with and without)");
  cmd.footer(kGpuFooter);
  cmd.add_flag_callback(
      "--log-disable", [] { set_log_disabled(true); },
      "no informational lines on stderr (load, speed); errors and warnings still print");
}

void add_chat_template_option(CLI::App& cmd, ModelOptions& o) {
  cmd.add_option_function<std::string>(
      "--chat-template-file",
      [&o](const std::string& path) {
        auto text = read_text_file(path);
        if (!text) throw CLI::ValidationError("--chat-template-file", text.error().message);
        o.load.chat_template = std::move(*text);
      },
      "Jinja chat template to use instead of the model's");
}

Result<std::string> read_text_file(const std::string& path) {
  // Regular files only, bounded while reading (glass/files.h): never a FIFO or /dev/zero.
  return read_file_bounded(path, kMaxTextFileBytes, "glass");
}

Result<std::vector<int32_t>> parse_token_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::string_view s = text;
  auto is_space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
  auto trim = [&](std::string_view v) {
    while (!v.empty() && is_space(v.front())) v.remove_prefix(1);
    while (!v.empty() && is_space(v.back())) v.remove_suffix(1);
    return v;
  };
  s = trim(s);
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') s = trim(s.substr(1, s.size() - 2));
  if (s.empty()) return invalid("no token ids given");
  const char* p = s.data();
  const char* end = p + s.size();
  while (true) {
    int64_t v = 0;
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || next == p || v < 0 || v > INT32_MAX)
      return invalid(
          fmt::format("token ids '{}': expected a token id in [0, 2^31) at '{}'", text, std::string(p, end)));
    ids.push_back(static_cast<int32_t>(v));
    p = next;
    // One separator: a comma (with any spaces around it) or spaces alone.
    const char* q = p;
    while (q < end && is_space(*q)) ++q;
    if (q == end) break;
    if (*q == ',') {
      ++q;
      while (q < end && is_space(*q)) ++q;
      if (q == end) return invalid(fmt::format("token ids '{}': a comma with no id after it", text));
    } else if (q == p) {
      return invalid(
          fmt::format("token ids '{}': expected ',' or a space at '{}'", text, std::string(p, end)));
    }
    p = q;
  }
  return ids;
}

Result<std::unique_ptr<Session>> open_session(const Model& model, const ModelOptions& o) {
  auto session = model.new_session();
  if (session || session.error().message.find("no memory") == std::string::npos) return session;
  // Name the arguments that sized what did not fit.
  return make_error(ErrorCode::CapacityExceeded,
                    fmt::format("{} (context {}, {} cache rows: lower -c / --kv-size{})",
                                session.error().message, model.info().n_ctx, model.info().kv_size,
                                o.load.cache_type == CacheType::F32 ? " or use --cache-type f16" : ""));
}

int report(const Error& e) {
  fmt::print(stderr, "glass: error: {}\n", e.message);
  return e.code == ErrorCode::InvalidArgument ? 2 : 1;
}

std::shared_ptr<Model> load_or_report(const ModelOptions& o, int& exit_code) {
  if (Status st = check_resources(o); !st) {
    exit_code = report(st.error());
    return nullptr;
  }
  const std::string path = o.path.empty() ? default_model() : o.path;
  // Repacking a large model's weights is most of its load time: a bar when it lasts.
  // The model keeps the callback (a plan compiled later may repack a weight the first two did not
  // use): it holds the bar weakly, and the bar ends with the load.
  auto progress = std::make_shared<Progress>("load: repacking weights", Progress::Unit::Bytes);
  LoadOptions load = o.load;
  load.on_progress = [bar = std::weak_ptr<Progress>(progress)](const LoadProgress& p) {
    if (auto b = bar.lock()) b->update(p.done, p.total);
  };
  auto model = load_llm(path, load);
  if (model) progress->finish();
  progress.reset();
  if (!model) {
    exit_code = report(model.error());
    return nullptr;
  }
  const ModelInfo& mi = (*model)->info();
  info("loaded {} ({:.1f} MiB) in {:.1f} ms", mi.path, static_cast<double>(mi.file_bytes) / (1024.0 * 1024.0),
       mi.load_ms);
  info("{}", mi.summary);
  info("backend {}, context {} ({} cache of {} rows{} in blocks of {}), batch {}", mi.backend, mi.n_ctx,
       o.load.cache_type == CacheType::F16 ? "f16" : "f32", mi.kv_size,
       mi.kv_size_window > 0 ? fmt::format(", {} for the sliding-window layers", mi.kv_size_window) : "",
       mi.kv_block_size, mi.n_batch);
  // The model was not trained past its context: positions beyond it are extrapolation. A warning,
  // not a refusal, as llama.cpp's (the user may know the model extends well).
  if (mi.n_ctx_train > 0 && mi.n_ctx > mi.n_ctx_train)
    warn("context {} is larger than the model's training context {}{}; output past {} tokens may degrade",
         mi.n_ctx, mi.n_ctx_train,
         o.load.n_ctx > 0 ? fmt::format(" (-c {})", o.load.n_ctx) : " (sized for the prompt and -n)",
         mi.n_ctx_train);
  return *model;
}

}  // namespace glass::cli
