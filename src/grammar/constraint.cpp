#include "grammar/constraint.h"

#include "grammar/analysis.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/regex.h"

namespace glass {
namespace {

Result<std::shared_ptr<const Constraint>> make(std::string gbnf, std::string_view root) {
  auto g = grammar::compile_gbnf(gbnf, root);
  if (!g) return g.error();
  if (Status st = grammar::check_matchable(*g); !st) return st.error();
  auto impl = std::make_unique<Constraint::Impl>();
  impl->gbnf = std::move(gbnf);
  impl->grammar = std::make_shared<const grammar::Grammar>(std::move(*g));
  return std::shared_ptr<const Constraint>(std::make_shared<Constraint>(std::move(impl)));
}

}  // namespace

Constraint::Constraint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Constraint::~Constraint() = default;

const std::string& Constraint::gbnf() const { return impl_->gbnf; }

Result<std::shared_ptr<const Constraint>> Constraint::from_gbnf(std::string_view gbnf,
                                                                std::string_view root) {
  return make(std::string(gbnf), root);
}

Result<std::shared_ptr<const Constraint>> Constraint::from_json_schema(std::string_view schema_json) {
  auto text = grammar::json_schema_to_gbnf(schema_json);
  if (!text) return text.error();
  return make(std::move(*text), "root");
}

Result<std::shared_ptr<const Constraint>> Constraint::json_object() {
  return make(grammar::json_object_gbnf(), "root");
}

Result<std::shared_ptr<const Constraint>> Constraint::from_regex(std::string_view pattern) {
  auto expr = grammar::regex_to_gbnf(pattern, grammar::RegexMode::Full);
  if (!expr) return expr.error();
  return make("root ::= " + *expr + "\n", "root");
}

std::shared_ptr<const grammar::BoundGrammar> Constraint::Impl::bind(
    const std::shared_ptr<const grammar::TokenIndex>& vocab) const {
  std::lock_guard lk(mu_);
  for (auto it = bound_.begin(); it != bound_.end();)  // drop vocabularies that are gone
    if (it->second.first.expired())
      it = bound_.erase(it);
    else
      ++it;
  auto& slot = bound_[vocab.get()];
  if (!slot.second) slot = {vocab, std::make_shared<const grammar::BoundGrammar>(grammar, vocab)};
  return slot.second;
}

}  // namespace glass
