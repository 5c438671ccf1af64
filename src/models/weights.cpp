#include "models/weights.h"

#include <fmt/format.h>

namespace glass::models {

std::optional<graph::Tensor> optional_weight(graph::Builder& b, const WeightIndex& w, const std::string& name,
                                             std::vector<int64_t> shape) {
  const auto it = w.find(name);
  if (it == w.end()) return std::nullopt;
  if (it->second.shape != shape) {
    b.fail(make_error(ErrorCode::InvalidFile,
                      fmt::format("model: tensor '{}' has shape [{}], expected [{}]", name,
                                  fmt::join(it->second.shape, ", "), fmt::join(shape, ", "))));
    return std::nullopt;
  }
  graph::Shape s;
  for (int64_t d : shape) s.push_back(graph::Dim::constant(d));
  return b.parameter(name, std::move(s), it->second.dtype);
}

graph::Tensor weight(graph::Builder& b, const WeightIndex& w, const std::string& name,
                     std::vector<int64_t> shape) {
  if (auto t = optional_weight(b, w, name, shape)) return *t;
  if (b.ok())
    b.fail(make_error(ErrorCode::InvalidFile, fmt::format("model: required tensor '{}' is missing", name)));
  return graph::Tensor{&b, -1};
}

WeightIndex weight_index(const formats::GgufFile& file) {
  WeightIndex w;
  for (const formats::GgufTensorInfo& t : file.tensors())
    w.emplace(t.name, WeightInfo{t.shape, t.dtype, t.data});
  return w;
}

}  // namespace glass::models
