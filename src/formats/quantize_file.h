#pragma once
// Quantizing a whole GGUF model: an F32/F16/BF16 file in, a GGUF v3 file out with the same
// metadata (general.file_type set to the llama.cpp file type, general.quantization_version = 2,
// split keys dropped), the same tensors in the same order at the input's alignment, each stored as
// choose_types (quant_mix.h) decides. Tensors are converted a bounded chunk of rows at a time, so
// memory stays small whatever the model size.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "formats/quant_mix.h"
#include "glass/result.h"
#include "graph/dtype.h"

namespace glass::formats {

struct QuantizedTensor {
  std::string name;
  std::vector<int64_t> shape;
  graph::DType from = graph::DType::F32;
  graph::DType to = graph::DType::F32;
  bool quantizable = false;
  std::string fallback;  // non-empty when the row length forced another type
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  uint64_t input_done = 0;   // input bytes converted up to this tensor (included) when on_tensor sees it
  uint64_t input_total = 0;  // input bytes of every tensor
};

struct QuantizeOptions {
  FileType ftype = FileType::Q4_K_M;
  bool pure = false;  // every quantizable tensor gets the base type (llama-quantize --pure)
  // Dequantize and quantize again a tensor stored quantized that gets another type
  // (llama-quantize --allow-requantize); off: refused.
  bool allow_requantize = false;
  // Calls body(i) for every i in [0, n), possibly concurrently; empty runs serially. The library
  // owns no threads: the caller brings its pool.
  std::function<void(int64_t n, const std::function<void(int64_t)>& body)> parallel;
  // Called after each tensor is written (progress).
  std::function<void(const QuantizedTensor&)> on_tensor;
  // Split the output as llama.cpp's gguf-split does (0: no limit): a new shard before a tensor that
  // would take the shard's tensor data past split_max_bytes, or its tensors past split_max_tensors.
  // The shards are OUT's name without ".gguf" + "-0000i-of-0000n.gguf"; the first holds every
  // metadata key, each holds split.no, split.count and split.tensors.count.
  uint64_t split_max_bytes = 0;
  int64_t split_max_tensors = 0;
};

struct QuantizeReport {
  std::vector<QuantizedTensor> tensors;      // file order
  std::vector<std::filesystem::path> files;  // written: the output, or its shards in order
  uint64_t bytes_in = 0;                     // file sizes
  uint64_t bytes_out = 0;
  uint64_t n_elements = 0;
};

// `in` is what GgufShards::open reads: a file, a split model's shard (all shards are read, one file
// is written) or a folder. Errors: those of GgufShards::open and GgufWriter; Unsupported for a tensor that
// would need requantizing (stored quantized, asked for another type) or a row length with no fallback;
// InvalidArgument naming the tensor and row for a non-finite or out-of-range weight. On error no
// output file is left behind.
// The tensors are written in llama.cpp's loader order (llama_loader_order), as llama-quantize writes
// them whatever the input's order.
Result<QuantizeReport> quantize_gguf(const std::filesystem::path& in, const std::filesystem::path& out,
                                     const QuantizeOptions& options);

// llama.cpp's loader order of tensor names (llama_model_loader::weight_name_comparer): model-wide
// tensors first, then layer by layer ("blk.N."), by name within each.
bool llama_loader_order(std::string_view a, std::string_view b);

// One tensor of a model being written from another source than a GGUF file (an HF checkpoint).
struct SourceTensor {
  std::string name;  // GGUF name
  std::vector<int64_t> shape;
  graph::DType dtype = graph::DType::F32;
  const void* data = nullptr;  // row-major, `dtype`
  // Row r of the output is row row_map[r] of `data` (rows: the innermost dimension's runs); empty:
  // the same order. How q/k rows move from HF's rotate-half layout to GGUF's interleaved one.
  std::vector<int64_t> row_map;
};

// The same as quantize_gguf for a model given as metadata (GGUF keys; general.file_type and
// general.quantization_version are set here) and tensors, written in the order given at
// `alignment`. `kept_as_f32`: tensors the mix rules keep (norms, other 1-D) are stored as F32 when
// they come as F16/BF16, as convert_hf_to_gguf.py stores them. report.bytes_in is left 0.
Result<QuantizeReport> quantize_tensors(const GgufFile& metadata, const std::vector<SourceTensor>& tensors,
                                        uint64_t alignment, const std::filesystem::path& out,
                                        const QuantizeOptions& options, bool kept_as_f32);

}  // namespace glass::formats
