#pragma once
// What a loaded Model holds: the mapped file (or an HF directory's config as GGUF metadata and its
// safetensors mappings), tokenizer, built graph, backend and plan cache. Everything here is immutable after
// load except the plan cache, which is internally locked.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "backend/backend.h"
#include "backend/plan_cache.h"
#include "formats/gguf.h"
#include "glass/llm.h"
#include "grammar/token_index_slot.h"
#include "kv/sizing.h"
#include "models/architecture.h"
#include "runtime/chat_template_source.h"
#include "tokenizer/tokenizer.h"

namespace glass {

// The error for what needs text on a model without a vocabulary (GGUF tokenizer.ggml.model =
// "no_vocab": weights only, as llama-bench's test files).
inline Error no_vocabulary(const std::string& path) {
  return make_error(
      ErrorCode::Unsupported,
      path +
          " has no vocabulary (tokenizer.ggml.model = \"no_vocab\"): text needs one; this model "
          "takes token ids only (glass bench, logits --tokens, verify --tokens, graph)");
}

// Loads like load_llm, but replaces the architecture's graph by rewrite(graph) before anything
// compiles. For graph experiments, and for tests proving that the conformance checks catch broken
// graphs; nothing in the normal load path passes a rewrite.
using GraphRewrite = std::function<Result<graph::Graph>(const graph::Graph&)>;

// The model's graph for one cache shape (a session's resolved SessionOptions), and its hash.
struct ShapedGraph {
  models::ModelGraph mg;
  uint64_t hash = 0;
};

struct Model::Impl {
  ModelInfo info;
  LoadOptions options;
  std::optional<formats::GgufFile> file;
  std::optional<tokenizer::Tokenizer> tokenizer;
  models::WeightIndex weights;
  std::shared_ptr<const void> storage;  // HF checkpoints: the shards' mappings, derived tensors
  // The file mappings the weights point into (the GGUF file, or an HF checkpoint's shards).
  std::vector<std::shared_ptr<const formats::MappedFile>> weight_mappings;
  // The graph for LoadOptions' cache shape; other shapes are built from the same declaration on a
  // session's first use (graph_for) and kept.
  std::shared_ptr<const ShapedGraph> base;
  const models::Architecture* arch = nullptr;
  models::BuildOptions build;  // the load's, n_ctx resolved
  kv::PoolRequest pools;       // the load's pool sizes: the defaults of sessions
  GraphRewrite rewrite;
  // Graphs differ by what the model declares with the cache's block size and element type; the
  // pools' sizes are symbols bound per session.
  mutable std::mutex shapes_mu;
  mutable std::map<std::pair<int64_t, graph::DType>, std::shared_ptr<const ShapedGraph>> shapes;
  std::unique_ptr<backend::Backend> backend;
  mutable backend::PlanCache plans;
  ChatTemplateSlot chat;
  // Constrained decoding's view of the vocabulary (token bytes and their trie), made on first use.
  grammar::TokenIndexSlot token_index;

  // The plan for steps of at most max_t tokens (decode: 1; prefill: n_batch), compiled on first use.
  Result<std::shared_ptr<backend::Plan>> plan(int64_t max_t) const;
  // The same for another graph over these weights (another cache shape, a session's captures).
  Result<std::shared_ptr<backend::Plan>> plan(int64_t max_t, const graph::Graph& g, uint64_t hash,
                                              bool batch_invariant) const;
  // What a session's options resolve to (InvalidArgument naming a field out of range): the graph's
  // build options and the pools' sizes.
  struct SessionShape {
    models::BuildOptions build;
    kv::PoolRequest pools;
  };
  Result<SessionShape> resolve(const SessionOptions& o) const;
  // The graph for those build options: the base one, or one built on first use.
  Result<std::shared_ptr<const ShapedGraph>> graph_for(const models::BuildOptions& b) const;
  backend::WeightResolver weight_resolver() const;
};

Result<std::shared_ptr<Model>> load_llm_rewritten(const std::string& path, const LoadOptions& options,
                                                  const GraphRewrite& rewrite);

}  // namespace glass
