#include "references.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>

#include "backend/backend.h"
#include "formats/npy.h"

namespace glass::conformance {

std::vector<Reference> find_references(const std::filesystem::path& fixtures, const std::string& set) {
  std::vector<Reference> refs;
  const auto dir = fixtures / "reference" / set;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return refs;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const auto doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object() || !doc.contains("token_ids") || !doc.contains("model") || !doc.contains("file"))
      continue;
    const std::filesystem::path model = fixtures / doc["model"].get<std::string>();
    Reference r{model.stem().string(), model, dir / doc["file"].get<std::string>(),
                doc["token_ids"].get<std::vector<int32_t>>()};
    if (doc.contains("architecture") && doc["architecture"].is_string())
      r.architecture = doc["architecture"].get<std::string>();
    const auto exact = dir / (r.logits.stem().string() + ".exact-gelu.npy");
    if (std::filesystem::is_regular_file(exact, ec)) r.exact_gelu = exact;
    const auto& gaps = doc.value("validation", nlohmann::json::object())
                           .value("top1_minus_top2_logit_per_position", nlohmann::json::array());
    if (gaps.is_array() && gaps.size() == r.tokens.size())
      for (const auto& g : gaps) r.top1_gaps.push_back(g.is_number() ? g.get<double>() : 0.0);
    refs.push_back(std::move(r));
  }
  std::sort(refs.begin(), refs.end(), [](const Reference& a, const Reference& b) { return a.name < b.name; });
  return refs;
}

namespace {

// Top-1 agreement counted only at positions where the reference's own top1 - top2 gap is at least
// `min_gap`: below it, quantized activations in the reference's producer flip the argmax either way
// (synthetic-arch README: every flip seen was at a gap < 0.051).
double top1_where_decisive(std::span<const float> got, std::span<const float> ref, int64_t vocab,
                           const std::vector<double>& gaps, double min_gap) {
  const auto v = static_cast<size_t>(vocab);
  size_t counted = 0, agree = 0;
  for (size_t r = 0; r < gaps.size() && (r + 1) * v <= got.size(); ++r) {
    if (gaps[r] < min_gap) continue;
    const auto g = got.subspan(r * v, v), f = ref.subspan(r * v, v);
    ++counted;
    agree +=
        std::max_element(g.begin(), g.end()) - g.begin() == std::max_element(f.begin(), f.end()) - f.begin();
  }
  return counted == 0 ? 1.0 : static_cast<double>(agree) / static_cast<double>(counted);
}

constexpr double kDecisiveGap = 0.1;

// Where the bar is relaxed for the reference's producer (below), top-1 is counted only at decisive
// positions: gemma3n's smallest gap is 0.009, under llama.cpp's own GELU-table spread.
bool relaxed_top1(const Reference& ref, verify::WeightClass weights) {
  return !ref.top1_gaps.empty() && (weights == verify::WeightClass::Quantized || !ref.exact_gelu.empty());
}

}  // namespace

verify::Thresholds thresholds_for(const Reference& ref, verify::WeightClass weights,
                                  const std::string& backend) {
  verify::Thresholds t = verify::thresholds(weights);
  // llama.cpp's CPU GELU is an F16 lookup table (y = f16(gelu(f16(x)))), which moves the Gemma
  // family's logits from exact tanh-GELU by up to 1.5e-3 (gemma3), 2.1e-3 (gemma2) and 6.2e-3
  // (gemma3n), and makes llama.cpp disagree with itself between batch and token-by-token runs by
  // up to 8.7e-4 / 4.5e-3. glass computes GELU exactly, so the README's bar for such a runtime
  // applies: llama.cpp's logits at 3e-3 (gemma2, gemma3) / 1e-2 (gemma3n); the exact-GELU
  // references are held to the F32 bar (rows "(exact gelu)"). The table's error touches every
  // logit, so the mean-abs bar is a third of the max-abs one (measured: 3.3e-4 gemma2, 2.6e-4
  // gemma3, 7.6e-4 gemma3n).
  if (weights == verify::WeightClass::F32 && !ref.exact_gelu.empty()) {
    // Gemma 4 (synthetic-2026, its exact-GELU reference from the generator's float64 numpy pass):
    // llama.cpp's table moves it 7.0e-3 from exact GELU; numpy with the table emulated lands 9.6e-4
    // from llama.cpp, within llama.cpp's own batch vs token-by-token spread of 1.3e-3.
    const double max_abs =
        ref.architecture == "gemma3n" || ref.architecture.starts_with("gemma4") ? 1e-2 : 3e-3;
    t = verify::Thresholds{max_abs, max_abs / 3, 0.99999, 1.0,
                           "llama.cpp's F16 GELU table vs exact GELU (synthetic-arch README)"};
  }
  // Quantized synthetic-arch files: llama.cpp also quantizes activations (Q8_0 / Q8_K blocks), a
  // discontinuous rounding that float activations cannot reproduce; the README measured max abs
  // up to 0.12 and Pearson >= 0.99988 for dequantized weights x float activations, and asks for
  // Pearson plus top-1 at positions whose reference gap is >= 0.1. The max- and mean-abs bars are
  // only sanity bounds (about 2x the measured 0.118 / 0.022 of gemma3-q4_k_m on the ref backend).
  if (weights == verify::WeightClass::Quantized && !ref.top1_gaps.empty())
    t = verify::Thresholds{
        0.25, 5e-2, 0.9995, 1.0,
        "llama.cpp quantizes activations too: Pearson and decisive top-1 (synthetic-arch README)"};
  // The hybrid families gate one projection of their input by another (LFM2: B * x, then C * conv;
  // Qwen 3.5: the delta rule's decay and write strength, SiLU(z), the attention's sigmoid gate), so
  // the rounding of llama.cpp's 8-bit activations compounds. With f32 activations (the ref backend)
  // the synthetic-2026 files measure max abs / mean abs / Pearson: lfm2 q8_0 0.197 / 0.023 / 0.99634,
  // q4_k_m 0.194 / 0.023 / 0.99782; qwen35 q8_0 0.233 / 0.020 / 0.99632, q4_k_m 0.771 / 0.027 /
  // 0.95125; qwen35moe q8_0 0.375 / 0.022 / 0.99032, q4_k_m 0.215 / 0.024 / 0.99729. The cpu backend, which
  // rounds activations as llama.cpp does, meets the bar above (on q8_0: 2.4e-7 lfm2, 7.2e-3 qwen35). The ref
  // rows keep a sanity bar (decisive top-1 measured 0.968 at worst, qwen35 q4_k_m).
  if (weights == verify::WeightClass::Quantized && backend == "ref" &&
      (ref.architecture == "lfm2" || ref.architecture == "qwen35" || ref.architecture == "qwen35moe"))
    t = verify::Thresholds{1.0, 0.05, 0.95, 0.9,
                           "gated hybrid with f32 activations: llama.cpp's 8-bit activations compound "
                           "(references.cpp)"};
  // Gemma 4 gates twice per layer (GeGLU, then the per-layer input by GELU of the residual), so
  // llama.cpp's 8-bit activations and F16 GELU table compound over its 7 layers. The glass ref
  // backend equals the generator's float64 numpy pass on the dequantized weights to 8.9e-6 (q8_0,
  // q4_k_m), and that numpy pass with the GELU table emulated is itself 0.43 / 0.38 from llama.cpp
  // (Pearson 0.9969). Measured against llama.cpp, max abs / mean abs / Pearson: ref q8_0 0.427 /
  // 0.047 / 0.9852, q4_k_m 0.380 / 0.046 / 0.9893; cpu q8_0 0.250 / 0.027 / 0.9944, q4_k_m 0.273 /
  // 0.028 / 0.9954; decisive top-1 1.0 everywhere.
  if (weights == verify::WeightClass::Quantized && ref.architecture == "gemma4")
    t = verify::Thresholds{0.6, 0.06, 0.98, 0.95,
                           "two gates per layer: llama.cpp's 8-bit activations and GELU table compound "
                           "(references.cpp)"};
  // Gemma 4 MoE: the same, and a rounded activation can move a token to other experts. The glass
  // ref backend equals the generator's float64 numpy pass on the dequantized weights to 8.0e-6
  // (q8_0) / 1.1e-5 (q4_k_m, whose 64-wide rows fall back to Q5_0 / Q5_1 / Q8_0), and that pass with
  // the GELU table emulated is 0.52 / 1.36 from llama.cpp (Pearson 0.9958 / 0.9872). Measured against
  // llama.cpp, max / mean / Pearson / top-1: ref q8_0 0.523 / 0.052 / 0.980 / 0.970, q4_k_m 1.36 /
  // 0.081 / 0.798 / 0.971; cpu (8-bit activations like llama.cpp) q8_0 0.452 / 0.028 / 0.986 / 1.0,
  // q4_k_m 0.605 / 0.035 / 0.975 / 1.0.
  if (weights == verify::WeightClass::Quantized && ref.architecture == "gemma4moe")
    t = backend == "ref" ? verify::Thresholds{1.5, 0.1, 0.75, 0.9,
                                              "experts chosen by a rounded router: f32 activations "
                                              "(references.cpp)"}
                         : verify::Thresholds{0.8, 0.05, 0.96, 0.95,
                                              "experts chosen by a rounded router (references.cpp)"};
  // gpt-oss on the ref backend: f32 activations against llama.cpp's 8-bit ones move the router's
  // choice of experts for some tokens (its SwiGLU clamps and the sinks add to it): measured max abs /
  // mean abs / Pearson / top-1 q8_0 0.717 / 0.019 / 0.955 / 1.0, q4_k_m 1.74 / 0.030 / 0.771 / 0.971,
  // mxfp4_moe 2.62 / 0.045 / 0.596 / 0.944. The cpu backend, which rounds activations as llama.cpp
  // does, meets the usual bar on all three (at most 4.8e-7): that is the check; this one is a bound.
  if (weights == verify::WeightClass::Quantized && backend == "ref" && ref.architecture == "gptoss")
    t = verify::Thresholds{3.0, 0.06, 0.5, 0.9,
                           "experts chosen from f32 activations, llama.cpp's are 8-bit (references.cpp)"};
  return t;
}

void check(const Reference& ref, const std::string& backend, const GraphRewrite& rewrite, Outcome& out) {
  auto expected = formats::read_npy_f32(ref.logits);
  if (!expected) {
    out.errors.push_back(ref.name + ": " + expected.error().message);
    return;
  }
  LoadOptions opt;
  opt.backend = backend;
  opt.min_ctx = static_cast<int64_t>(ref.tokens.size());
  opt.n_batch = static_cast<int64_t>(ref.tokens.size());
  auto model = load_llm_rewritten(ref.model.string(), opt, rewrite);
  if (!model) {
    (model.error().code == ErrorCode::Unsupported ? out.pending : out.errors)
        .push_back(ref.name + ": " + model.error().message);
    return;
  }
  std::optional<std::vector<float>> exact;
  if (!ref.exact_gelu.empty()) {
    auto e = formats::read_npy_f32(ref.exact_gelu);
    if (!e) {
      out.errors.push_back(ref.name + ": " + e.error().message);
      return;
    }
    exact = std::move(e->data);
  }
  const verify::WeightClass weights = verify::weight_class(**model);
  const int64_t vocab = (*model)->info().vocab_size;
  const std::string at = backend == "ref" ? "" : " @" + backend;
  for (const std::string mode_name : {"prefill", "decode", "chunked:7"}) {
    auto mode = verify::parse_mode(mode_name, static_cast<int64_t>(ref.tokens.size()));
    auto got = verify::eval_logits(**model, ref.tokens, *mode);
    if (!got) {
      out.errors.push_back(fmt::format("{} {}: {}", ref.name, mode_name, got.error().message));
      continue;
    }
    verify::Row row{ref.name + at, mode_name, weights, verify::compare(*got, expected->data, vocab), {}};
    if (relaxed_top1(ref, weights))
      row.metrics.top1 = top1_where_decisive(*got, expected->data, vocab, ref.top1_gaps, kDecisiveGap);
    row.breaches = verify::breaches(row.metrics, thresholds_for(ref, weights, backend));
    out.rows.push_back(std::move(row));
    if (exact) {
      verify::Row e{
          ref.name + " (exact gelu)" + at, mode_name, weights, verify::compare(*got, *exact, vocab), {}};
      e.breaches = verify::breaches(e.metrics, verify::thresholds(weights));
      out.rows.push_back(std::move(e));
    }
  }
}

std::vector<std::string> available_backends() {
  std::vector<std::string> names;
  for (const char* name : {"ref", "cpu"})
    if (backend::make_backend(name).ok()) names.emplace_back(name);
  return names;
}

}  // namespace glass::conformance
