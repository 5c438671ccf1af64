#include "references.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>

#include "backend/backend.h"
#include "formats/npy.h"

namespace glass::conformance {
namespace {

// Quantized references that record their top1 - top2 gaps (fixtures/reference/synthetic-arch/
// README.md, "Quantized files"): llama.cpp rounds activations to 8-bit blocks, which is
// discontinuous, so max abs is only a sanity bound there: f32 activations times dequantized weights
// (the ref backend) measure 0.057-0.12 max abs and up to 0.0134 mean abs on these files. Whole rows
// must correlate (Pearson >= 0.99988 measured) and the argmax must agree wherever the reference's
// own gap is >= 0.1 (every flip seen was at a gap < 0.051).
constexpr double kDecisiveGap = 0.1;
const verify::Thresholds kQuantWithGaps{
    0.25, 2.5e-2, 0.9998, 1.0,
    "quantized with recorded gaps: Pearson and top-1 where the reference's top1-top2 gap >= 0.1"};

// The fraction of positions with a decisive reference gap whose argmax agrees.
double decisive_top1(std::span<const float> got, std::span<const float> want, int64_t vocab,
                     const std::vector<double>& gaps) {
  const auto v = static_cast<size_t>(vocab);
  size_t counted = 0, agree = 0;
  for (size_t r = 0; r < gaps.size() && (r + 1) * v <= got.size(); ++r) {
    if (gaps[r] < kDecisiveGap) continue;
    const auto g = got.subspan(r * v, v), w = want.subspan(r * v, v);
    ++counted;
    agree +=
        std::max_element(g.begin(), g.end()) - g.begin() == std::max_element(w.begin(), w.end()) - w.begin();
  }
  return counted == 0 ? 1.0 : static_cast<double>(agree) / static_cast<double>(counted);
}

}  // namespace

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
    std::vector<double> gaps;
    if (doc.contains("validation") && doc["validation"].contains("top1_minus_top2_logit_per_position"))
      gaps = doc["validation"]["top1_minus_top2_logit_per_position"].get<std::vector<double>>();
    refs.push_back(Reference{model.stem().string(), model, dir / doc["file"].get<std::string>(),
                             doc["token_ids"].get<std::vector<int32_t>>(), std::move(gaps)});
  }
  std::sort(refs.begin(), refs.end(), [](const Reference& a, const Reference& b) { return a.name < b.name; });
  return refs;
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
  const verify::WeightClass weights = verify::weight_class(**model);
  for (const std::string mode_name : {"prefill", "decode", "chunked:7"}) {
    auto mode = verify::parse_mode(mode_name, static_cast<int64_t>(ref.tokens.size()));
    auto got = verify::eval_logits(**model, ref.tokens, *mode);
    if (!got) {
      out.errors.push_back(fmt::format("{} {}: {}", ref.name, mode_name, got.error().message));
      continue;
    }
    const int64_t vocab = (*model)->info().vocab_size;
    verify::Row row{ref.name + (backend == "ref" ? "" : " @" + backend),
                    mode_name,
                    weights,
                    verify::compare(*got, expected->data, vocab),
                    {}};
    const bool gap_rule = weights == verify::WeightClass::Quantized && !ref.top1_gaps.empty();
    if (gap_rule) row.metrics.top1 = decisive_top1(*got, expected->data, vocab, ref.top1_gaps);
    row.breaches = verify::breaches(row.metrics, gap_rule ? kQuantWithGaps : verify::thresholds(weights));
    out.rows.push_back(std::move(row));
  }
}

std::vector<std::string> available_backends() {
  std::vector<std::string> names;
  for (const char* name : {"ref", "cpu"})
    if (backend::make_backend(name).ok()) names.emplace_back(name);
  return names;
}

}  // namespace glass::conformance
