// load_llm and the immutable Model: map the file (GGUF: one file, a split model's shards or a folder's
// model, formats/gguf_shards.h; or an HF directory: runtime/hf_source.cpp),
// read the tokenizer, build the architecture's graph against the file's tensors, and pick the backend.
// Plans compile on first use and are cached.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>

#include "core/exception_guard.h"
#include "formats/gguf_shards.h"
#include "formats/gguf_vocab.h"
#include "formats/quant_check.h"
#include "formats/quant_mix.h"
#include "glass/tools.h"
#include "graph/printer.h"
#include "graph/serialize.h"
#include "models/blocks.h"
#include "runtime/chat_load.h"
#include "runtime/hf_source.h"
#include "runtime/model_impl.h"

namespace glass {

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

const ModelInfo& Model::info() const { return impl_->info; }

Result<std::shared_ptr<backend::Plan>> Model::Impl::plan(int64_t max_t) const {
  return plan(max_t, base->mg.graph, base->hash, options.batch_invariant);
}

Result<std::shared_ptr<backend::Plan>> Model::Impl::plan(int64_t max_t, const graph::Graph& g, uint64_t hash,
                                                         bool batch_invariant) const {
  backend::CompileOptions opt;
  opt.max[graph::Sym::T] = max_t;
  opt.max[graph::Sym::S] = info.n_ctx;
  opt.max[graph::Sym::O] = max_t;  // logits of every token at most
  // The pools' sizes are the sessions': any a step's int32 rows and ids can address.
  for (graph::Sym sym : {graph::Sym::C, graph::Sym::W, graph::Sym::N, graph::Sym::M, graph::Sym::R})
    opt.max[sym] = std::numeric_limits<int32_t>::max();
  opt.decompose_composites = options.decompose;
  opt.fuse = options.fuse;
  opt.batch_invariant = batch_invariant;
  return plans.get(*backend, g, hash, weight_resolver(), opt);
}

namespace {
// Positions, cache slots and block ids are int32 step inputs: a size past that range cannot be
// represented, and the cache's byte counts (rows x heads x head_dim) would overflow on the way.
Status within_int32(std::string_view who, std::initializer_list<std::pair<const char*, int64_t>> fields) {
  for (const auto& [name, value] : fields)
    if (value > std::numeric_limits<int32_t>::max())
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("{}: {} = {} is more than the 2147483647 positions glass represents", who,
                                    name, value));
  return {};
}
}  // namespace

Result<Model::Impl::SessionShape> Model::Impl::resolve(const SessionOptions& o) const {
  if (o.kv_size < 0 || o.kv_size_window < 0 || o.kv_block_size < 0 || o.n_seq_max < 0 ||
      o.n_seq_max > kv::kMaxSequences)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("session: kv_size, kv_size_window and kv_block_size must not be negative, "
                                  "n_seq_max must be in [0, {}] (0: the model's)",
                                  kv::kMaxSequences));
  if (Status st = within_int32("session", {{"kv_size", o.kv_size},
                                           {"kv_size_window", o.kv_size_window},
                                           {"kv_block_size", o.kv_block_size},
                                           {"n_seq_max", o.n_seq_max}});
      !st)
    return st.error();
  SessionShape r{build, pools};
  if (o.kv_size > 0) r.pools.kv_size = o.kv_size;
  if (o.kv_block_size > 0) r.build.kv_block_size = r.pools.block_size = o.kv_block_size;
  if (o.n_seq_max > 0) r.pools.n_seq_max = o.n_seq_max;
  if (o.kv_size_window > 0) r.pools.kv_size_window = o.kv_size_window;
  if (o.kv_storage) r.pools.dense = *o.kv_storage == KvStorage::Dense;
  if (o.cache_type)
    r.build.kv_dtype = *o.cache_type == CacheType::F16 ? graph::DType::F16 : graph::DType::F32;
  return r;
}

Result<std::shared_ptr<const ShapedGraph>> Model::Impl::graph_for(const models::BuildOptions& b) const {
  const auto key = std::make_pair(b.kv_block_size, b.kv_dtype);
  if (key == std::make_pair(build.kv_block_size, build.kv_dtype)) return base;
  std::lock_guard lock(shapes_mu);
  if (auto it = shapes.find(key); it != shapes.end()) return it->second;
  auto mg = arch->from_gguf(*file, weights, b);
  if (!mg) return mg.error();
  auto shaped = std::make_shared<ShapedGraph>();
  shaped->mg = std::move(*mg);
  if (rewrite) {
    auto rewritten = rewrite(shaped->mg.graph);
    if (!rewritten) return rewritten.error();
    shaped->mg.graph = std::move(*rewritten);
    models::index_states(shaped->mg);
  }
  shaped->hash = shaped->mg.graph.hash();
  shapes.emplace(key, shaped);
  return std::shared_ptr<const ShapedGraph>(std::move(shaped));
}

backend::WeightResolver Model::Impl::weight_resolver() const {
  return [this](const graph::Node& n) -> Result<const void*> {
    const auto it = weights.find(n.name);
    if (it == weights.end())
      return make_error(ErrorCode::InvalidFile,
                        fmt::format("model: no tensor '{}' in {}", n.name, info.path));
    return it->second.data;
  };
}

namespace {
// The default context as llama.cpp's (-c 0 with --fit): the training context, as far as half the
// memory the weights leave holds its cache (the rule glass serve sizes its pool by), and never below
// the build's own default (min(training context, 4096), at least min_ctx). 0 where that default
// stands: the cache does not grow with the context (a kv_size pool) or already covers training.
// At most kMaxDefaultContext: some buffers outside the cache grow with the context too (block
// tables, the plans' per-position inputs: ~40 bytes a position on the ref backend), so a small file
// claiming a training context of 2^31 must not size them by memory (that took 15.6 GB to run).
constexpr int64_t kMaxDefaultContext = 131072;  // Llama 3's and Gemma 3's training context
// Bytes one row of the KV pool takes: the states whose rows are the pool's (a sliding-window
// layer's own pool does not grow with the context or --kv-size and is left out).
uint64_t pool_bytes_per_row(const models::ModelGraph& mg) {
  graph::Bindings one_row;
  one_row[graph::Sym::C] = 1;
  uint64_t bytes = 0;
  const std::vector<graph::NodeId> states = mg.graph.leaves(graph::Op::State);
  for (size_t i = 0; i < states.size(); ++i) {
    if ((i < mg.state_windowed.size() && mg.state_windowed[i]) ||
        (i < mg.state_recurrent.size() && mg.state_recurrent[i]))
      continue;
    const graph::Node& n = mg.graph.nodes[static_cast<size_t>(states[i])];
    const auto b =
        graph::dtype_bytes(n.dtype, static_cast<uint64_t>(graph::resolve(n.shape, one_row).numel()));
    if (b) bytes += *b;
  }
  return bytes;
}

int64_t context_that_fits(const models::ModelGraph& mg, uint64_t weight_bytes) {
  if (mg.n_ctx >= mg.n_ctx_train || mg.n_ctx <= 0) return 0;
  const uint64_t per_position = pool_bytes_per_row(mg);
  const uint64_t memory = memory_limit();
  if (per_position == 0 || memory <= weight_bytes) return 0;
  const uint64_t fits = (memory - weight_bytes) / 2 / per_position;
  const int64_t n = std::min({mg.n_ctx_train, kMaxDefaultContext,
                              static_cast<int64_t>(std::min<uint64_t>(fits, kMaxDefaultContext))});
  return n > mg.n_ctx ? n : 0;
}

// The GGUF's tokenizer, its token count checked against the model's vocabulary first. llama.cpp's
// "no_vocab" files (what llama-bench benchmarks) carry weights only: they load without one, and
// what needs text says so (Model::tokenize, generate, chat).
Status load_gguf_tokenizer(Model::Impl& impl, int64_t vocab_size) {
  const formats::GgufFile& file = *impl.file;
  const auto tok_model = file.find("tokenizer.ggml.model") != nullptr
                             ? file.get_string("tokenizer.ggml.model")
                             : Result<std::string>(std::string());
  if (tok_model && *tok_model == "no_vocab") return {};
  if (const formats::GgufValue* tokens = file.find("tokenizer.ggml.tokens");
      tokens != nullptr && tokens->type == formats::GgufValueType::ARRAY &&
      tokens->count != static_cast<uint64_t>(vocab_size))
    return make_error(ErrorCode::InvalidFile,
                      fmt::format("model: {}: tokenizer has {} tokens but the model's vocabulary is {}",
                                  file.path(), tokens->count, vocab_size));
  auto vocab = formats::vocab_from_gguf(file);
  if (!vocab) return vocab.error();
  auto tok = tokenizer::Tokenizer::create(std::move(*vocab));
  if (!tok) return tok.error();
  impl.tokenizer = std::move(*tok);
  return {};
}

}  // namespace

Result<std::shared_ptr<Model>> load_llm(const std::string& path, const LoadOptions& options) {
  return load_llm_rewritten(path, options, {});
}

// No exception leaves loading (core/exception_guard.h): a hostile file that gets an allocation past
// the checks is an error naming the path.
Result<std::shared_ptr<Model>> load_llm_rewritten(const std::string& path, const LoadOptions& options,
                                                  const GraphRewrite& rewrite) try {
  const auto t0 = std::chrono::steady_clock::now();
  auto impl = std::make_unique<Model::Impl>();
  impl->options = options;
  if (options.kv_size < 0 || options.kv_size_window < 0 || options.kv_block_size <= 0 ||
      options.n_seq_max <= 0 || options.n_seq_max > kv::kMaxSequences)
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("load: kv_size and kv_size_window must not be negative, kv_block_size must be "
                    "positive and n_seq_max in [1, {}]",
                    kv::kMaxSequences));
  if (Status st = within_int32("load", {{"n_ctx", options.n_ctx},
                                        {"min_ctx", options.min_ctx},
                                        {"n_batch", options.n_batch},
                                        {"kv_size", options.kv_size},
                                        {"kv_size_window", options.kv_size_window},
                                        {"kv_block_size", options.kv_block_size}});
      !st)
    return st.error();
  models::BuildOptions build;
  build.n_ctx = options.n_ctx;
  build.min_ctx = options.min_ctx;
  build.kv_dtype = options.cache_type == CacheType::F16 ? graph::DType::F16 : graph::DType::F32;
  build.kv_block_size = options.kv_block_size;
  auto format = detect_model_format(path);
  if (!format) return format.error();
  uint64_t file_bytes = 0;
  const models::Architecture* arch = nullptr;
  if (*format == ModelFormat::HfDirectory) {
    auto hf = open_hf_source(path, *impl, build);
    if (!hf) return hf.error();
    arch = hf->arch;
    file_bytes = hf->file_bytes;
  } else {
    // One file, a split model's shards or a folder holding either: the weights stay in the mappings.
    auto shards = formats::GgufShards::open(path);
    if (!shards) return shards.error();
    for (const formats::GgufTensorInfo* t : shards->tensors()) {
      int64_t n = 1;
      for (const int64_t d : t->shape) n *= d;
      if (const auto bad = formats::find_bad_block(t->dtype, t->data, n))
        return make_error(
            ErrorCode::InvalidFile,
            fmt::format("model: tensor '{}' ({}) in {}: block {} has scale {} = {}; no quantizer "
                        "writes that (a damaged file?)",
                        t->name, graph::dtype_name(t->dtype), path, bad->block, bad->field, bad->value));
      impl->weights.emplace(t->name, models::WeightInfo{t->shape, t->dtype, t->data});
    }
    impl->weight_mappings = shards->mappings();
    file_bytes = shards->file_bytes();
    impl->file.emplace(std::move(*shards).take_metadata());  // last: the shards are spent
  }

  auto arch_name = impl->file->get_string("general.architecture");
  if (!arch_name) return arch_name.error();
  if (arch == nullptr) arch = models::find_architecture(*arch_name);
  if (arch == nullptr)
    return make_error(ErrorCode::Unsupported,
                      fmt::format("model: architecture '{}' in {} is not supported (supported: {})",
                                  *arch_name, path, fmt::join(models::architecture_names(), ", ")));

  if (auto st = load_chat_template(*impl, *format, path); !st) return st.error();

  if (options.n_ctx < 0 || options.n_batch < 0 || options.min_ctx < 0)
    return make_error(ErrorCode::InvalidArgument, "load: n_ctx, min_ctx and n_batch must not be negative");
  auto mg = arch->from_gguf(*impl->file, impl->weights, build);
  if (mg && options.n_ctx == 0 && options.kv_size == 0)
    if (const int64_t fit = context_that_fits(*mg, file_bytes); fit > 0)
      mg->n_ctx = fit;  // the graph does not depend on it: built once
  if (!mg) return *format == ModelFormat::HfDirectory ? hf_build_error(mg.error(), path) : mg.error();
  auto base = std::make_shared<ShapedGraph>();
  base->mg = std::move(*mg);
  models::ModelGraph& base_mg = base->mg;
  build.n_ctx = base_mg.n_ctx;  // other shapes keep this context (the plans' S)
  impl->arch = arch;
  impl->build = build;
  impl->pools = {.n_ctx = base_mg.n_ctx,
                 .block_size = base_mg.block_size,
                 .kv_size = options.kv_size,
                 .n_seq_max = options.n_seq_max,
                 .kv_size_window = options.kv_size_window,
                 .n_batch = options.n_batch,
                 .window = base_mg.window,
                 .dense = options.kv_storage == KvStorage::Dense,
                 .recurrent = std::find(base_mg.state_recurrent.begin(), base_mg.state_recurrent.end(),
                                        true) != base_mg.state_recurrent.end()};
  impl->rewrite = rewrite;
  // The vocabulary after the graph: a file whose tensors make no model is refused before its
  // token list (millions of entries, in a hostile file) is built into a tokenizer.
  if (*format == ModelFormat::Gguf)
    if (Status st = load_gguf_tokenizer(*impl, base_mg.vocab_size); !st) return st.error();
  if (rewrite) {
    auto rewritten = rewrite(base_mg.graph);
    if (!rewritten) return rewritten.error();
    base_mg.graph = std::move(*rewritten);
    // A rewrite may add or drop state (e.g. a layer given its own KV cache): re-derive the kinds.
    models::index_states(base_mg);
  }
  base->hash = base_mg.graph.hash();
  impl->base = base;
  // HF checkpoints often pad the embedding past the tokenizer (llama.cpp's converter pads the
  // vocabulary instead); the extra rows are ids no text maps to.
  const bool vocab_fits = !impl->tokenizer || (*format == ModelFormat::HfDirectory
                                                   ? impl->tokenizer->vocab_size() <= base_mg.vocab_size
                                                   : impl->tokenizer->vocab_size() == base_mg.vocab_size);
  if (!vocab_fits)
    return make_error(ErrorCode::InvalidFile,
                      fmt::format("model: tokenizer has {} tokens but the model's vocabulary is {}",
                                  impl->tokenizer->vocab_size(), base_mg.vocab_size));

  backend::BackendOptions backend_options{
      options.n_threads, options.repack_weights, {}, options.isa, options.decode_strategy};
  // A repacked weight's file pages leave memory (they stay in the page cache), so the model holds
  // one copy of it. A weight lies in one mapping; release ignores ranges outside its own.
  // A weight's parts are copied by the backend's worker threads at once: the running total and the
  // progress calls are serialized here.
  struct Repacked {
    std::mutex mu;
    uint64_t bytes = 0;
  };
  auto repacked = std::make_shared<Repacked>();
  backend_options.weight_copied = [mappings = impl->weight_mappings, repacked, file_bytes,
                                   progress = options.on_progress](const void* data, size_t bytes) {
    for (const auto& m : mappings) m->release(data, bytes);
    if (!progress) return;
    std::lock_guard lock(repacked->mu);
    repacked->bytes += bytes;
    progress(LoadProgress{"repack", std::min<uint64_t>(repacked->bytes, file_bytes), file_bytes});
  };
  auto be = backend::make_backend(options.backend, backend_options);
  if (!be) return be.error();
  impl->backend = std::move(*be);

  // Both plans compile now, so an unsupported op/dtype/backend combination fails at load, naming the
  // missing kernel, never at the first token.
  ModelInfo& info = impl->info;
  info.path = path;
  info.architecture = *arch_name;
  info.summary = base_mg.summary;
  info.backend = impl->backend->describe();
  info.vocab_size = base_mg.vocab_size;
  info.n_ctx = base_mg.n_ctx;
  info.n_ctx_train = base_mg.n_ctx_train;
  info.n_layers = base_mg.n_layers;
  const kv::StateSpec pools = kv::size_pools(impl->pools);
  info.kv_size = pools.groups[0].rows;
  info.kv_bytes_per_row = pool_bytes_per_row(base_mg);
  // A step never writes more rows than the pool holds (several sequences' tokens may share a step).
  info.n_batch = kv::choose_batch(options.n_batch, info.n_ctx, info.kv_size);
  const int windowed = kv::windowed_group(pools);
  info.kv_size_window = windowed >= 0 ? pools.groups[static_cast<size_t>(windowed)].rows : 0;
  info.kv_block_size = pools.groups[0].block_size;
  info.n_seq_max = pools.n_seq;
  info.file_bytes = file_bytes;
  std::map<graph::DType, uint64_t> bytes_by_type;
  for (const auto& [name, w] : impl->weights) {
    uint64_t n = 1;
    for (int64_t d : w.shape) n *= static_cast<uint64_t>(d);
    const uint64_t nbytes = graph::dtype_bytes(w.dtype, n).value_or(0);  // sizes were checked at open
    info.n_params += n;
    info.weight_bytes += nbytes;
    bytes_by_type[w.dtype] += nbytes;
  }
  const auto most = std::max_element(bytes_by_type.begin(), bytes_by_type.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most != bytes_by_type.end()) info.weight_type = std::string(graph::dtype_name(most->first));
  if (auto ft = impl->file->get_u32("general.file_type"); ft)
    for (const formats::FileTypeInfo& t : formats::file_types())
      if (static_cast<uint32_t>(t.ftype) == *ft) info.file_type = t.label;
  if (info.file_type.empty())
    for (const char c : info.weight_type)
      info.file_type += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (int64_t max_t : {info.n_batch, int64_t{1}})
    if (auto plan = impl->plan(max_t); !plan) return plan.error();
  info.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return std::make_shared<Model>(std::move(impl));
} catch (...) {
  return error_from_exception("load", path, std::current_exception());
}

Result<std::vector<int32_t>> Model::tokenize(std::string_view text, bool add_special,
                                             bool parse_special) const {
  if (!impl_->tokenizer) return no_vocabulary(impl_->info.path);
  return impl_->tokenizer->encode(text, add_special, parse_special);
}

// Without a vocabulary (no_vocab) a token has no text and nothing ends generation.
std::string Model::token_to_piece(int32_t id) const {
  return impl_->tokenizer ? impl_->tokenizer->token_to_piece(id) : std::string();
}
std::string Model::detokenize(const std::vector<int32_t>& ids) const {
  return impl_->tokenizer ? impl_->tokenizer->decode(ids) : std::string();
}
bool Model::is_end_of_generation(int32_t id) const {
  return impl_->tokenizer && impl_->tokenizer->is_eog(id);
}
uint64_t Model::plans_compiled() const { return impl_->plans.compiles(); }

Result<std::string> Model::graph(GraphFormat format, bool after_rewrites) const {
  const graph::Graph* g = &impl_->base->mg.graph;
  std::string log;
  if (after_rewrites) {
    auto plan = impl_->plan(impl_->info.n_batch);
    if (!plan) return plan.error();
    g = &(*plan)->compiled_graph();
    for (const std::string& r : (*plan)->rewrites().fired) log += "rewrite " + r + "\n";
    if (log.empty()) log = "rewrite (none fired: the backend has a kernel for every node)\n";
  }
  switch (format) {
    case GraphFormat::Text:
      return graph::to_text(*g) + log;
    case GraphFormat::Dot:
      return graph::to_dot(*g);
    case GraphFormat::Json:
      return graph::to_json(*g, 1) + "\n";
  }
  return make_error(ErrorCode::InvalidArgument, "graph: unknown format");
}

}  // namespace glass
