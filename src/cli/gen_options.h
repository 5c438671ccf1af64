#pragma once
// The generation flags `run` and `chat` share, with llama.cpp's names and meanings: the sampler
// chain (--temp ... --mirostat, --samplers, --sampling-seq, --logit-bias, --seed), stop strings
// (--stop, -r), --ignore-eos, -e/--no-escape and the constraint (--grammar, --grammar-file,
// -j/--json-schema, -jf/--json-schema-file). Values are checked as they are parsed (the error
// names the flag and value); what needs the model (--ignore-eos's token bans, --logit-bias ids)
// is applied by prepare_generation after loading.
#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "glass/llm.h"

namespace glass::cli {

struct GenOptions {
  GenerateConfig gen = [] {
    GenerateConfig g;
    g.sampling.seed = SamplingConfig::kRandomSeed;  // llama.cpp's default: -1, a random seed
    return g;
  }();
  bool ignore_eos = false;
  bool escape = true;  // llama.cpp's default: \n, \t, \\ ... in prompts and stop strings are processed
  bool verbose = false;
  // Constrained decoding (glass/grammar.h), at most one: compiled by check_generation_options.
  std::string grammar, grammar_file, json_schema, json_schema_file;
};

void add_generation_options(CLI::App& cmd, GenOptions& g);
// Checks the sampler settings without a model (names in --samplers, ranges) and compiles the
// grammar or schema into g.gen.constraint, so a typo fails before a long load.
Status check_generation_options(GenOptions& g);
// After loading: escapes in the stop strings, --ignore-eos (end-of-generation tokens banned and no
// longer stopping, as llama.cpp's "--logit-bias EOS-inf").
Status prepare_generation(GenOptions& g, const Model& model);
// llama.cpp's string_process_escapes: \n \r \t \' \" \\ \a \b \f \v \? and \xHH; others kept.
std::string process_escapes(std::string_view s);
// One "--logit-bias TOKEN(+/-)BIAS" value: "15043+1", "15043-1", "15043-inf".
Result<std::pair<int32_t, float>> parse_logit_bias(std::string_view text);
// --sampling-seq's letters (d dry, e penalties, s top_n_sigma, k top_k, y typical_p, p top_p,
// m min_p, x xtc, t temperature) as sampler names.
Result<std::vector<std::string>> parse_sampling_seq(std::string_view letters);

}  // namespace glass::cli
