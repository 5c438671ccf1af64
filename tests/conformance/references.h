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
  // The reference's own top1 - top2 logit gap per position, where its JSON records it
  // (validation.top1_minus_top2_logit_per_position); empty otherwise.
  std::vector<double> top1_gaps;
};

std::vector<Reference> find_references(const std::filesystem::path& fixtures, const std::string& set);

struct Outcome {
  std::vector<verify::Row> rows;
  std::vector<std::string> pending;  // references whose architecture glass does not support yet
  std::vector<std::string> errors;   // anything else that went wrong
};

// Checks `ref` in prefill, decode and chunked:7 modes on `backend`, loading through `rewrite` when
// given (mutation tests).
void check(const Reference& ref, const std::string& backend, const GraphRewrite& rewrite, Outcome& out);

// The backends this build can run ("ref", and "cpu" when present).
std::vector<std::string> available_backends();

}  // namespace glass::conformance
