#include "models/hparam_reader.h"

#include <fmt/format.h>

#include <algorithm>

namespace glass::models {

std::string HparamReader::key(std::string_view suffix) const { return fmt::format("{}.{}", arch_, suffix); }

bool HparamReader::has(std::string_view suffix) const { return f_.find(key(suffix)) != nullptr; }

void HparamReader::fail(const std::string& what) {
  if (!error_) error_ = make_error(ErrorCode::InvalidFile, fmt::format("{}: {}", arch_, what));
}

Status HparamReader::status() const {
  if (error_) return *error_;
  return {};
}

int64_t HparamReader::required_int(std::string_view suffix) {
  auto v = f_.get_u32(key(suffix));
  if (!v) {
    fail(v.error().message);
    return 0;
  }
  return static_cast<int64_t>(*v);
}

int64_t HparamReader::optional_int(std::string_view suffix, int64_t fallback) {
  return has(suffix) ? required_int(suffix) : fallback;
}

float HparamReader::required_float(std::string_view suffix) {
  auto v = f_.get_f32(key(suffix));
  if (!v) {
    fail(v.error().message);
    return 0.0f;
  }
  return *v;
}

float HparamReader::optional_float(std::string_view suffix, float fallback) {
  return has(suffix) ? required_float(suffix) : fallback;
}

std::optional<float> HparamReader::maybe_float(std::string_view suffix) {
  if (!has(suffix)) return std::nullopt;
  return required_float(suffix);
}

// A key read by `get` (a GgufFile getter) when present; its error is recorded and the fallback kept.
template <class T, class Get>
T HparamReader::optional_value(std::string_view suffix, T fallback, Get get) {
  if (!has(suffix)) return fallback;
  auto v = (f_.*get)(key(suffix));
  if (!v) {
    fail(v.error().message);
    return fallback;
  }
  return *v;
}

bool HparamReader::optional_bool(std::string_view suffix, bool fallback) {
  return optional_value(suffix, fallback, &formats::GgufFile::get_bool);
}

std::string HparamReader::optional_string(std::string_view suffix, const std::string& fallback) {
  return optional_value(suffix, fallback, &formats::GgufFile::get_string);
}

std::vector<int64_t> HparamReader::per_layer_int(std::string_view suffix, int64_t n_layers) {
  const formats::GgufValue* v = f_.find(key(suffix));
  if (v == nullptr || v->type != formats::GgufValueType::ARRAY)
    return std::vector<int64_t>(static_cast<size_t>(std::max<int64_t>(n_layers, 0)), required_int(suffix));
  auto arr = f_.get_i32_array(key(suffix));
  if (!arr) {
    fail(arr.error().message);
    return {};
  }
  if (static_cast<int64_t>(arr->size()) != n_layers) {
    fail(fmt::format("key '{}' has {} entries, expected one per layer ({})", key(suffix), arr->size(),
                     n_layers));
    return {};
  }
  return std::vector<int64_t>(arr->begin(), arr->end());
}

std::vector<bool> HparamReader::sliding_layers(int64_t n_layers, int64_t default_period) {
  const std::string k = key("attention.sliding_window_pattern");
  const formats::GgufValue* v = f_.find(k);
  const auto n = static_cast<size_t>(std::max<int64_t>(n_layers, 0));
  std::vector<bool> local(n, false);
  if (v != nullptr && v->type == formats::GgufValueType::ARRAY) {
    if (v->elem_type != formats::GgufValueType::BOOL || v->count != n) {
      fail(fmt::format("key '{}' must be a period or an array of {} bools", k, n));
      return local;
    }
    for (size_t i = 0; i < n; ++i) local[i] = v->element(i).u64 != 0;
    return local;
  }
  const int64_t period = v != nullptr ? required_int("attention.sliding_window_pattern") : default_period;
  for (size_t i = 0; i < n; ++i) local[i] = period > 1 && static_cast<int64_t>(i) % period < period - 1;
  return local;
}

int64_t HparamReader::tensor_rows(const WeightIndex& w, const std::string& name) {
  const auto it = w.find(name);
  if (it == w.end() || it->second.shape.size() != 2) {
    fail(fmt::format("tensor '{}' is missing or not 2-D", name));
    return 0;
  }
  return it->second.shape[0];
}

}  // namespace glass::models
