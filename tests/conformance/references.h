#pragma once
// Discovery and checking of reference logits: every *.json under fixtures/reference/<set>/ that
// names a model, token ids and an .npy file. New reference files join without code changes.
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/model_impl.h"
#include "runtime/verify.h"

namespace glass::conformance {

struct Reference {
  std::string name;  // the model file's stem, e.g. "llama-gqa-q4_0"
  std::filesystem::path model;
  std::filesystem::path logits;
  std::vector<int32_t> tokens;
  std::string architecture;          // the JSON's "architecture", when given
  std::filesystem::path exact_gelu;  // <stem>.exact-gelu.npy beside the logits (Gemma family), if any
  std::vector<double> top1_gaps;     // the reference's top1 - top2 logit per position, if given
};

std::vector<Reference> find_references(const std::filesystem::path& fixtures, const std::string& set);

struct Outcome {
  std::vector<verify::Row> rows;
  std::vector<std::string> pending;  // references whose architecture glass does not support yet
  std::vector<std::string> errors;   // anything else that went wrong
};

// The bar a reference is held to: verify::thresholds of the weight class, except where the
// reference's README measured that its producer cannot meet it (see references.cpp).
// `backend`: "ref" computes with f32 activations where llama.cpp (and the cpu backend) round them
// to 8 bits for quantized weights; one family's bar depends on it (LFM2, below).
verify::Thresholds thresholds_for(const Reference& ref, verify::WeightClass weights,
                                  const std::string& backend = "cpu");

// Checks `ref` in prefill, decode and chunked:7 modes on `backend`, loading through `rewrite` when
// given (mutation tests). A reference with an exact-GELU companion adds one row per mode against it
// ("<name> (exact gelu)", at the F32 bar).
void check(const Reference& ref, const std::string& backend, const GraphRewrite& rewrite, Outcome& out);

// The backends this build can run ("ref", and "cpu" when present).
std::vector<std::string> available_backends();

}  // namespace glass::conformance
