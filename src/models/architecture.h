#pragma once
// The contract between an architecture file and the runtime. Every architecture builds one graph
// with the same step interface:
//   inputs  tokens [T] i32, positions [T] i32, seq_ids [T] i32, slots [T] i32 (cache rows to write)
//   state   cache.pos [C] i32, cache.seq [C] i32 (position and sequence of each row) and per layer
//   blk.{i}.cache_k / blk.{i}.cache_v [C, n_kv_heads, head_dim] output  logits [T, vocab_size] f32
// where T is the step's token count and S the cache rows attention reads (past + new).
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf.h"
#include "glass/result.h"
#include "graph/graph.h"
#include "models/weights.h"

namespace glass::models {

struct BuildOptions {
  int64_t n_ctx = 0;    // cache capacity C; 0 = min(training context, kDefaultContext), at least min_ctx
  int64_t min_ctx = 0;  // the caller's lower bound for the default
  graph::DType kv_dtype = graph::DType::F32;
  // The weights are an HF checkpoint's, unconverted. llama.cpp's converter permutes Llama q/k rows
  // so that RoPE rotates interleaved pairs (x[2i], x[2i+1]); HF's rows rotate halves (x[i],
  // x[i + n_rot/2]). Families whose GGUF form was permuted build NeoX pairing instead when this is
  // set: the same math, no weight copy, no per-token cost. Others ignore it.
  bool hf_layout = false;
};

inline constexpr int64_t kDefaultContext = 4096;  // like llama.cpp's default -c

// The cache capacity an architecture builds for, given its training context.
int64_t choose_context(const BuildOptions& opt, int64_t n_ctx_train);

enum class StateKind : uint8_t { RowMeta, Keys, Values };  // RowMeta: cache.pos and cache.seq

struct ModelGraph {
  graph::Graph graph;
  int64_t vocab_size = 0;
  int64_t n_ctx = 0;  // cache capacity chosen
  int64_t n_ctx_train = 0;
  int64_t n_layers = 0;
  std::vector<StateKind> state_kinds;  // per graph.leaves(Op::State)
  std::string summary;                 // one line of hyper-parameters for logs
};

struct Architecture {
  std::string_view name;  // GGUF general.architecture
  std::vector<std::string_view> hf_model_types;
  Result<ModelGraph> (*from_gguf)(const formats::GgufFile& file, const WeightIndex& weights,
                                  const BuildOptions& opt);
};

// nullptr when unknown.
const Architecture* find_architecture(std::string_view gguf_name);
std::vector<std::string_view> architecture_names();

}  // namespace glass::models
