#include "references.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

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
    refs.push_back(Reference{model.stem().string(), model, dir / doc["file"].get<std::string>(),
                             doc["token_ids"].get<std::vector<int32_t>>()});
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
    verify::Row row{ref.name + (backend == "ref" ? "" : " @" + backend),
                    mode_name,
                    weights,
                    verify::compare(*got, expected->data, (*model)->info().vocab_size),
                    {}};
    row.breaches = verify::breaches(row.metrics, verify::thresholds(weights));
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
