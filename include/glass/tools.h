#pragma once
// What the glass command's tools do, as library calls: quantizing a model file (a GGUF, or an HF
// directory converted on the way), a tokenizer without the weights, a model's chat template rendered
// alone, the machine's read bandwidth and the cpu backend's kernel tiers. With glass/verify.h
// (logits against a reference) and glass/files.h (bounded reads, safe output files, .npy).
//
//   glass::QuantizeOptions q;  q.type = "q4_k_m";
//   auto report = glass::quantize_model("model-f16.gguf", "model-q4_k_m.gguf", q);
//   auto tok = glass::TextTokenizer::load("path/to/hf-dir");   // or a GGUF file, or tokenizer.json
//   auto ids = (*tok)->tokenize("Hello");
//
// No function here lets an exception out: one from inside becomes the Result's error.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "glass/files.h"
#include "glass/result.h"
#include "glass/verify.h"

namespace glass {

// ---- Quantization: llama-quantize's file types, per-tensor choices and bytes ----

// The file types by name ("q4_0", "q4_k_m", "q8_0", ...), in llama.cpp's order. "q3_k", "q4_k" and
// "q5_k" are also read, as the _m mixes.
std::vector<std::string> quantize_type_names();

// One tensor as written.
struct QuantizedTensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // outermost first
  std::string from;            // storage type read ("f16")
  std::string to;              // storage type written ("q4_k")
  bool quantizable = false;    // false: kept as it is by the mix rules (norms, other 1-D tensors)
  std::string fallback;        // non-empty when the row length forced another type than the mix's
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  // Progress when on_tensor is called: input bytes converted so far (this tensor included) and in
  // the whole file.
  uint64_t input_done = 0;
  uint64_t input_total = 0;
};

struct QuantizeOptions {
  std::string type = "q4_k_m";  // one of quantize_type_names()
  bool pure = false;            // every quantizable tensor gets the base type (llama-quantize --pure)
  // A tensor stored quantized already (a quantized GGUF, an MLX snapshot's weights) is dequantized and
  // quantized again to its new type (llama-quantize --allow-requantize): it carries both rounding
  // errors. Off: such a tensor is copied when its type stays, refused otherwise.
  bool allow_requantize = false;
  int n_threads = 0;  // threads converting tensors; <= 0: one per hardware thread
  // Called after each tensor is written (progress), on the calling thread. It must not throw.
  std::function<void(const QuantizedTensorInfo&)> on_tensor;
  // A split model, as llama.cpp's gguf-split writes one (0: no limit): a new shard before a tensor
  // that would take its tensor data past split_max_bytes or its tensors past split_max_tensors;
  // named OUTPUT without ".gguf" + "-00001-of-0000N.gguf", loadable from any shard or their folder.
  uint64_t split_max_bytes = 0;
  int64_t split_max_tensors = 0;
};

struct QuantizeReport {
  std::string type;                          // the file type written, by its name ("q4_k_m")
  std::vector<QuantizedTensorInfo> tensors;  // file order
  uint64_t bytes_in = 0;                     // input size: the GGUF file, or an HF directory's weights
  uint64_t bytes_out = 0;                    // output file size (all shards)
  std::vector<std::string> files;            // written: the output, or its shards in order
  uint64_t n_elements = 0;                   // weight elements, all tensors
  int n_threads = 0;                         // threads used
};

// Writes `input` quantized to `output` as llama-quantize writes it: an F32/F16/BF16 GGUF file (or a
// split model's shards, or a folder's model, written as one file) gets the same metadata and
// tensors in the same order, each stored as llama.cpp's mix rules choose; an HF model directory
// (config.json, *.safetensors, tokenizer.json) is first converted as convert_hf_to_gguf.py
// converts it (metadata, tokenizer keys, tensor names and layouts) and its tensors quantized as
// they stream. Memory stays small whatever the model's size.
// Errors: InvalidArgument for an unknown type (the message lists the known ones) or a non-finite
// weight (naming the tensor and row); the input's own (naming the file or the directory's
// config.json / tensor); Unsupported for a tensor stored quantized already (without
// allow_requantize) or in a type GGUF has no id for (an MLX snapshot's 8-bit weights), or a row
// length with no fallback; Io naming the output. On error no output file is left behind.
Result<QuantizeReport> quantize_model(const std::string& input, const std::string& output,
                                      const QuantizeOptions& options);

// ---- A model's tokenizer alone ----

// The tokenizer of a model without its weights: a GGUF file's vocabulary (llama.cpp's tokenizers),
// or an HF directory or tokenizer.json file (HF tokenizers'). Immutable; use from any thread.
class TextTokenizer {
 public:
  struct Impl;
  // A directory without GGUF files (or with config.json and safetensors) or a path ending in .json
  // is an HF tokenizer (a directory's tokenizer.json and tokenizer_config.json); anything else is
  // read as GGUF (a split model's first shard, a folder's model). Errors: the file's, naming it;
  // Unsupported for a GGUF without a vocabulary (tokenizer.ggml.model "no_vocab") or a tokenizer
  // model glass does not implement.
  static Result<std::unique_ptr<TextTokenizer>> load(const std::string& path);

  // As Model::tokenize: add_special puts the configured tokens around the text (BOS/EOS, or the HF
  // post-processor's template); parse_special reads special token texts as those tokens.
  Result<std::vector<int32_t>> tokenize(std::string_view text, bool add_special = true,
                                        bool parse_special = true) const;
  // As transformers' decode and llama.cpp's detokenize, with the tokenizer's configured space
  // clean-up; special tokens are rendered unless skip_special. Ids outside [0, vocab_size()) are
  // InvalidArgument, naming the id.
  Result<std::string> detokenize(std::span<const int32_t> ids, bool skip_special = false) const;
  // The token's string as the vocabulary spells it ("Ġworld", "▁Hello", "<0x0A>"); "" out of range.
  std::string token_text(int32_t id) const;
  int64_t vocab_size() const;

  explicit TextTokenizer(std::unique_ptr<Impl> impl);
  ~TextTokenizer();
  TextTokenizer(const TextTokenizer&) = delete;
  TextTokenizer& operator=(const TextTokenizer&) = delete;

 private:
  std::unique_ptr<Impl> impl_;
};

// ---- Chat templates rendered alone (exactly as Hugging Face transformers renders them) ----

struct ChatTemplateSource {
  std::string text;  // the Jinja template
  // The model's special-token texts the template may read, (name, text): bos_token, eos_token; for
  // HF directories also unk_token, pad_token from tokenizer_config.json.
  std::vector<std::pair<std::string, std::string>> variables;
};

// The chat template a model holds: a GGUF file's tokenizer.chat_template (bos_token / eos_token
// from its vocabulary; a split model's first shard, a GGUF folder's model), or an HF directory's
// (or a file's in one, such as tokenizer.json): chat_template.jinja, else tokenizer_config.json's
// chat_template (a string, or the entry named "default"). Errors: InvalidArgument naming the file
// when it has no template or a JSON file does not parse; the GGUF file's own.
Result<ChatTemplateSource> load_chat_template(const std::string& path);

// ---- A vocabulary as GGUF keys (glass synth --vocab) ----

struct GgufVocabularyKeys {
  std::vector<uint8_t> records;  // GGUF v3 key/value records, as they follow a GGUF header's counts
  uint64_t count = 0;            // records
  int64_t n_tokens = 0;          // tokenizer.ggml.tokens' length
};

// The tokenizer.* keys of a vocabulary, for a program that writes a GGUF with it: copied from a GGUF
// file (llama.cpp's ggml-vocab-*.gguf, or any model; a split model's first shard), or converted from
// an HF tokenizer.json (or the directory holding it) as quantize_model converts an HF directory's.
// Errors: the file's own (InvalidFile naming it); InvalidFile when it holds no token list.
Result<GgufVocabularyKeys> vocabulary_gguf_keys(const std::string& path);

struct ChatTemplateRender {
  // Text variables under the conversation's (ChatTemplateSource::variables).
  std::vector<std::pair<std::string, std::string>> variables;
  // A JSON object whose members are set over every other variable (`glass chat-template --var`).
  std::string overrides_json = "{}";
  // The clock strftime_now() reads, "2026-01-01T00:00:00"; empty: the system's.
  std::string now;
};

// Renders one conversation given as the fixtures' context JSON: {"messages": [...], "tools": [...],
// "add_generation_prompt": bool, "extra": {...}} (messages as transformers passes them, "extra" more
// template variables). Errors: InvalidArgument naming what is at fault ("context", "overrides",
// `now`, a message field) or the template construct and line that does not parse or raises.
Result<std::string> render_chat_template(std::string_view template_text, std::string_view context_json,
                                         const ChatTemplateRender& options = {});

// ---- The machine ----

// Read bandwidth: a buffer much larger than the caches, split over a thread pool the way the cpu
// backend's matmul splits weight rows at one token, read with the widest loads the CPU has in two
// patterns (each chunk front to back, and each chunk as four quarters in lockstep). Decode is
// memory-bound, so the best of the two is its ceiling (`glass bench --bandwidth`).
struct ReadBandwidth {
  double best_gbs = 0;             // best pass of either pattern, 1e9 bytes/s
  double mean_gbs = 0;             // mean of the four-stream passes
  double one_stream_best_gbs = 0;  // best pass reading each chunk front to back
  size_t bytes = 0;                // buffer size
  int passes = 0;
  int n_threads = 0;      // threads that read
  uint64_t checksum = 0;  // of what was read, so the reads cannot be optimized away
};
// Reads a buffer of about `bytes` (whole 256-byte lines, at least one) `passes` times per pattern
// (at least once; after one untimed pass that faults its pages in) on a pool of n_threads threads
// made for the call (<= 0: one per hardware thread). Errors: CapacityExceeded when the buffer cannot
// be allocated; Io when the threads cannot be started.
Result<ReadBandwidth> measure_read_bandwidth(size_t bytes, int passes, int n_threads = 0);

// The cpu backend's kernel tiers (LoadOptions::isa), best first: "avx512bf16", "avx512", "avx2", "scalar".
struct CpuKernelTier {
  std::string name;
  bool runs_here = false;  // this CPU has the instructions (the best such tier is the default)
};
std::vector<CpuKernelTier> cpu_kernel_tiers();

// A backend's kernel table, one line per entry ("matmul(f32, q4_0) avx512"; the cpu backend's
// matmul rows also name their repacked layout and decode walks): what a plan can run, by op, operand
// types and tier. Errors: an unknown backend name (Unsupported).
Result<std::vector<std::string>> kernel_table(std::string_view backend);

// How much memory this process may use: the machine's physical memory, or the cgroup's limit (v2
// memory.max, v1 memory.limit_in_bytes) when lower; 0 when neither can be read. The default
// context (LoadOptions::n_ctx) and glass serve's KV pool are sized by it.
uint64_t memory_limit();

}  // namespace glass
