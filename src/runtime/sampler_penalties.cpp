// Repetition, frequency and presence penalties over a window of the last accepted tokens, as
// llama.cpp's llama_sampler_penalties: for a token seen `count` > 0 times in the window,
//   logit = logit <= 0 ? logit * repeat : logit / repeat   (CTRL, Keskar et al. 2019, with the
//                                                           usual fix for negative logits)
//   logit -= count * frequency + presence                  (OpenAI's frequency/presence)
// The window is a ring buffer and the counts a dense per-id table, both sized once, so accept()
// and apply() never allocate (llama.cpp keeps an unordered_map).
#include <algorithm>

#include "runtime/sampler.h"
#include "runtime/sampler_internal.h"

namespace glass::runtime {
namespace {

class Penalties final : public Sampler {
 public:
  Penalties(size_t window, float repeat, float frequency, float presence, size_t vocab_size)
      : window_(window),
        repeat_(repeat),
        frequency_(frequency),
        presence_(presence),
        ring_(window, 0),
        counts_(vocab_size, 0) {}

  std::string_view name() const override { return "penalties"; }

  void apply(Candidates& c) override {
    if (n_ == 0 || (repeat_ == 1.0f && frequency_ == 0.0f && presence_ == 0.0f)) return;
    for (Candidate& x : c.items) {
      const auto id = static_cast<size_t>(x.id);
      if (x.id < 0 || id >= counts_.size() || counts_[id] == 0) continue;
      const int32_t count = counts_[id];
      x.logit = x.logit <= 0.0f ? x.logit * repeat_ : x.logit / repeat_;
      x.logit -= static_cast<float>(count) * frequency_ + presence_;
    }
  }

  void accept(int32_t token) override {
    if (window_ == 0 || token < 0 || static_cast<size_t>(token) >= counts_.size()) return;
    if (n_ < window_) {
      ring_[(head_ + n_) % window_] = token;
      ++n_;
    } else {  // full: the oldest token leaves the window
      --counts_[static_cast<size_t>(ring_[head_])];
      ring_[head_] = token;
      head_ = (head_ + 1) % window_;
    }
    ++counts_[static_cast<size_t>(token)];
  }

  void reset() override {
    for (size_t i = 0; i < n_; ++i) counts_[static_cast<size_t>(ring_[(head_ + i) % window_])] = 0;
    head_ = 0;
    n_ = 0;
  }

  std::unique_ptr<Sampler> clone() const override { return std::make_unique<Penalties>(*this); }

  // "n t_oldest ... t_newest"
  std::string save_state() const override {
    std::string out;
    detail::put_u64(out, n_);
    for (size_t i = 0; i < n_; ++i) detail::put_u64(out, static_cast<uint64_t>(ring_[(head_ + i) % window_]));
    return out;
  }

  Status load_state(std::string_view state) override {
    detail::StateReader in(state);
    uint64_t n = 0;
    if (!in.next(n)) return bad(state, "a token count first");
    if (n > window_)
      return bad(state,
                 "at most " + std::to_string(window_) + " tokens (the window), got " + std::to_string(n));
    // Validate everything before changing anything.
    detail::StateReader check = in;
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t t = 0;
      if (!check.next(t)) return bad(state, std::to_string(n) + " token ids");
      if (t >= counts_.size())
        return bad(state, "token ids below " + std::to_string(counts_.size()) + ", got " + std::to_string(t));
    }
    if (!check.done()) return bad(state, "exactly " + std::to_string(n) + " token ids");
    reset();
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t t = 0;
      (void)in.next(t);
      accept(static_cast<int32_t>(t));
    }
    return {};
  }

 private:
  static Error bad(std::string_view state, const std::string& expected) {
    return make_error(ErrorCode::InvalidArgument, "sampler 'penalties': state must hold " + expected +
                                                      " (state '" + std::string(state.substr(0, 120)) + "')");
  }

  size_t window_;
  float repeat_, frequency_, presence_;
  std::vector<int32_t> ring_;    // [window_] the last accepted tokens, oldest at head_
  size_t head_ = 0, n_ = 0;      // ring_ holds n_ tokens starting at head_
  std::vector<int32_t> counts_;  // [vocab_size] occurrences of each id in the window
};

}  // namespace

std::unique_ptr<Sampler> make_penalties(size_t window, float repeat, float frequency, float presence,
                                        size_t vocab_size) {
  return std::make_unique<Penalties>(window, repeat, frequency, presence, vocab_size);
}

}  // namespace glass::runtime
