// glass_constrained_e2e MODEL_OUT CORPUS OUT: generates once per schema of the corpus under that
// schema (a random-weight model, temperature 1, seed = the schema's index) and writes one JSON line
// per generation: {"name", "finish", "text", "tokens"}. scripts/check_constrained_outputs.py runs
// it and validates the outputs with python3-jsonschema (the ctest grammar_e2e_schema_outputs).
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "glass/grammar.h"
#include "glass/llm.h"
#include "json_vocab_model.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: glass_constrained_e2e CORPUS.jsonl OUT.jsonl [max_tokens]\n");
    return 2;
  }
  const int max_tokens = argc > 3 ? std::atoi(argv[3]) : 3000;
  auto model = glass::load_llm(glass::test::write_json_vocab_model().string(), {});
  if (!model) {
    fmt::print(stderr, "{}\n", model.error().message);
    return 1;
  }
  std::ifstream in(argv[1]);
  std::ofstream out(argv[2]);
  std::string line;
  uint64_t index = 0;
  while (std::getline(in, line)) {
    const auto entry = nlohmann::ordered_json::parse(line);
    auto c = glass::Constraint::from_json_schema(entry["schema"].dump());
    nlohmann::ordered_json rec;
    rec["name"] = entry["name"];
    if (!c) {
      rec["error"] = c.error().message;
    } else {
      glass::GenerateConfig cfg;
      cfg.max_tokens = max_tokens;
      cfg.sampling.temperature = 1.0f;
      cfg.sampling.top_k = 0;
      cfg.sampling.top_p = 1.0f;
      cfg.sampling.min_p = 0.0f;
      cfg.sampling.seed = ++index;
      cfg.constraint = *c;
      auto session = (*model)->new_session();
      if (!session) return 1;
      auto r = glass::generate(**session, std::vector<int32_t>{1}, cfg);
      if (!r) {
        rec["error"] = r.error().message;
      } else {
        rec["finish"] = glass::finish_reason_name(r->finish);
        rec["text"] = r->text;
        rec["tokens"] = r->tokens.size();
      }
    }
    out << rec.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return 0;
}
