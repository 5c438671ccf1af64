#include "runtime/verify.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

#include "core/exception_guard.h"
#include "runtime/access.h"
#include "runtime/model_impl.h"

namespace glass::verify {
namespace {

std::vector<int32_t> top_k_ids(std::span<const float> row, size_t k, std::vector<int32_t>& scratch) {
  scratch.resize(row.size());
  std::iota(scratch.begin(), scratch.end(), 0);
  k = std::min(k, row.size());
  std::partial_sort(
      scratch.begin(), scratch.begin() + static_cast<ptrdiff_t>(k), scratch.end(),
      [&](int32_t a, int32_t b) { return row[static_cast<size_t>(a)] > row[static_cast<size_t>(b)]; });
  std::vector<int32_t> out(scratch.begin(), scratch.begin() + static_cast<ptrdiff_t>(k));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Metrics compare(std::span<const float> got, std::span<const float> ref, int64_t vocab) {
  Metrics m;
  if (vocab <= 0 || got.size() != ref.size() || got.size() % static_cast<size_t>(vocab) != 0) {
    m.max_abs = INFINITY;
    m.min_pearson = -1;
    m.top1 = 0;
    return m;
  }
  const auto v = static_cast<size_t>(vocab);
  const size_t rows = got.size() / v;
  double sum_abs = 0;
  size_t agree = 0;
  std::vector<int32_t> scratch;
  for (size_t r = 0; r < rows; ++r) {
    const auto g = got.subspan(r * v, v);
    const auto f = ref.subspan(r * v, v);
    double mg = 0, mf = 0;
    for (size_t i = 0; i < v; ++i) {
      mg += g[i];
      mf += f[i];
    }
    mg /= static_cast<double>(v);
    mf /= static_cast<double>(v);
    double sgg = 0, sff = 0, sgf = 0;
    for (size_t i = 0; i < v; ++i) {
      const double d = std::fabs(static_cast<double>(g[i]) - f[i]);
      sum_abs += d;
      if (!(d <= m.max_abs)) {  // also catches NaN
        m.max_abs = std::isnan(d) ? INFINITY : d;
        m.max_abs_row = static_cast<int64_t>(r);
      }
      sgg += (g[i] - mg) * (g[i] - mg);
      sff += (f[i] - mf) * (f[i] - mf);
      sgf += (g[i] - mg) * (f[i] - mf);
    }
    const double pearson = sgg > 0 && sff > 0 ? sgf / std::sqrt(sgg * sff) : (sgg == sff ? 1.0 : 0.0);
    if (!(pearson >= m.min_pearson)) {
      m.min_pearson = std::isnan(pearson) ? -1.0 : pearson;
      m.min_pearson_row = static_cast<int64_t>(r);
    }
    const auto gt = top_k_ids(g, 10, scratch);
    const auto ft = top_k_ids(f, 10, scratch);
    if (!gt.empty() && gt.front() >= 0 && top_k_ids(g, 1, scratch) == top_k_ids(f, 1, scratch)) ++agree;
    std::vector<int32_t> common;
    std::set_intersection(gt.begin(), gt.end(), ft.begin(), ft.end(), std::back_inserter(common));
    const double overlap = static_cast<double>(common.size()) / static_cast<double>(ft.size());
    if (overlap < m.min_top10) {
      m.min_top10 = overlap;
      m.min_top10_row = static_cast<int64_t>(r);
    }
  }
  m.mean_abs = sum_abs / static_cast<double>(got.size());
  m.top1 = static_cast<double>(agree) / static_cast<double>(rows);
  return m;
}

const char* weight_class_name(WeightClass c) {
  switch (c) {
    case WeightClass::F32:
      return "f32";
    case WeightClass::F16:
      return "f16";
    case WeightClass::BF16:
      return "bf16";
    case WeightClass::Quantized:
      return "quantized";
  }
  return "?";
}

WeightClass weight_class(const Model& model) {
  WeightClass c = WeightClass::F32;
  for (const auto& [name, w] : internal::Access::impl(model).weights) {
    if (graph::traits(w.dtype).quantized) return WeightClass::Quantized;
    if (w.dtype == graph::DType::BF16) c = WeightClass::BF16;
    if (w.dtype == graph::DType::F16 && c == WeightClass::F32) c = WeightClass::F16;
  }
  return c;
}

const Thresholds& thresholds(WeightClass c) {
  // From the fixtures' measured tolerances (../shared/fixtures/README.md). The references are
  // llama.cpp's logits; glass's ref backend keeps activations in f32.
  static const Thresholds kF32{1e-4, 1e-5, 0.99999, 1.0,
                               "same math in f32: an f64 forward differs from llama.cpp by <= 7.8e-6"};
  static const Thresholds kF16{
      2e-3, 2e-4, 0.9999, 0.95,
      "llama.cpp rounds activations to f16 before f16 matmuls: 5.2e-4 measured with f32 activations"};
  static const Thresholds kBF16{1e-2, 1e-3, 0.9999, 0.95,
                                "llama.cpp rounds activations to bf16 before bf16 matmuls: 4.9e-3 measured"};
  static const Thresholds kQuant{
      5e-2, 1e-2, 0.999, 0.9,
      "llama.cpp quantizes activations to 8-bit blocks: <= 2.3e-2 max abs, Pearson >= 0.9998 "
      "measured with f32 activations; near-flat random logits make argmax fragile"};
  switch (c) {
    case WeightClass::F32:
      return kF32;
    case WeightClass::F16:
      return kF16;
    case WeightClass::BF16:
      return kBF16;
    case WeightClass::Quantized:
      return kQuant;
  }
  return kF32;
}

std::vector<std::string> breaches(const Metrics& m, const Thresholds& t) {
  std::vector<std::string> out;
  if (!(m.max_abs <= t.max_abs))
    out.push_back(fmt::format("max abs {:.3g} > {:.3g} (row {})", m.max_abs, t.max_abs, m.max_abs_row));
  if (!(m.mean_abs <= t.mean_abs))
    out.push_back(fmt::format("mean abs {:.3g} > {:.3g}", m.mean_abs, t.mean_abs));
  if (!(m.min_pearson >= t.min_pearson))
    out.push_back(
        fmt::format("pearson {:.6f} < {} (row {})", m.min_pearson, t.min_pearson, m.min_pearson_row));
  if (!(m.top1 >= t.min_top1)) out.push_back(fmt::format("top-1 {:.3f} < {}", m.top1, t.min_top1));
  return out;
}

Result<Mode> parse_mode(const std::string& name, int64_t n_tokens) {
  if (name == "prefill") return Mode{name, std::max<int64_t>(n_tokens, 1)};
  if (name == "decode") return Mode{name, 1};
  if (name.starts_with("chunked:")) {
    int64_t c = 0;
    const char* b = name.data() + 8;
    const char* e = name.data() + name.size();
    auto [p, ec] = std::from_chars(b, e, c);
    if (ec == std::errc() && p == e && c > 0) return Mode{name, c};
  }
  return make_error(ErrorCode::InvalidArgument,
                    fmt::format("verify: unknown mode '{}' (prefill, decode or chunked:N with N > 0)", name));
}

Result<std::vector<float>> eval_logits(const Model& model, std::span<const int32_t> tokens,
                                       const Mode& mode) try {
  auto session = model.new_session();
  if (!session) return session.error();
  const auto vocab = static_cast<size_t>(model.info().vocab_size);
  std::vector<float> out(tokens.size() * vocab);
  for (size_t done = 0; done < tokens.size();) {
    const size_t c = std::min(tokens.size() - done, static_cast<size_t>(mode.chunk));
    auto st =
        (*session)->eval(tokens.subspan(done, c), std::span<float>(out.data() + done * vocab, c * vocab));
    if (!st) return st.error();
    done += c;
  }
  return out;
} catch (...) {
  return error_from_exception("verify", model.info().path, std::current_exception());
}

std::string format_table(const std::vector<Row>& rows) {
  std::string s = fmt::format(
      "| {:<24} | {:<10} | {:<9} | {:<20} | {:<9} | {:<20} | {:<6} | {:<15} | {:<6} |\n", "model", "mode",
      "weights", "max abs (row)", "mean abs", "min pearson (row)", "top-1", "min top-10 (row)", "result");
  s += fmt::format("|{:-<26}|{:-<12}|{:-<11}|{:-<22}|{:-<11}|{:-<22}|{:-<8}|{:-<17}|{:-<8}|\n", "", "", "",
                   "", "", "", "", "", "");
  for (const Row& r : rows) {
    const Metrics& m = r.metrics;
    s += fmt::format(
        "| {:<24} | {:<10} | {:<9} | {:<20} | {:<9.2e} | {:<20} | {:<6.3f} | {:<15} | {:<6} |\n", r.model,
        r.mode, weight_class_name(r.weights), fmt::format("{:.2e} ({})", m.max_abs, m.max_abs_row),
        m.mean_abs, fmt::format("{:.6f} ({})", m.min_pearson, m.min_pearson_row), m.top1,
        fmt::format("{:.1f} ({})", m.min_top10, m.min_top10_row), r.breaches.empty() ? "pass" : "FAIL");
  }
  return s;
}

}  // namespace glass::verify
