// Model::tensor_f32: a weight dequantized for analysis (Python's model.tensor). Reads the stored
// bytes where load left them: a weight the cpu backend repacked had its file pages dropped from
// memory, and reading it pages them back in, once.
#include <fmt/format.h>

#include "formats/quant.h"
#include "runtime/model_impl.h"

namespace glass {

Result<std::vector<float>> Model::tensor_f32(std::string_view name, std::vector<int64_t>* shape) const {
  const auto it = impl_->weights.find(name);
  if (it == impl_->weights.end())
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("model: no tensor '{}' in {} (tensor_names() lists them)", name, impl_->info.path));
  const models::WeightInfo& w = it->second;
  int64_t n = 1;
  for (int64_t d : w.shape) n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  // Row by row: dequantize_row takes whole blocks, and rows are whole blocks in every type.
  const int64_t row = w.shape.empty() ? 1 : w.shape.back();
  const auto row_bytes = graph::dtype_bytes(w.dtype, static_cast<uint64_t>(row));
  if (!row_bytes)
    return make_error(ErrorCode::Unsupported, fmt::format("model: tensor '{}' is {}, rows of {} elements",
                                                          name, graph::dtype_name(w.dtype), row));
  const auto* src = static_cast<const std::byte*>(w.data);
  for (int64_t r = 0; r * row < n; ++r)
    if (auto st = formats::dequantize_row(w.dtype, src + static_cast<size_t>(r) * *row_bytes,
                                          out.data() + r * row, row);
        !st)
      return make_error(st.error().code, fmt::format("model: tensor '{}': {}", name, st.error().message));
  if (shape != nullptr) *shape = w.shape;
  return out;
}

std::vector<std::string> Model::tensor_names() const {
  std::vector<std::string> names;
  for (const auto& [name, w] : impl_->weights) names.push_back(name);
  return names;
}

}  // namespace glass
