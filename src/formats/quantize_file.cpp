// quantize_gguf: reads the model, decides every tensor's type, writes metadata and tensors.
#include "formats/quantize_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

#include "formats/gguf.h"
#include "formats/gguf_detail.h"
#include "formats/gguf_shards.h"
#include "formats/gguf_writer.h"
#include "formats/quant.h"
#include "formats/quantize.h"

namespace glass::formats {
namespace {

using graph::DType;

// Rows are converted in chunks of about this many elements (16 MiB of f32).
constexpr int64_t kChunkElements = int64_t{1} << 22;
// llama.cpp's GGML_QNT_VERSION: the quantization format revision files declare.
constexpr uint32_t kQuantizationVersion = 2;

GgufValue u32_value(uint32_t v) {
  GgufValue value;
  value.type = GgufValueType::U32;
  value.u64 = v;
  return value;
}

// An integer metadata value, or the first element of an integer array (per-layer head counts).
std::optional<int64_t> integer(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.find(key);
  if (v == nullptr) return std::nullopt;
  const GgufValue& s = v->type == GgufValueType::ARRAY && v->count > 0 ? v->element(0) : *v;
  switch (s.type) {
    case GgufValueType::U8:
    case GgufValueType::U16:
    case GgufValueType::U32:
    case GgufValueType::U64:
      return static_cast<int64_t>(s.u64);
    case GgufValueType::I8:
    case GgufValueType::I16:
    case GgufValueType::I32:
    case GgufValueType::I64:
      return s.i64;
    default:
      return std::nullopt;
  }
}

Result<MixModel> mix_model(const GgufFile& f, bool need_layers) {
  MixModel m;
  if (const GgufValue* arch = f.find("general.architecture");
      arch != nullptr && arch->type == GgufValueType::STRING)
    m.arch = std::string(arch->str);
  const auto layers = integer(f, m.arch + ".block_count");
  if (!layers && need_layers)
    return make_error(
        ErrorCode::InvalidFile,
        fmt::format("quantize: {}: key '{}.block_count' is missing (the mix rules count layers)", f.path(),
                    m.arch));
  m.n_layers = layers.value_or(0);
  m.n_heads = integer(f, m.arch + ".attention.head_count").value_or(0);
  m.n_kv_heads = integer(f, m.arch + ".attention.head_count_kv").value_or(m.n_heads);
  m.n_experts = integer(f, m.arch + ".expert_count").value_or(0);
  return m;
}

// The input's metadata with the split keys of sharded files dropped (the output is one file), then
// general.quantization_version and general.file_type, moved to the end as llama.cpp's gguf_set_val
// does: together with the same data, the file is byte-identical to llama-quantize's.
std::vector<std::pair<std::string, GgufValue>> output_metadata(const GgufFile& f, FileType ftype) {
  std::vector<std::pair<std::string, GgufValue>> out;
  for (const auto& [key, value] : f.metadata()) {
    if (key == "split.no" || key == "split.count" || key == "split.tensors.count" ||
        key == "general.quantization_version" || key == "general.file_type")
      continue;
    out.emplace_back(key, value);
  }
  out.emplace_back("general.quantization_version", u32_value(kQuantizationVersion));
  out.emplace_back("general.file_type", u32_value(static_cast<uint32_t>(ftype)));
  return out;
}

bool convertible(DType from) { return from == DType::F32 || from == DType::F16 || from == DType::BF16; }

// Converts one tensor chunk by chunk into `w`, taking its rows in row_map's order when given.
Status convert(const SourceTensor& t, DType to, const QuantizeOptions& o, GgufWriter& w) {
  // Shapes are positive and their product fits (the reader or the caller checked both).
  const int64_t row = t.shape.back();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < t.shape.size(); ++d) rows *= t.shape[d];
  const uint64_t in_row_bytes = *graph::dtype_bytes(t.dtype, static_cast<uint64_t>(row));
  const uint64_t out_row_bytes = *graph::dtype_bytes(to, static_cast<uint64_t>(row));
  const int64_t chunk_rows = std::max<int64_t>(1, kChunkElements / std::max<int64_t>(row, 1));
  const bool same = to == t.dtype;  // only reordered: rows copied as they are
  std::vector<float> f32(same ? 0 : static_cast<size_t>(std::min(rows, chunk_rows) * row));
  std::vector<uint8_t> out(static_cast<size_t>(std::min(rows, chunk_rows)) * out_row_bytes);
  std::vector<Status> status(static_cast<size_t>(std::min(rows, chunk_rows)));
  const auto* src = static_cast<const uint8_t*>(t.data);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const int64_t n = std::min(chunk_rows, rows - r0);
    auto body = [&](int64_t i) {
      const int64_t from = t.row_map.empty() ? r0 + i : t.row_map[static_cast<size_t>(r0 + i)];
      const uint8_t* in = src + static_cast<uint64_t>(from) * in_row_bytes;
      uint8_t* dst = out.data() + static_cast<uint64_t>(i) * out_row_bytes;
      if (same) {
        std::memcpy(dst, in, out_row_bytes);
        return;
      }
      float* x = f32.data() + i * row;
      status[static_cast<size_t>(i)] = dequantize_row(t.dtype, in, x, row);
      if (status[static_cast<size_t>(i)].ok()) status[static_cast<size_t>(i)] = quantize_row(to, x, dst, row);
    };
    if (o.parallel) {
      o.parallel(n, body);
    } else {
      for (int64_t i = 0; i < n; ++i) body(i);
    }
    for (int64_t i = 0; i < n; ++i)
      if (!status[static_cast<size_t>(i)].ok())
        return make_error(status[static_cast<size_t>(i)].error().code,
                          fmt::format("quantize: tensor '{}' row {}: {}", t.name, r0 + i,
                                      status[static_cast<size_t>(i)].error().message));
    if (Status s = w.write(out.data(), static_cast<uint64_t>(n) * out_row_bytes); !s.ok()) return s;
  }
  return {};
}

uint64_t elements(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

}  // namespace

Result<QuantizeReport> quantize_tensors(const GgufFile& f, const std::vector<SourceTensor>& tensors,
                                        uint64_t alignment, const std::filesystem::path& out,
                                        const QuantizeOptions& options, bool kept_as_f32) {
  const FileTypeInfo& info = file_type_info(options.ftype);
  auto model = mix_model(f, graph::traits(info.base).quantized && !options.pure);
  if (!model.ok()) return model.error();

  std::vector<MixTensor> mix;
  for (const SourceTensor& t : tensors) mix.push_back({t.name, t.shape, t.dtype});
  auto choices = choose_types(*model, mix, options.ftype, options.pure);
  if (!choices.ok()) return choices.error();

  QuantizeReport report;
  std::vector<GgufTensorSpec> specs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const SourceTensor& t = tensors[i];
    const TypeChoice& c = (*choices)[i];
    DType to = c.dtype;
    if (kept_as_f32 && !c.quantizable && (to == DType::F16 || to == DType::BF16)) to = DType::F32;
    if ((to != t.dtype || !t.row_map.empty()) && !convertible(t.dtype) && !options.allow_requantize)
      return make_error(ErrorCode::Unsupported,
                        fmt::format("quantize: {}: tensor '{}' is stored as {}; requantizing to {} needs "
                                    "--allow-requantize (or start from an F32, F16 or BF16 file)",
                                    f.path(), t.name, graph::dtype_name(t.dtype), graph::dtype_name(to)));
    if (!gguf_detail::gguf_from_dtype(to))
      return make_error(ErrorCode::Unsupported,
                        fmt::format("quantize: {}: tensor '{}' would stay {}, a type GGUF files cannot hold; "
                                    "choose a type that quantizes it",
                                    f.path(), t.name, graph::dtype_name(to)));
    specs.push_back({t.name, t.shape, to});
    const uint64_t n = elements(t.shape);
    QuantizedTensor q{
        t.name, t.shape, t.dtype, to, c.quantizable, c.fallback, *graph::dtype_bytes(t.dtype, n), 0, 0, 0};
    report.tensors.push_back(std::move(q));
    report.n_elements += n;
  }

  // Which tensors go to which shard (one shard: every tensor).
  std::vector<size_t> first_of{0};  // index of each shard's first tensor
  if (options.split_max_bytes > 0 || options.split_max_tensors > 0) {
    uint64_t bytes = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      const uint64_t n = (*graph::dtype_bytes(specs[i].dtype, elements(specs[i].shape)) + alignment - 1) /
                         alignment * alignment;
      const auto in_shard = static_cast<int64_t>(i - first_of.back());
      if (in_shard > 0 && ((options.split_max_bytes > 0 && bytes + n > options.split_max_bytes) ||
                           (options.split_max_tensors > 0 && in_shard >= options.split_max_tensors))) {
        first_of.push_back(i);
        bytes = 0;
      }
      bytes += n;
    }
    if (first_of.size() > 99999)
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("quantize: {} shards; a split model holds at most 99999", first_of.size()));
  }
  const auto n_shards = static_cast<uint32_t>(first_of.size());
  const bool split = options.split_max_bytes > 0 || options.split_max_tensors > 0;
  std::filesystem::path prefix = out;
  if (prefix.extension() == ".gguf") prefix.replace_extension();
  // Shards written so far are removed if a later one fails: no partial model is left behind.
  struct Written {
    std::vector<std::filesystem::path> files;
    bool keep = false;
    ~Written() {
      std::error_code ec;
      if (!keep)
        for (const auto& p : files) std::filesystem::remove(p, ec);
    }
  } written;

  uint64_t input_total = 0, input_done = 0;
  for (const QuantizedTensor& q : report.tensors) input_total += q.bytes_in;
  for (uint32_t k = 0; k < n_shards; ++k) {
    const size_t begin = first_of[k], end = k + 1 < n_shards ? first_of[k + 1] : specs.size();
    std::vector<std::pair<std::string, GgufValue>> meta;
    if (k == 0) meta = output_metadata(f, options.ftype);
    if (split) {
      auto scalar = [](GgufValueType type, uint64_t u, int64_t i) {
        GgufValue v;
        v.type = type;
        v.u64 = u;
        v.i64 = i;
        return v;
      };
      std::erase_if(meta, [](const auto& kv) { return kv.first.starts_with("split."); });
      meta.emplace_back("split.no", scalar(GgufValueType::U16, k, 0));
      meta.emplace_back("split.count", scalar(GgufValueType::U16, n_shards, 0));
      meta.emplace_back("split.tensors.count",
                        scalar(GgufValueType::I32, 0, static_cast<int64_t>(specs.size())));
    }
    const std::filesystem::path path = split ? split_path(prefix, k, n_shards) : out;
    auto writer =
        GgufWriter::create(path, meta,
                           std::vector<GgufTensorSpec>(specs.begin() + static_cast<std::ptrdiff_t>(begin),
                                                       specs.begin() + static_cast<std::ptrdiff_t>(end)),
                           alignment);
    if (!writer.ok()) return writer.error();
    for (size_t i = begin; i < end; ++i) {
      const SourceTensor& t = tensors[i];
      QuantizedTensor& q = report.tensors[i];
      input_done += q.bytes_in;
      q.input_done = input_done;
      q.input_total = input_total;
      q.bytes_out = writer->tensor_bytes(i - begin);
      Status s = q.to == t.dtype && t.row_map.empty() ? writer->write(t.data, q.bytes_in)
                                                      : convert(t, q.to, options, *writer);
      if (!s.ok()) return s.error();
      if (options.on_tensor) options.on_tensor(q);
    }
    if (Status s = writer->finish(); !s.ok()) return s.error();
    written.files.push_back(path);
    std::error_code ec;
    report.bytes_out += std::filesystem::file_size(path, ec);
  }
  written.keep = true;
  report.files = written.files;
  return report;
}

namespace {

// The N of "blk.N."; -1 for model-wide tensors.
int64_t layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  int64_t v = 0;
  const char* begin = name.data() + 4;
  const auto [end, ec] = std::from_chars(begin, name.data() + name.size(), v);
  return ec == std::errc() && end != begin && end != name.data() + name.size() && *end == '.' ? v : -1;
}

}  // namespace

bool llama_loader_order(std::string_view a, std::string_view b) {
  const int64_t la = layer_of(a), lb = layer_of(b);
  return la != lb ? la < lb : a < b;
}

Result<QuantizeReport> quantize_gguf(const std::filesystem::path& in, const std::filesystem::path& out,
                                     const QuantizeOptions& options) {
  auto shards = GgufShards::open(in);
  if (!shards.ok()) return shards.error();
  std::vector<SourceTensor> tensors;
  for (const GgufTensorInfo* t : shards->tensors())
    tensors.push_back({t->name, t->shape, t->dtype, t->data, {}});
  std::stable_sort(tensors.begin(), tensors.end(), [](const SourceTensor& a, const SourceTensor& b) {
    return llama_loader_order(a.name, b.name);
  });
  const GgufFile& file = shards->metadata();
  auto report = quantize_tensors(file, tensors, file.alignment(), out, options, false);
  if (!report.ok()) return report.error();
  report->bytes_in = shards->file_bytes();
  return report;
}

}  // namespace glass::formats
