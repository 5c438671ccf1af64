// glass verify: a validation report users can attach to a bug. Against a reference .npy (logits
// after every position, e.g. from llama.cpp) or, with --self, cached decode against full-prefix
// evaluation. Prints one table (each metric with its worst position) and exits 1 on a breach of the
// thresholds for the model's weight type.
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "cli/common.h"
#include "glass/files.h"
#include "glass/json.h"
#include "glass/verify.h"

namespace glass::cli {
namespace {

struct VerifyOptions {
  ModelOptions model;
  std::string reference;
  std::string tokens;
  std::string mode = "all";
  bool self = false;
  int64_t n_self = 256;
  uint64_t seed = 1;
};

// --tokens, else the "token_ids" of the .json beside the reference (as the fixtures have).
Result<std::vector<int32_t>> reference_tokens(const VerifyOptions& o) {
  if (!o.tokens.empty()) return parse_token_ids(o.tokens);
  std::filesystem::path json = o.reference;
  json.replace_extension(".json");
  auto text = read_file_bounded(json, kMaxTextFileBytes, "verify");  // regular files, bounded
  if (!text) return text.error();
  auto parsed = parse_json_bounded<nlohmann::json>(*text, json.string());
  if (!parsed) return parsed.error();
  const nlohmann::json& doc = *parsed;
  if (!doc.is_object() || !doc.contains("token_ids") || !doc["token_ids"].is_array())
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("verify: give --tokens (no token_ids in {})", json.string()));
  return doc["token_ids"].get<std::vector<int32_t>>();
}

// Seeded ids in [0, vocab), starting with BOS when the model has one.
std::vector<int32_t> self_tokens(const Model& model, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(model.info().vocab_size - 1));
  std::vector<int32_t> ids;
  auto bos = model.tokenize("", true, false);
  if (bos && !bos->empty()) ids.push_back(bos->front());
  while (static_cast<int64_t>(ids.size()) < n) ids.push_back(id(rng));
  return ids;
}

int run_verify(VerifyOptions o) {
  if (o.self == !o.reference.empty())
    return report(make_error(ErrorCode::InvalidArgument, "verify: give --reference or --self"));
  std::vector<int32_t> ids;
  if (!o.self) {
    auto t = reference_tokens(o);
    if (!t) return report(t.error());
    ids = std::move(*t);
  } else if (!o.tokens.empty()) {
    auto t = parse_token_ids(o.tokens);
    if (!t) return report(t.error());
    ids = std::move(*t);
  }
  const auto n = static_cast<int64_t>(o.self && ids.empty() ? o.n_self : static_cast<int64_t>(ids.size()));
  o.model.load.min_ctx = n;
  if (o.model.load.n_batch == 0) o.model.load.n_batch = n;
  int load_rc = 1;
  auto model = load_or_report(o.model, load_rc);
  if (!model) return load_rc;
  if (ids.empty()) ids = self_tokens(*model, n, o.seed);
  const int64_t vocab = model->info().vocab_size;

  std::vector<float> expected;
  std::string modes = o.mode == "all" ? "prefill,decode,chunked:7" : o.mode;
  if (o.self) {
    auto full = verify::eval_logits(*model, ids, verify::Mode{"prefill", n});
    if (!full) return report(full.error());
    expected = std::move(*full);
    if (o.mode == "all") modes = "decode,chunked:7";
  } else {
    auto ref = read_npy_f32(o.reference);
    if (!ref) return report(ref.error());
    if (ref->shape != std::vector<int64_t>{n, vocab})
      return report(
          make_error(ErrorCode::InvalidArgument, fmt::format("verify: reference is [{}], expected [{}, {}]",
                                                             fmt::join(ref->shape, ", "), n, vocab)));
    expected = std::move(ref->data);
  }
  const verify::WeightClass weights = verify::weight_class(*model);
  std::vector<verify::Row> rows;
  bool failed = false;
  for (const auto& name : CLI::detail::split(modes, ',')) {
    auto mode = verify::parse_mode(name, n);
    if (!mode) return report(mode.error());
    auto got = verify::eval_logits(*model, ids, *mode);
    if (!got) return report(got.error());
    verify::Row row{std::filesystem::path(model->info().path).filename().string(),
                    name,
                    weights,
                    verify::compare(*got, expected, vocab),
                    {}};
    row.breaches = verify::breaches(row.metrics, verify::thresholds(weights));
    failed = failed || !row.breaches.empty();
    rows.push_back(std::move(row));
  }
  fmt::print("glass verify: {} over {} positions, {} thresholds ({})\n",
             o.self ? "cached decode vs full-prefix evaluation" : "against " + o.reference, n,
             verify::weight_class_name(weights), verify::thresholds(weights).reason);
  fmt::print("{}", verify::format_table(rows));
  for (const auto& r : rows)
    for (const auto& b : r.breaches) fmt::print("breach: {} {}: {}\n", r.model, r.mode, b);
  fmt::print("{}\n", failed ? "FAIL" : "PASS");
  return failed ? 1 : 0;
}

}  // namespace

void add_verify_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<VerifyOptions>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "check logits against a reference .npy, or cached decode against full prefix");
  add_model_options(*cmd, o->model);
  cmd->add_option("--reference", o->reference, "reference logits .npy [n_tokens, n_vocab]");
  cmd->add_option("--tokens", o->tokens, "token ids (default: token_ids of the .json beside --reference)");
  cmd->add_option("--mode", o->mode, "all | prefill | decode | chunked:N (comma-separated)")
      ->capture_default_str();
  cmd->add_flag("--self", o->self, "compare cached decode with full-prefix evaluation (no reference file)");
  cmd->add_option("-n,--n-positions", o->n_self, "positions for --self without --tokens")
      ->capture_default_str();
  cmd->add_option("-s,--seed", o->seed, "seed of the --self token sequence")->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = run_verify(*o); });
}

}  // namespace glass::cli
