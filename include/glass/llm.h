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
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "glass/grammar.h"
#include "glass/result.h"

namespace glass {

// Element type of the KV cache.
enum class CacheType : uint8_t {
  F32,  // exact: the keys and values as computed
  F16,  // half the memory and the bytes attention reads per token (llama.cpp's default, -ctk/-ctv f16)
};

// How a session lays its sequences' KV rows in the cache pool.
enum class KvStorage : uint8_t {
  Paged,  // blocks taken from the pool as a sequence grows, given back when it ends (the default)
  Dense,  // sequence s owns rows [s * n_ctx, (s + 1) * n_ctx): one contiguous run each
};

// How far a load has come, for a progress bar: `stage` is "repack" (weights copied into a kernel's
// layout while the plans compile; `done` bytes of the model's `total` weight bytes, of which norms
// and other small tensors are never copied, so the last report may stay below `total`).
struct LoadProgress {
  std::string_view stage;
  uint64_t done = 0;
  uint64_t total = 0;
};

struct LoadOptions {
  std::string backend = "cpu";  // compute backend by name: "cpu", or "ref" (the reference interpreter)
  // Positions one sequence may reach; 0 = the training context, as far as half the memory the weights
  // leave holds its cache (with kv_size 0), at most 131072, and at least min(training context, 4096)
  // and min_ctx, up to the larger of the training context and 4096 (a longer prompt is refused).
  int64_t n_ctx = 0;
  int64_t min_ctx = 0;  // lower bound for the default n_ctx (e.g. prompt + tokens to generate)
  int64_t n_batch = 0;  // most tokens per prefill call; 0 = min(512, the larger of n_ctx and kv_size)
  // The KV cache fields below (cache_type to kv_storage, and batch_invariant) are the defaults of the
  // model's sessions and engines; each session may choose its own (SessionOptions).
  CacheType cache_type = CacheType::F32;
  // The KV cache is one pool of kv_size token rows in blocks of kv_block_size, shared by all of a
  // session's sequences (generate_batch) — each may grow to n_ctx while the pool has blocks.
  int64_t kv_size = 0;         // rows; 0 = n_ctx (one full-length sequence)
  int64_t kv_block_size = 16;  // rows per block
  int64_t n_seq_max = 64;      // sequences one step may hold (generate_batch's most prompts), at most 65536
  // Sliding-window layers (Gemma 2/3/3n's local layers) keep their rows in a pool of their own and
  // give back the blocks that fell out of every later query's window. Its rows; 0 = enough for
  // n_seq_max sequences' windows plus one step (n_batch), at most kv_size. Paged storage only.
  int64_t kv_size_window = 0;
  KvStorage kv_storage = KvStorage::Paged;
  bool decompose = false;  // run composite ops through their reference decompositions (debugging)
  bool fuse = true;        // the backend's fusions (cpu: fused matmul epilogues); off for A/B
  // A request's logits do not depend on what else its steps hold (bitwise: alone or among others, in
  // any chunking of its prompt), at some cost in speed (docs/performance.md, batch invariance).
  bool batch_invariant = false;
  int n_threads = 0;  // compute threads (cpu backend); 0 = one per hardware thread
  // cpu backend: the kernel tier, "avx512bf16", "avx512", "avx2" or "scalar"; empty = the best this CPU runs.
  // A tier the CPU lacks is an error, not a fallback.
  std::string isa;
  // cpu backend: how decode reads the weights, "spread", "lockstep" or "sequential" (each thread one
  // sequential stream: 16-row groups one at a time, f32 rows one at a time, Q6_K as the file has it);
  // empty = by the CPU (lockstep on Intel, sequential on AMD Zen 4, spread elsewhere), or the
  // GLASS_DECODE_STRATEGY environment variable where set. The load line names it; an unknown name is
  // an error.
  std::string decode_strategy;
  // cpu backend: copy weights whose kernel has a faster layout into it once, when the first plan
  // is compiled (every quantized type, F16 and BF16 with AVX-512; metered in the plan's rewrite log), and
  // drop the copied part of the file mapping (GGUF, or an HF checkpoint's shards) from memory as
  // each copy is made (the model holds one copy; a read of the original pages it back in); false: every
  // weight is read from the file mapping as stored.
  bool repack_weights = true;
  // Jinja chat template used by Session::chat instead of the model's own (GGUF
  // tokenizer.chat_template); empty = the model's.
  std::string chat_template;
  // Called as loading advances (LoadProgress), one call at a time but possibly from the backend's
  // worker threads; it must not throw. The model keeps it: a plan compiled after the load (another
  // batch shape) that repacks a weight the first plans did not use calls it again. Empty: none.
  std::function<void(const LoadProgress&)> on_progress;
};

// A session's KV cache and step behaviour, chosen per session as llama.cpp chooses them per context:
// one loaded Model serves sessions and engines of any cache size. Each field left unset (0, nullopt)
// takes the model's LoadOptions value. Sizes are bound per session and compile nothing; a block size
// or cache type no session used before builds its graph and compiles its plans on first use
// (Model::plans_compiled counts them).
struct SessionOptions {
  int64_t kv_size = 0;         // rows of the pool all of the session's sequences share
  int64_t kv_block_size = 0;   // rows per block
  int64_t n_seq_max = 0;       // sequences one step may hold
  int64_t kv_size_window = 0;  // the sliding-window layers' pool (LoadOptions::kv_size_window)
  std::optional<KvStorage> kv_storage;
  std::optional<CacheType> cache_type;
  std::optional<bool> batch_invariant;
};

// One turn of a conversation, as chat templates see it ({"role": ..., "content": ...}).
struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
  // Optional: a JSON object whose fields are added to the message the template sees, over role and
  // content (transformers passes messages as dicts, so tool turns carry more than text):
  // {"tool_calls": [{"id": ..., "type": "function", "function": {"name": ..., "arguments": {...}}}]}
  // on an assistant turn, {"tool_call_id": ..., "name": ...} on a tool turn. Empty = none.
  std::string extra_json;
};

// What a chat template renders besides the messages.
struct ChatTemplateInputs {
  bool add_generation_prompt = true;
  // A JSON array of tool definitions ({"type": "function", "function": {"name", "description",
  // "parameters"}}), the template's `tools`; empty = none (`tools` is then null, as transformers
  // passes it).
  std::string tools_json;
  // A JSON object whose members are more template variables (the request's chat_template_kwargs:
  // {"enable_thinking": false}); empty = none. The names above and bos_token / eos_token are refused.
  std::string kwargs_json;
};

enum class GraphFormat { Text, Dot, Json };

struct ModelInfo {
  std::string path;
  std::string architecture;
  std::string summary;  // hyper-parameters in one line
  std::string backend;  // the backend and what it chose: "cpu (avx512, 2 threads)"
  int64_t vocab_size = 0;
  int64_t n_ctx = 0;
  int64_t n_ctx_train = 0;
  int64_t n_layers = 0;
  int64_t n_batch = 0;
  int64_t kv_size = 0;  // rows of the KV cache pool
  // Bytes one row of that pool takes (every layer's K and V at one position); the sliding-window
  // pool is apart.
  uint64_t kv_bytes_per_row = 0;
  int64_t kv_block_size = 0;   // rows per block
  int64_t n_seq_max = 0;       // sequences one step may hold
  int64_t kv_size_window = 0;  // rows of the sliding-window layers' pool; 0 when the model has none
  uint64_t file_bytes = 0;
  uint64_t n_params = 0;      // weight elements, all tensors
  uint64_t weight_bytes = 0;  // weight storage, all tensors
  std::string weight_type;    // the storage type holding most weight bytes ("q4_0")
  // The file's type as llama.cpp names it where the file states one (general.file_type:
  // "Q4_K - Medium"), else weight_type in upper case.
  std::string file_type;
  double load_ms = 0;
};

class Session;
struct GenerateConfig;
struct GenerateResult;
namespace internal {
struct Access;  // the runtime's way to Model::Impl and Session::Impl (src/runtime/access.h); not API
}

// Called with each new piece of text as soon as it is valid UTF-8 (and cannot be the start of a
// stop string); return false to cancel.
using PieceCallback = std::function<bool(std::string_view piece)>;

class Model : public std::enable_shared_from_this<Model> {
 public:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelInfo& info() const;
  // Errors: a SessionOptions field out of range (InvalidArgument naming it).
  Result<std::unique_ptr<Session>> new_session(const SessionOptions& options = {}) const;

  // Text -> token ids as the model's tokenizer metadata says (BOS added when the model asks for it).
  Result<std::vector<int32_t>> tokenize(std::string_view text, bool add_special = true,
                                        bool parse_special = true) const;
  // The bytes of one token (may be part of a UTF-8 sequence); control tokens give "".
  std::string token_to_piece(int32_t id) const;
  std::string detokenize(const std::vector<int32_t>& ids) const;
  bool is_end_of_generation(int32_t id) const;

  // The Jinja chat template Session::chat renders ("" when the model has none and none was given).
  const std::string& chat_template() const;
  // Renders `messages` through the chat template as Hugging Face transformers does
  // (bos_token/eos_token from the vocabulary). Errors: no template, a template that does not
  // parse or raises (the message names the construct and line).
  Result<std::string> apply_chat_template(const std::vector<ChatMessage>& messages,
                                          bool add_generation_prompt = true) const;
  // The same with tools. Errors also: extra_json or tools_json that is not a JSON object / array
  // (the message names the message index or "tools").
  Result<std::string> apply_chat_template(const std::vector<ChatMessage>& messages,
                                          const ChatTemplateInputs& inputs) const;

  // The model's graph as built, or as compiled for the prefill plan with the rewrites that fired.
  Result<std::string> graph(GraphFormat format, bool after_rewrites) const;
  // Plans compiled so far (one per plan key; flat while generating).
  uint64_t plans_compiled() const;

  // Analysis: a weight by its GGUF name ("blk.0.attn_q.weight"; tensor_names() lists them, sorted)
  // dequantized to f32, row-major, with its dims (outermost first) in `shape` when given. A copy:
  // the weights the backend runs are untouched. Errors: an unknown name (InvalidArgument), a
  // storage type without a dequantization (Unsupported).
  Result<std::vector<float>> tensor_f32(std::string_view name, std::vector<int64_t>* shape = nullptr) const;
  std::vector<std::string> tensor_names() const;

 private:
  friend struct internal::Access;
  std::unique_ptr<Impl> impl_;
};

// `path`: a GGUF file (any shard of a split model loads every shard), a folder holding one GGUF
// model (a hub snapshot), or a Hugging Face model directory (docs/api.md).
Result<std::shared_ptr<Model>> load_llm(const std::string& path, const LoadOptions& options);

struct SessionStats {
  uint64_t n_eval_calls = 0;
  uint64_t n_tokens_evaluated = 0;
  uint64_t kv_rows_written = 0;           // K and V rows, all layers
  uint64_t prefix_tokens_recomputed = 0;  // stays 0: decode never re-evaluates the prefix
  uint64_t prefix_tokens_reused = 0;      // chat: tokens taken from the pool's prefix index
};

// One kind of kernel's share of the evals run while profiling (Session::set_profiling): "op" or
// "op weight-layout" (e.g. "matmul_swiglu q4_0x16"), how often it ran, its wall time (thread-pool
// dispatch and wait included) and the weight bytes its matmuls read.
struct KernelTime {
  std::string kernel;
  uint64_t calls = 0;
  double seconds = 0.0;
  uint64_t weight_bytes = 0;
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
  // Without it only the last token's logits are computed: the LM head runs on one row, as in
  // llama.cpp, whose batches compute logits only for the tokens that ask for them.
  Status eval(std::span<const int32_t> tokens, std::span<float> all_logits = {});
  std::span<const float> last_logits() const;
  int64_t n_past() const;
  void reset();  // forget the cache: the next eval starts at position 0
  // The ids the cache holds, in order (what eval and generate consumed).
  std::span<const int32_t> tokens() const;
  // Keeps the first n cached tokens and forgets the rest (n <= tokens().size()).
  Status truncate(int64_t n);

  // Several sequences in one session, as llama.cpp's batches with sequence ids: tokens[i] goes to
  // the next position of sequence seq_ids[i] (0 .. info().n_seq_max - 1), one plan call per n_batch
  // chunk, each sequence's KV rows in blocks of the session's pool. `logits` receives one row per
  // token when all_logits, else one row per sequence named, its last token's, in the order of those
  // tokens. Sequence 0 is the one eval() and generate() use.
  Status eval_batch(std::span<const int32_t> tokens, std::span<const int32_t> seq_ids, bool all_logits,
                    std::span<float> logits);
  int64_t sequence_length(int32_t seq_id) const;  // tokens cached for the sequence
  void release_sequence(int32_t seq_id);          // forget it: its blocks go back to the pool

  // One chat turn: renders the whole conversation through the model's chat template, reuses the
  // cached tokens it shares with this session's cache (earlier turns are not re-evaluated; only
  // the first differing token onwards is), and generates the reply. BOS comes from the template
  // when it writes one, else as the model's tokenizer says, never twice.
  Result<GenerateResult> chat(const std::vector<ChatMessage>& messages, const GenerateConfig& config,
                              const PieceCallback& on_piece = {});
  const SessionStats& stats() const;
  // Times every kernel of the evals that follow (on) or stops (off); what was collected stays until
  // clear_profile(). The cpu backend times its kernels; the ref backend reports none.
  void set_profiling(bool on);
  void clear_profile();
  // What was collected, the most time first.
  std::vector<KernelTime> profile() const;

  // Analysis: graph nodes (by name, as `glass graph` prints them: "blk.3.ffn_out") whose values the
  // evals that follow keep in captured(). The session then runs plans of its own, compiled at its
  // next eval for the graph with these nodes as extra outputs (so no rewrite fuses them away); the
  // model's plans and this session's KV cache are kept. Empty: the model's plans again. Errors
  // (InvalidArgument, nothing changed): a name no node has, a node that is not f32 or has no row per
  // token (first dimension T, or O for the nodes after the model's logits-row selection).
  Status set_capture(const std::vector<std::string>& names);
  struct Captured {
    std::string name;
    // [rows, ...]: T nodes give a row per token evaluated, O nodes one per logits row (the last
    // token's, or every token's when eval is given all_logits).
    std::vector<int64_t> shape;
    std::vector<float> values;
  };
  // The captured nodes over the last eval / eval_batch call (all of its chunks), in set_capture's
  // order. Keeping them copies their rows (and may allocate); without captures nothing is copied.
  const std::vector<Captured>& captured() const;
  const Model& model() const;

 private:
  friend struct internal::Access;
  std::unique_ptr<Impl> impl_;
};

// The sampler chain (llama.cpp's samplers and defaults). Tokens pass logit_bias, then the samplers
// named in `order`, then a seeded draw from the softmax of what is left.
struct SamplingConfig {
  static constexpr uint64_t kRandomSeed = ~uint64_t{0};  // as `seed`: draw one; the chain reports it

  float temperature = 0.8f;  // logits / temperature; <= 0: greedy (argmax, lowest id on ties)
  int32_t top_k = 40;        // keep the k most likely tokens; <= 0: off
  float top_p = 0.95f;       // keep the most likely tokens until their mass reaches p; >= 1: off
  float min_p = 0.05f;       // drop tokens below min_p x the best token's probability; <= 0: off
  uint64_t seed = 0xC0FFEE;  // the request's own generator; kRandomSeed: a random one
  float typical_p = 1.0f;    // locally typical sampling (Meister et al. 2022) with mass p; >= 1: off
  // Penalties on tokens seen in the last penalty_last_n accepted tokens (prompt and generated):
  // a token seen `count` times has its logit divided by repeat_penalty when positive (multiplied
  // when not), then lowered by count * frequency_penalty + presence_penalty.
  float repeat_penalty = 1.0f;                        // > 0; 1: off
  float presence_penalty = 0.0f;                      // 0: off
  float frequency_penalty = 0.0f;                     // 0: off
  int32_t penalty_last_n = 64;                        // window in tokens; 0: off, -1: the context size
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token id, added to its logit); -INFINITY bans
  // Sampler names in the order they run: penalties, dry, top_n_sigma, top_k, typical_p, top_p,
  // min_p, xtc, temperature (llama.cpp's aliases typ_p, temp, '-' for '_' also read); unknown names
  // are an error. Empty: llama.cpp's default order, the one listed. The seeded draw always comes last.
  std::vector<std::string> order;

  // The samplers below are llama.cpp's (src/llama-sampler.cpp), with common/sampling's defaults.
  // DRY, "don't repeat yourself" (Weidmann, koboldcpp #982): a token that would extend a repeat of
  // length L >= dry_allowed_length of the last dry_penalty_last_n tokens loses
  // dry_multiplier * dry_base^(L - dry_allowed_length) from its logit. A sequence breaker's text
  // (any token containing it, or a split across tokens) ends what counts as a repeat.
  float dry_multiplier = 0.0f;  // 0: off
  float dry_base = 1.75f;       // >= 1
  int32_t dry_allowed_length = 2;
  int32_t dry_penalty_last_n = 64;  // 0: off, -1: the context size
  std::vector<std::string> dry_sequence_breakers{"\n", ":", "\"", "*"};
  // XTC, "exclude top choices": with probability xtc_probability, every token at or above
  // xtc_threshold except the least likely of them is removed.
  float xtc_probability = 0.0f;  // 0: off
  float xtc_threshold = 0.1f;    // > 0.5: off (at most one token can pass it)
  // Top-n-sigma (Tang et al. 2024): keeps the tokens whose logit is within top_n_sigma standard
  // deviations of the best one. <= 0: off.
  float top_n_sigma = -1.0f;
  // Dynamic temperature (the "temperature" stage with dynatemp_range > 0): the temperature goes from
  // temperature - range to temperature + range as the normalized entropy^dynatemp_exponent goes
  // from 0 to 1.
  float dynatemp_range = 0.0f;  // 0: off
  float dynatemp_exponent = 1.0f;
  // Mirostat (Basu et al. 2021): 1 = v1, 2 = v2, 0 = off. When on, the chain is logit_bias,
  // temperature, mirostat (the order and the truncating samplers are not used), as llama.cpp's.
  int32_t mirostat = 0;
  float mirostat_tau = 5.0f;  // target surprise, bits (--mirostat-ent)
  float mirostat_eta = 0.1f;  // learning rate (--mirostat-lr)
};

// Checks `config` as generation does before its first token, without a model: the names in `order`,
// every field's range (the message names the field and its value: "top_p must be in [0, 1], got
// 1.500000"), logit_bias ids against vocab_size and the -1 windows against n_ctx. vocab_size or
// n_ctx 0: not known, so those checks wait for generation (a bias's value is still checked).
// Errors: InvalidArgument.
Status validate(const SamplingConfig& config, int64_t vocab_size = 0, int64_t n_ctx = 0);
// The sampler chain generation builds from `config` for a model of vocab_size tokens and n_ctx
// positions (0: not known): its samplers' names in the order they run, joined by " -> " (what
// `glass run -v` prints). Errors: validate's, and InvalidArgument for vocab_size <= 0.
Result<std::string> describe_sampler_chain(const SamplingConfig& config, int64_t vocab_size, int64_t n_ctx);

// A token and its log-probability at one generation step.
struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0.0f;
};

// One generated token's log-probabilities: log-softmax of the model's raw logits for that step,
// before logit_bias, penalties, temperature or any truncation (vLLM's default "raw" logprobs), so a
// value says what the model predicted, not what the sampler made of it.
struct TokenLogprobs {
  TokenLogprob token;  // the generated token
  // The top_logprobs most likely tokens, most likely first (the lower id first on ties).
  std::vector<TokenLogprob> top;
};

// Called with each generated token's log-probabilities as soon as it is sampled, before its text
// reaches the piece callback; on the thread that generates (the engine's loop thread for Engine
// requests). It must not throw.
using LogprobsCallback = std::function<void(const TokenLogprobs& token)>;

// The most alternatives per token GenerateConfig::top_logprobs may ask for (OpenAI's limit).
inline constexpr int32_t kMaxTopLogprobs = 20;

struct GenerateConfig {
  int32_t max_tokens = 128;
  SamplingConfig sampling;
  bool stop_at_end_of_generation = true;  // the model's end-of-generation tokens (EOS, EOT, ...)
  std::vector<int32_t> stop_token_ids;    // more token ids that end generation (not emitted)
  std::vector<std::string> stop;          // stop strings, matched across token boundaries; text up to
                                          // (not including) the match is returned, nothing after it
  // The text carries control tokens as written (<|channel|>, <|message|>: llama.cpp's special=true),
  // for replies read back by their markers (gpt-oss's harmony). Off: control tokens add no text.
  bool render_control_tokens = false;
  // Set to true from any thread to cancel: the loop stops before its next decode step.
  std::shared_ptr<std::atomic<bool>> cancel;
  // GenerateResult::logprobs: each generated token's log-probability and its top_logprobs most
  // likely alternatives ([0, kMaxTopLogprobs]; more than 0 needs logprobs). Off, the token loop
  // computes nothing extra and allocates nothing.
  bool logprobs = false;
  int32_t top_logprobs = 0;
  LogprobsCallback on_logprobs;  // optional, with logprobs: each entry as it is made
  // Constrained decoding (glass/grammar.h): only tokens the grammar allows next are sampled, the
  // grammar's end lets the end-of-generation tokens through, and a grammar that can only end stops
  // generation (FinishReason::Stop). Null: unconstrained.
  std::shared_ptr<const Constraint> constraint;
};

// Why generation ended. Precedence when several apply to one token: cancelled (the consumer asked),
// then stop (end-of-generation token, stop token id or stop string), then length (max_tokens or a
// full context). Errors are returned as Result errors, not as a finish reason.
enum class FinishReason { Stop, Length, Cancelled };
const char* finish_reason_name(FinishReason r);

struct GenerateTimings {
  double prompt_ms = 0;  // prompt evaluation (prefill)
  double ttft_ms = 0;    // from the call to the first generated token
  double decode_ms = 0;  // everything after the prompt
  int64_t n_prompt_tokens = 0;
  int64_t n_decoded = 0;
};

struct GenerateCounters {
  uint64_t plans_compiled = 0;            // by the model, in total (flat while generating)
  uint64_t kv_rows_written = 0;           // by this request's evaluations
  uint64_t prefix_tokens_recomputed = 0;  // always 0: decode never re-evaluates the prefix
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated ids (a stopping token excluded)
  std::string text;
  std::vector<TokenLogprobs> logprobs;  // with config.logprobs: one per id of `tokens`, in order
  FinishReason finish = FinishReason::Length;
  uint64_t seed = 0;  // the sampler's seed (reproduces the run)
  GenerateTimings timings;
  GenerateCounters counters;
};

// Continues the session with `prompt_ids` and generates up to max_tokens.
Result<GenerateResult> generate(Session& session, const std::vector<int32_t>& prompt_ids,
                                const GenerateConfig& config, const PieceCallback& on_piece = {});
// Tokenizes `prompt` (BOS as the model says when the session is empty) and generates.
Result<GenerateResult> generate(Session& session, std::string_view prompt, const GenerateConfig& config,
                                const PieceCallback& on_piece = {});

// B independent sequences (own prompt, sampler, RNG, stop state) advanced together: one plan call
// per step for all live sequences, each finishing on its own. configs holds one config per prompt,
// or a single config for all. Results are in prompt order. Same seed, same tokens as alone. With the
// paged cache the prompts run as the requests of an Engine (glass/engine.h): prompts sharing leading
// blocks evaluate them once, and when the pool cannot hold every sequence the newest is preempted and
// recomputed later instead of being cut short. on_piece runs on the engine's thread.
using BatchPieceCallback = std::function<bool(size_t index, std::string_view piece)>;
Result<std::vector<GenerateResult>> generate_batch(const Model& model,
                                                   const std::vector<std::vector<int32_t>>& prompts,
                                                   const std::vector<GenerateConfig>& configs,
                                                   const BatchPieceCallback& on_piece = {});

}  // namespace glass
