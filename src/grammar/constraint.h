#pragma once
// Constraint's inside (include/glass/grammar.h): the compiled grammar, and per vocabulary the
// BoundGrammar every sequence under it shares (made on first use, kept while the vocabulary lives).
#include <map>
#include <memory>
#include <mutex>

#include "glass/grammar.h"
#include "grammar/bound.h"
#include "grammar/ir.h"
#include "grammar/token_index.h"

namespace glass {

struct Constraint::Impl {
  std::string gbnf;
  std::shared_ptr<const grammar::Grammar> grammar;

  // The bound grammar for `vocab` (one per vocabulary; thread-safe).
  std::shared_ptr<const grammar::BoundGrammar> bind(
      const std::shared_ptr<const grammar::TokenIndex>& vocab) const;

 private:
  mutable std::mutex mu_;
  mutable std::map<const grammar::TokenIndex*, std::pair<std::weak_ptr<const grammar::TokenIndex>,
                                                         std::shared_ptr<const grammar::BoundGrammar>>>
      bound_;
};

}  // namespace glass
