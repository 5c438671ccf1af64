#pragma once
// Measuring logits against a reference: per-position metrics, the thresholds each weight type must
// meet (stated once, with the reason), and the evaluation modes (prefill, decode, chunked). What
// `glass verify` and `glass logits` run, and the conformance suite; it reads only what the caller
// passes in (a reference .npy is read with glass::read_npy_f32, glass/files.h).
//
//   auto mode = glass::verify::parse_mode("decode", n);
//   auto got = glass::verify::eval_logits(*model, ids, *mode);              // [n, vocab]
//   auto m = glass::verify::compare(*got, reference.data, vocab);
//   auto failed = glass::verify::breaches(m, glass::verify::thresholds(glass::verify::weight_class(*model)));
#include <span>
#include <string>
#include <vector>

#include "glass/llm.h"

namespace glass::verify {

// Worst values over positions (rows) of one [n, vocab] comparison.
struct Metrics {
  double max_abs = 0;
  int64_t max_abs_row = 0;
  double mean_abs = 0;     // over all logits
  double min_pearson = 1;  // per-row Pearson correlation, worst row
  int64_t min_pearson_row = 0;
  double top1 = 1;       // fraction of rows whose argmax agrees
  double min_top10 = 1;  // worst row's overlap of the top-10 sets (0..1)
  int64_t min_top10_row = 0;
};

// got and ref are [n, vocab] row-major; sizes that differ or are not rows of `vocab` give metrics
// that fail every threshold (max_abs infinite).
Metrics compare(std::span<const float> got, std::span<const float> ref, int64_t vocab);

// Which threshold set applies: the least precise weight storage among the model's matrices.
enum class WeightClass { F32, F16, BF16, Quantized };
const char* weight_class_name(WeightClass c);
WeightClass weight_class(const Model& model);

struct Thresholds {
  double max_abs;
  double mean_abs;
  double min_pearson;
  double min_top1;
  const char* reason;
};
const Thresholds& thresholds(WeightClass c);
// Descriptions of every threshold the metrics breach; empty when they pass.
std::vector<std::string> breaches(const Metrics& m, const Thresholds& t);

// "prefill" (one call), "decode" (one token per call after the first), "chunked:N".
struct Mode {
  std::string name;
  int64_t chunk;  // tokens per eval call; decode = 1
};
Result<Mode> parse_mode(const std::string& name, int64_t n_tokens);

// Logits after every position of `tokens` in a fresh session, fed `mode.chunk` tokens per call.
// Errors: those of new_session and eval (an exception inside becomes an error, never escapes).
Result<std::vector<float>> eval_logits(const Model& model, std::span<const int32_t> tokens, const Mode& mode);

struct Row {
  std::string model;
  std::string mode;
  WeightClass weights;
  Metrics metrics;
  std::vector<std::string> breaches;
};
// One table, one line per (model, mode): each metric with its worst position.
std::string format_table(const std::vector<Row>& rows);

}  // namespace glass::verify
