#pragma once
// Constrained decoding: a Constraint is a compiled grammar that generation follows token by token
// (GenerateConfig::constraint). Before each draw the tokens the grammar does not allow next get
// -inf logits, ahead of every sampler (greedy too), so the sampled token is always allowed; when the
// grammar can only end, generation stops with FinishReason::Stop; when it allows nothing, generate
// returns an error rather than an unconstrained token. One Constraint may serve any number of
// sequences, models and threads at once: each sequence keeps its own matcher state.
//
//   auto c = glass::Constraint::from_json_schema(R"({"type":"object","properties":{"n":{"type":"integer"}},
//                                                   "required":["n"]})");
//   if (!c) return c.error();            // names the keyword and JSON path it cannot represent
//   glass::GenerateConfig cfg;
//   cfg.constraint = *c;
//   auto r = glass::generate(session, prompt, cfg);   // r->text parses and validates
#include <memory>
#include <string>
#include <string_view>

#include "glass/result.h"

namespace glass {

namespace internal {
struct Access;  // the runtime's way to Constraint::Impl (src/runtime/access.h); not API
}

class Constraint {
 public:
  struct Impl;

  // llama.cpp's GBNF (`root ::= ...`; `root` names the start rule). Errors name line and column,
  // undefined rules, left recursion, and grammars past the size bounds.
  static Result<std::shared_ptr<const Constraint>> from_gbnf(std::string_view gbnf,
                                                             std::string_view root = "root");
  // A JSON Schema (draft 2020-12 / 7 keywords; see docs/api.md for what is supported). Keywords it
  // cannot represent exactly are errors (ErrorCode::Unsupported) naming keyword and JSON path.
  static Result<std::shared_ptr<const Constraint>> from_json_schema(std::string_view schema_json);
  // Any JSON object (OpenAI's response_format json_object, `-j`): {"type": "object"}.
  static Result<std::shared_ptr<const Constraint>> json_object();
  // The whole output matches the regular expression (a subset: see grammar/regex.h).
  static Result<std::shared_ptr<const Constraint>> from_regex(std::string_view pattern);

  // The grammar as GBNF (what JSON Schema and regexes were translated to), for debugging.
  const std::string& gbnf() const;

  explicit Constraint(std::unique_ptr<Impl> impl);
  ~Constraint();
  Constraint(const Constraint&) = delete;
  Constraint& operator=(const Constraint&) = delete;

 private:
  friend struct internal::Access;
  std::unique_ptr<Impl> impl_;
};

}  // namespace glass
