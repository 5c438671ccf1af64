// glass/tools.h: the tools' library calls over the modules that do the work (formats/quantize_file.h,
// models/hf_to_gguf.h, tokenizer/, backend/cpu/read_bandwidth.h, backend/cpu/isa.h). Chat templates
// rendered alone: tools_chat_template.cpp.
#include "glass/tools.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "backend/backend.h"
#include "backend/cpu/isa.h"
#include "backend/cpu/read_bandwidth.h"
#include "backend/cpu/thread_pool.h"
#include "core/exception_guard.h"
#include "formats/gguf.h"
#include "formats/gguf_shards.h"
#include "formats/gguf_vocab.h"
#include "formats/quantize_file.h"
#include "models/hf_to_gguf.h"
#include "runtime/hf_source.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace glass {
namespace {

QuantizedTensorInfo tensor_info(const formats::QuantizedTensor& t) {
  return QuantizedTensorInfo{t.name,
                             t.shape,
                             std::string(graph::dtype_name(t.from)),
                             std::string(graph::dtype_name(t.to)),
                             t.quantizable,
                             t.fallback,
                             t.bytes_in,
                             t.bytes_out,
                             t.input_done,
                             t.input_total};
}

Result<tokenizer::Tokenizer> tokenizer_from_gguf(const std::filesystem::path& path) {
  auto shards = formats::GgufShards::open(path);  // a split model's vocabulary is in its first shard
  if (!shards) return shards.error();
  const formats::GgufFile* file = &shards->metadata();
  Result<tokenizer::Vocab> vocab = formats::vocab_from_gguf(*file);
  if (!vocab) {
    // llama.cpp's weights-only files: say what they are rather than "unsupported tokenizer".
    auto tok_model = file->find("tokenizer.ggml.model") ? file->get_string("tokenizer.ggml.model")
                                                        : Result<std::string>(std::string());
    if (tok_model && *tok_model == "no_vocab")
      return make_error(ErrorCode::Unsupported,
                        fmt::format("{} has no vocabulary (tokenizer.ggml.model = \"no_vocab\"): there is "
                                    "nothing to tokenize with",
                                    path.string()));
    return vocab.error();
  }
  return tokenizer::Tokenizer::create(std::move(vocab).value());
}

// Threads a tool may ask for: the command line's own bound (cli/common.cpp), so that a mistyped count
// is an error rather than thousands of threads.
constexpr int kMostThreads = 1024;

}  // namespace

std::vector<std::string> quantize_type_names() {
  std::vector<std::string> names;
  for (const auto& t : formats::file_types()) names.emplace_back(t.name);
  return names;
}

Result<QuantizeReport> quantize_model(const std::string& input, const std::string& output,
                                      const QuantizeOptions& options) try {
  const auto ftype = formats::file_type_from_name(options.type);
  if (!ftype)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("quantize: unknown type '{}': {} (q3_k, q4_k, q5_k: the _m mixes)",
                                  options.type, fmt::join(quantize_type_names(), ", ")));
  if (options.n_threads > kMostThreads)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("quantize: {} threads: at most {} (0: one per hardware thread)",
                                  options.n_threads, kMostThreads));
  auto format = detect_model_format(input);
  if (!format) return format.error();
  backend::cpu::ThreadPool pool(options.n_threads);
  formats::QuantizeOptions o;
  o.ftype = *ftype;
  o.pure = options.pure;
  o.allow_requantize = options.allow_requantize;
  o.split_max_bytes = options.split_max_bytes;
  o.split_max_tensors = options.split_max_tensors;
  o.parallel = [&pool](int64_t n, const std::function<void(int64_t)>& body) {
    backend::cpu::parallel_for(pool, n, 1, [&](int64_t begin, int64_t end, int) {
      for (int64_t i = begin; i < end; ++i) body(i);
    });
  };
  if (options.on_tensor)
    o.on_tensor = [&options](const formats::QuantizedTensor& t) { options.on_tensor(tensor_info(t)); };
  auto r = *format == ModelFormat::HfDirectory ? models::hf_to_gguf(input, output, o)
                                               : formats::quantize_gguf(input, output, o);
  if (!r) return r.error();
  QuantizeReport report;
  report.type = std::string(formats::file_type_info(*ftype).name);
  report.tensors.reserve(r->tensors.size());
  for (const auto& t : r->tensors) report.tensors.push_back(tensor_info(t));
  report.bytes_in = r->bytes_in;
  report.bytes_out = r->bytes_out;
  for (const auto& f : r->files) report.files.push_back(f.string());
  report.n_elements = r->n_elements;
  report.n_threads = pool.size();
  return report;
} catch (...) {
  return error_from_exception("quantize", input, std::current_exception());
}

struct TextTokenizer::Impl {
  tokenizer::Tokenizer tok;
};

TextTokenizer::TextTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TextTokenizer::~TextTokenizer() = default;

Result<std::unique_ptr<TextTokenizer>> TextTokenizer::load(const std::string& path) try {
  const std::filesystem::path p = path;
  std::error_code ec;
  // An HF directory or a .json file is an HF tokenizer; anything else is read as GGUF.
  auto tok = (std::filesystem::is_directory(p, ec) && is_hf_directory(p)) || p.extension() == ".json"
                 ? tokenizer::load_hf_tokenizer(p)
                 : tokenizer_from_gguf(p);
  if (!tok) return tok.error();
  return std::make_unique<TextTokenizer>(std::make_unique<Impl>(Impl{std::move(tok).value()}));
} catch (...) {
  return error_from_exception("tokenizer", path, std::current_exception());
}

Result<std::vector<int32_t>> TextTokenizer::tokenize(std::string_view text, bool add_special,
                                                     bool parse_special) const try {
  return impl_->tok.encode(text, add_special, parse_special);
} catch (...) {
  return error_from_exception("tokenize", std::current_exception());
}

Result<std::string> TextTokenizer::detokenize(std::span<const int32_t> ids, bool skip_special) const try {
  for (int32_t id : ids)
    if (id < 0 || id >= impl_->tok.vocab_size())
      return make_error(ErrorCode::InvalidArgument, fmt::format("detokenize: id {} is out of range [0, {})",
                                                                id, impl_->tok.vocab_size()));
  // As transformers' decode and llama.cpp's detokenize: with the tokenizer's configured clean-up.
  return impl_->tok.decode(std::vector<int32_t>(ids.begin(), ids.end()),
                           tokenizer::DecodeOptions{!skip_special, true});
} catch (...) {
  return error_from_exception("detokenize", std::current_exception());
}

std::string TextTokenizer::token_text(int32_t id) const { return impl_->tok.token_text(id); }
int64_t TextTokenizer::vocab_size() const { return impl_->tok.vocab_size(); }

Result<ReadBandwidth> measure_read_bandwidth(size_t bytes, int passes, int n_threads) try {
  if (n_threads > kMostThreads)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("read bandwidth: {} threads: at most {}", n_threads, kMostThreads));
  backend::cpu::ThreadPool pool(n_threads);
  return backend::cpu::measure_read_bandwidth(pool, bytes, passes);
} catch (...) {
  return error_from_exception("read bandwidth", std::current_exception());
}

std::vector<CpuKernelTier> cpu_kernel_tiers() {
  namespace cpu = backend::cpu;
  std::vector<CpuKernelTier> tiers;
  for (auto t = static_cast<uint8_t>(cpu::Isa::kSentinel); t-- > 0;) {
    const auto isa = static_cast<cpu::Isa>(t);
    tiers.push_back({std::string(cpu::isa_name(isa)), isa <= cpu::detect_isa()});
  }
  return tiers;
}

Result<std::vector<std::string>> kernel_table(std::string_view backend) {
  auto be = backend::make_backend(backend, backend::BackendOptions{.n_threads = 1, .repack_weights = false});
  if (!be) return be.error();
  return (*be)->kernel_table();
}

uint64_t memory_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  uint64_t bytes = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    uint64_t limit = 0;
    if (in >> limit && limit > 0 && (bytes == 0 || limit < bytes)) bytes = limit;  // "max" reads as no number
  }
  return bytes;
}

}  // namespace glass
