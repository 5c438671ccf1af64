#pragma once
// A model's TokenIndex, built the first time a constrained request needs it (a 128k vocabulary
// takes tens of milliseconds) and then shared by every sequence. Copyable: copies share the slot.
#include <functional>
#include <memory>
#include <mutex>

#include "grammar/token_index.h"

namespace glass::grammar {

class TokenIndexSlot {
 public:
  std::shared_ptr<const TokenIndex> get(
      const std::function<std::shared_ptr<const TokenIndex>()>& build) const {
    std::lock_guard lk(state_->mu);
    if (!state_->index) state_->index = build();
    return state_->index;
  }

 private:
  struct State {
    std::mutex mu;
    std::shared_ptr<const TokenIndex> index;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace glass::grammar
