#pragma once
// glass public API: load a model once (immutable, shareable), open sessions that own a KV cache,
// evaluate tokens and generate text.
//
//   auto model = glass::load_llm("models/stories260K.gguf", {});
//   auto session = (*model)->new_session();
//   glass::GenerateConfig cfg;  cfg.max_tokens = 64;  cfg.sampling.temperature = 0;
//   auto result = glass::generate(**session, "Once upon a time", cfg,
//                                 [](std::string_view piece) { fputs(std::string(piece).c_str(), stdout);
//                                 return true; });
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "glass/result.h"

namespace glass {

struct LoadOptions {
  std::string backend = "ref";  // compute backend by name
  int64_t n_ctx = 0;    // KV cache capacity in tokens; 0 = min(training context, 4096), at least min_ctx
  int64_t min_ctx = 0;  // lower bound for the default n_ctx (e.g. prompt + tokens to generate)
  int64_t n_batch = 0;  // most tokens per prefill call; 0 = min(n_ctx, 512)
  bool decompose = false;       // run composite ops through their reference decompositions (debugging)
  int n_threads = 0;            // compute threads (cpu backend); 0 = one per hardware thread
};

enum class GraphFormat { Text, Dot, Json };

struct ModelInfo {
  std::string path;
  std::string architecture;
  std::string summary;  // hyper-parameters in one line
  int64_t vocab_size = 0;
  int64_t n_ctx = 0;
  int64_t n_ctx_train = 0;
  int64_t n_layers = 0;
  int64_t n_batch = 0;
  uint64_t file_bytes = 0;
  double load_ms = 0;
};

class Session;

class Model : public std::enable_shared_from_this<Model> {
 public:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelInfo& info() const;
  Result<std::unique_ptr<Session>> new_session() const;

  // Text -> token ids as the model's tokenizer metadata says (BOS added when the model asks for it).
  Result<std::vector<int32_t>> tokenize(std::string_view text, bool add_special = true,
                                        bool parse_special = true) const;
  // The bytes of one token (may be part of a UTF-8 sequence); control tokens give "".
  std::string token_to_piece(int32_t id) const;
  std::string detokenize(const std::vector<int32_t>& ids) const;
  bool is_end_of_generation(int32_t id) const;

  // The model's graph as built, or as compiled for the prefill plan with the rewrites that fired.
  Result<std::string> graph(GraphFormat format, bool after_rewrites) const;
  // Plans compiled so far (one per plan key; flat while generating).
  uint64_t plans_compiled() const;

  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

Result<std::shared_ptr<Model>> load_llm(const std::string& path, const LoadOptions& options);

struct SessionStats {
  uint64_t n_eval_calls = 0;
  uint64_t n_tokens_evaluated = 0;
  uint64_t kv_rows_written = 0;           // K and V rows, all layers
  uint64_t prefix_tokens_recomputed = 0;  // stays 0: decode never re-evaluates the prefix
};

// Mutable per-conversation state: the KV cache and position. Not thread-safe; one per thread.
class Session {
 public:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  ~Session();

  // Evaluates `tokens` at the next positions through the KV cache (prefill plan for several
  // tokens, decode plan for one; longer inputs go in n_batch chunks). When `all_logits` is given
  // it receives tokens.size() x vocab_size logits; the last row is always kept in last_logits().
  Status eval(std::span<const int32_t> tokens, std::span<float> all_logits = {});
  std::span<const float> last_logits() const;
  int64_t n_past() const;
  void reset();  // forget the cache: the next eval starts at position 0
  const SessionStats& stats() const;
  const Model& model() const;

 private:
  std::unique_ptr<Impl> impl_;
};

struct SamplingConfig {
  float temperature = 0.8f;  // <= 0: greedy (argmax, lowest id on ties)
  int32_t top_k = 40;        // <= 0: off
  float top_p = 0.95f;       // >= 1: off
  float min_p = 0.05f;       // <= 0: off
  uint64_t seed = 0xC0FFEE;  // the request's own generator
};

struct GenerateConfig {
  int32_t max_tokens = 128;
  SamplingConfig sampling;
  bool stop_at_end_of_generation = true;
};

enum class FinishReason { Stop, Length, Cancelled };
const char* finish_reason_name(FinishReason r);

struct GenerateTimings {
  double prompt_ms = 0;
  double decode_ms = 0;
  int64_t n_prompt_tokens = 0;
  int64_t n_decoded = 0;
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated ids (the end-of-generation token excluded)
  std::string text;
  FinishReason finish = FinishReason::Length;
  GenerateTimings timings;
};

// Called with each new piece of text as soon as it is valid UTF-8; return false to cancel.
using PieceCallback = std::function<bool(std::string_view piece)>;

// Continues the session with `prompt_ids` and generates up to max_tokens.
Result<GenerateResult> generate(Session& session, const std::vector<int32_t>& prompt_ids,
                                const GenerateConfig& config, const PieceCallback& on_piece = {});
// Tokenizes `prompt` (BOS as the model says) and generates.
Result<GenerateResult> generate(Session& session, std::string_view prompt, const GenerateConfig& config,
                                const PieceCallback& on_piece = {});

}  // namespace glass
