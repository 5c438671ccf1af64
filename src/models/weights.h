#pragma once
// What a model file offers: tensors by canonical (GGUF) name with shape, dtype and data. formats/
// fills it from GGUF (and later safetensors); models/ declares parameters against it, so a missing
// or mis-shaped weight is a load error naming the tensor.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "graph/builder.h"
#include "graph/dtype.h"

namespace glass::models {

struct WeightInfo {
  std::vector<int64_t> shape;  // row-major, outermost first: [out, in] for a linear layer
  graph::DType dtype = graph::DType::F32;
  const void* data = nullptr;
};

using WeightIndex = std::map<std::string, WeightInfo, std::less<>>;

// Every tensor of a GGUF file as it lies in the file (the runtime's loader also repacks and keeps
// mappings; this is for building a graph from a file alone: tests, rewrites).
WeightIndex weight_index(const formats::GgufFile& file);

// Declares parameter `name` with the shape the architecture expects; on a missing tensor or a shape
// mismatch the builder records an error naming the tensor. Optional weights yield nullopt.
graph::Tensor weight(graph::Builder& b, const WeightIndex& w, const std::string& name,
                     std::vector<int64_t> shape);
std::optional<graph::Tensor> optional_weight(graph::Builder& b, const WeightIndex& w, const std::string& name,
                                             std::vector<int64_t> shape);

}  // namespace glass::models
