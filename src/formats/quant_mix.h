#pragma once
// Which storage type each tensor gets when a model is quantized to one of llama.cpp's file types
// (llama_ftype): the base type, raised for sensitive tensors by the "mix" rules of llama.cpp's
// src/llama-quant.cpp (output / tied token_embd -> Q6_K, attn_v and ffn_down of chosen layers one
// or two K-types higher for _M/_S/Q2_K, ...), norms and other 1-D tensors kept, and llama.cpp's
// fallbacks for rows that the chosen type's block does not divide. Following the same rules in the
// same order gives the same per-tensor types as llama-quantize (no importance matrix).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "glass/result.h"
#include "graph/dtype.h"

namespace glass::formats {

// llama.cpp's LLAMA_FTYPE_* values (written to general.file_type).
enum class FileType : uint32_t {
  AllF32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q8_0 = 7,
  Q5_0 = 8,
  Q5_1 = 9,
  Q2_K = 10,
  Q3_K_S = 11,
  Q3_K_M = 12,
  Q3_K_L = 13,
  Q4_K_S = 14,
  Q4_K_M = 15,
  Q5_K_S = 16,
  Q5_K_M = 17,
  Q6_K = 18,
  IQ4_NL = 25,
  IQ4_XS = 30,
  MXFP4_MOE = 38,
  BF16 = 32,
};

struct FileTypeInfo {
  FileType ftype;
  std::string_view name;   // lower case, as glass prints it
  graph::DType base;       // the type most tensors get
  std::string_view label;  // llama.cpp's name of the file type (llama-bench's model_type: "Q4_K - Medium")
};
const FileTypeInfo& file_type_info(FileType ftype);
const std::vector<FileTypeInfo>& file_types();
// Case-insensitive; q3_k, q4_k and q5_k are llama-quantize's aliases of the _m mixes.
std::optional<FileType> file_type_from_name(std::string_view name);

// What the rules read about the model (from its GGUF metadata).
struct MixModel {
  std::string arch;  // general.architecture
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t n_experts = 0;
};

struct MixTensor {
  std::string name;
  std::vector<int64_t> shape;  // outermost first
  graph::DType dtype = graph::DType::F32;
};

struct TypeChoice {
  graph::DType dtype = graph::DType::F32;
  bool quantizable = false;  // false: kept as stored (1-D, norms, and llama.cpp's other exclusions)
  std::string fallback;      // when the row length forced another type: why, as llama.cpp warns
};

// One choice per tensor, in the order given. `pure` gives every quantizable tensor the base type
// (llama-quantize --pure; fallbacks still apply). Errors: Unsupported when a row length admits no
// type llama.cpp falls back to (it refuses those files too), InvalidFile for an expert tensor whose
// name has no layer number.
Result<std::vector<TypeChoice>> choose_types(const MixModel& model, const std::vector<MixTensor>& tensors,
                                             FileType ftype, bool pure);

}  // namespace glass::formats
