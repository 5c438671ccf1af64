#pragma once
// What a loaded Model holds: the mapped file (or an HF directory's config as GGUF metadata and its
// safetensors mappings), tokenizer, built graph, backend and plan cache. Everything here is immutable after
// load except the plan cache, which is internally locked.
#include <functional>
#include <memory>
#include <optional>

#include "backend/backend.h"
#include "backend/plan_cache.h"
#include "formats/gguf.h"
#include "grammar/token_index_slot.h"
#include "glass/llm.h"
#include "models/architecture.h"
#include "runtime/chat_template_source.h"
#include "tokenizer/tokenizer.h"

namespace glass {

// The error for what needs text on a model without a vocabulary (GGUF tokenizer.ggml.model =
// "no_vocab": weights only, as llama-bench's test files).
inline Error no_vocabulary(const std::string& path) {
  return make_error(ErrorCode::Unsupported,
                    path + " has no vocabulary (tokenizer.ggml.model = \"no_vocab\"): text needs one; this model "
                           "takes token ids only (glass bench, logits --tokens, verify --tokens, graph)");
}

struct Model::Impl {
  ModelInfo info;
  LoadOptions options;
  std::optional<formats::GgufFile> file;
  std::optional<tokenizer::Tokenizer> tokenizer;
  models::WeightIndex weights;
  std::shared_ptr<const void> storage;  // HF checkpoints: the shards' mappings, derived tensors
  // The file mappings the weights point into (the GGUF file, or an HF checkpoint's shards).
  std::vector<std::shared_ptr<const formats::MappedFile>> weight_mappings;
  models::ModelGraph model_graph;
  uint64_t graph_hash = 0;
  std::unique_ptr<backend::Backend> backend;
  mutable backend::PlanCache plans;
  ChatTemplateSlot chat;
  // Constrained decoding's view of the vocabulary (token bytes and their trie), made on first use.
  grammar::TokenIndexSlot token_index;

  // The plan for steps of at most max_t tokens (decode: 1; prefill: n_batch), compiled on first use.
  Result<std::shared_ptr<backend::Plan>> plan(int64_t max_t) const;
  // The same for another graph over these weights (a session's captures: Session::set_capture).
  Result<std::shared_ptr<backend::Plan>> plan(int64_t max_t, const graph::Graph& g, uint64_t hash) const;
  backend::WeightResolver weight_resolver() const;
};

// Loads like load_llm, but replaces the architecture's graph by rewrite(graph) before anything
// compiles. For graph experiments, and for tests proving that the conformance checks catch broken
// graphs; nothing in the normal load path passes a rewrite.
using GraphRewrite = std::function<Result<graph::Graph>(const graph::Graph&)>;
Result<std::shared_ptr<Model>> load_llm_rewritten(const std::string& path, const LoadOptions& options,
                                                  const GraphRewrite& rewrite);

}  // namespace glass
