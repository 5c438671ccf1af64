#pragma once
// The contract between an architecture file and the runtime. Every architecture builds one graph
// with the same step interface:
//   inputs  tokens [T] i32, positions [T] i32, seq_ids [T] i32 (the step's sequence of each token:
//           a row of block_tables), slots [T] i32 (cache rows to write), block_tables [N, M] i32
//           (each sequence's cache blocks in position order), output_rows [O] i32
//   state   per layer blk.{i}.cache_k / blk.{i}.cache_v [C, n_kv_heads, head_dim]: a pool of C / block
//           size blocks shared by all sequences (the paged KV cache)
//   output  logits [O, vocab_size] f32
// where T is the step's token count and S the most positions a sequence of the step reads. A model
// declares what each layer keeps and never how much: C (and W, the sliding-window layers' pool), N
// and M are symbols the session binds (kv/sizing.h sizes them).
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf.h"
#include "glass/result.h"
#include "graph/graph.h"
#include "models/weights.h"

namespace glass::models {

struct BuildOptions {
  int64_t n_ctx = 0;  // positions one sequence may reach; 0 = min(training context, kDefaultContext), at
                      // least min_ctx up to max(training context, kDefaultContext)
  int64_t min_ctx = 0;  // the caller's lower bound for the default
  graph::DType kv_dtype = graph::DType::F32;
  int64_t kv_block_size = 16;  // cache rows per block (attention's block_size)
  // The weights are an HF checkpoint's, unconverted. llama.cpp's converter permutes Llama q/k rows
  // so that RoPE rotates interleaved pairs (x[2i], x[2i+1]); HF's rows rotate halves (x[i],
  // x[i + n_rot/2]). Families whose GGUF form was permuted build NeoX pairing instead when this is
  // set: the same math, no weight copy, no per-token cost. Others ignore it.
  bool hf_layout = false;
};

inline constexpr int64_t kDefaultContext = 4096;  // like llama.cpp's default -c

// The cache capacity an architecture builds for, given its training context.
int64_t choose_context(const BuildOptions& opt, int64_t n_ctx_train);

enum class StateKind : uint8_t { Keys, Values };

struct ModelGraph {
  graph::Graph graph;
  int64_t vocab_size = 0;
  int64_t n_ctx = 0;  // positions one sequence may reach (choose_context; not in the graph)
  int64_t n_ctx_train = 0;
  int64_t n_layers = 0;
  int64_t block_size = 16;  // the cache blocks attention reads through the tables
  // The sliding window of the layers that keep their own pool (window > 0): their states are the
  // ones state_windowed marks, written through the window_slots / window_block_tables inputs.
  int64_t window = 0;
  std::vector<StateKind> state_kinds;  // per graph.leaves(Op::State)
  std::vector<bool> state_windowed;    // per graph.leaves(Op::State)
  std::vector<bool> state_recurrent;   // per graph.leaves(Op::State): [R, ...] slots (kv/recurrent.h)
  std::string summary;                 // one line of hyper-parameters for logs
};

struct HfAdapter;  // hf.h

// One registry row: a family as both formats reach it.
struct Architecture {
  std::string_view name;  // GGUF general.architecture
  std::vector<std::string_view> hf_model_types;
  Result<ModelGraph> (*from_gguf)(const formats::GgufFile& file, const WeightIndex& weights,
                                  const BuildOptions& opt);
  // config.json -> the keys from_gguf reads, HF tensor names -> GGUF's (hf.h); nullptr: GGUF only.
  const HfAdapter* hf = nullptr;
};

// nullptr when unknown.
const Architecture* find_architecture(std::string_view gguf_name);
std::vector<std::string_view> architecture_names();

}  // namespace glass::models
