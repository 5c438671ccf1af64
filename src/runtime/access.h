#pragma once
// The one way from the public classes to their implementations (Model::Impl, Session::Impl,
// Constraint::Impl) for the runtime's own code: the public headers declare glass::internal::Access
// a friend and nothing else, so a program that includes only include/glass/ cannot reach them.
#include "glass/grammar.h"
#include "glass/llm.h"

namespace glass::internal {

struct Access {
  static const Model::Impl& impl(const Model& model) { return *model.impl_; }
  static Session::Impl& impl(Session& session) { return *session.impl_; }
  static const Session::Impl& impl(const Session& session) { return *session.impl_; }
  static const Constraint::Impl& impl(const Constraint& constraint) { return *constraint.impl_; }
};

}  // namespace glass::internal
