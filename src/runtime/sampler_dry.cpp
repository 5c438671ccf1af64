// DRY ("don't repeat yourself", Weidmann; koboldcpp #982, as llama.cpp's llama_sampler_dry): a
// token that would make the end of the text repeat an earlier stretch of length L >= allowed_length
// is penalized by multiplier * base^(L - allowed_length). Written from the definition:
//   1. the most recent sequence breaker in the window bounds how far back a repeat may reach;
//   2. with the window reversed (r[0] the newest token), the Z-function z[k] = the longest common
//      prefix of r and r[k..] is the length of the stretch ending k tokens back that equals the
//      text's end, so r[k - 1], the token that followed that stretch, would extend it;
//   3. each such token keeps its longest repeat and is penalized by it.
// The window, the Z scratch and the per-token table are sized once; apply() allocates nothing.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "runtime/sampler.h"
#include "runtime/sampler_internal.h"

namespace glass::runtime {
namespace {

// llama.cpp's bounds on breaker processing: so a long breaker cannot make the scan quadratic.
constexpr size_t kMaxBreakerBytes = 40;
constexpr size_t kMaxBreakerTail = 20;

class Dry final : public Sampler {
 public:
  Dry(float multiplier, float base, int32_t allowed_length, size_t window, std::vector<DryBreaker> breakers,
      size_t vocab_size)
      : multiplier_(multiplier),
        base_(base),
        allowed_(allowed_length),
        window_(window),
        breakers_(std::move(breakers)),
        single_breaker_(vocab_size, 0),
        first_breaker_(vocab_size, -1),
        longest_(vocab_size, -1),
        ring_(window, 0) {
    // Breakers grouped by head, so step 1 finds a token's breakers directly.
    std::stable_sort(breakers_.begin(), breakers_.end(),
                     [](const DryBreaker& a, const DryBreaker& b) { return a.head < b.head; });
    for (size_t i = 0; i < breakers_.size(); ++i) {
      const auto h = static_cast<size_t>(breakers_[i].head);
      if (h >= vocab_size) continue;
      if (first_breaker_[h] < 0) first_breaker_[h] = static_cast<int32_t>(i);
      if (breakers_[i].tail.empty()) single_breaker_[h] = 1;
    }
    rev_.reserve(window);
    z_.reserve(window);
    touched_.reserve(window);
    // base^e overflows a float past e = log(FLT_MAX) / log(base): cap the exponent there.
    if (base_ > 1.000001f)
      max_exponent_ =
          static_cast<int32_t>(std::floor(std::log(static_cast<double>(std::numeric_limits<float>::max())) /
                                          std::log(static_cast<double>(base_))));
  }

  std::string_view name() const override { return "dry"; }

  void accept(int32_t token) override {
    if (window_ == 0) return;
    if (n_ < window_) {
      ring_[(head_ + n_) % window_] = token;
      ++n_;
    } else {
      ring_[head_] = token;
      head_ = (head_ + 1) % window_;
    }
  }

  void reset() override { head_ = n_ = 0; }

  void apply(Candidates& c) override {
    const auto n = static_cast<int64_t>(n_);
    if (window_ == 0 || multiplier_ == 0.0f || n <= allowed_) return;
    rev_.resize(n_);
    for (size_t i = 0; i < n_; ++i) rev_[i] = ring_[(head_ + n_ - 1 - i) % window_];

    // 1. The newest breaker (head at i tokens back, its tail after it) caps repeats to what follows it.
    int64_t limit = n;
    for (int64_t i = 0; i < n && limit == n; ++i) {
      const int32_t tok = rev_[static_cast<size_t>(i)];
      if (tok < 0 || static_cast<size_t>(tok) >= first_breaker_.size() ||
          first_breaker_[static_cast<size_t>(tok)] < 0)
        continue;
      int64_t longest = -1;
      for (size_t b = static_cast<size_t>(first_breaker_[static_cast<size_t>(tok)]);
           b < breakers_.size() && breakers_[b].head == tok; ++b) {
        const auto& tail = breakers_[b].tail;
        const auto len = static_cast<int64_t>(tail.size());
        if (len <= longest || len > i) continue;
        bool match = true;
        for (int64_t o = 0; o < len && match; ++o)
          match = tail[static_cast<size_t>(o)] == rev_[static_cast<size_t>(i - o - 1)];
        if (match) longest = len;
      }
      if (longest >= 0) limit = i - longest;
    }
    if (limit < allowed_) return;

    // 2. The Z-function of the reversed window (linear: each token is compared once past the box).
    z_.assign(n_, 0);
    z_[0] = static_cast<int32_t>(n);
    for (int64_t k = 1, l = 0, r = 0; k < n; ++k) {
      int64_t len = k < r ? std::min<int64_t>(r - k, z_[static_cast<size_t>(k - l)]) : 0;
      while (k + len < n && rev_[static_cast<size_t>(len)] == rev_[static_cast<size_t>(k + len)]) ++len;
      z_[static_cast<size_t>(k)] = static_cast<int32_t>(len);
      if (k + len > r) {
        l = k;
        r = k + len;
      }
    }

    // 3. The token after each repeat, with its longest repeat.
    for (int64_t k = 1; k < n; ++k) {
      const int64_t len = std::min<int64_t>(z_[static_cast<size_t>(k)], limit);
      if (len < allowed_) continue;
      const int32_t tok = rev_[static_cast<size_t>(k - 1)];
      if (tok < 0 || static_cast<size_t>(tok) >= longest_.size()) continue;
      int32_t& best = longest_[static_cast<size_t>(tok)];
      if (best < 0) touched_.push_back(tok);
      best = std::max(best, static_cast<int32_t>(len));
    }

    // 4. The penalties; single-token breakers are exempt (a newline may always follow).
    for (Candidate& x : c.items) {
      if (x.id < 0 || static_cast<size_t>(x.id) >= longest_.size()) continue;
      const int32_t len = longest_[static_cast<size_t>(x.id)];
      if (len < 0 || single_breaker_[static_cast<size_t>(x.id)]) continue;
      int32_t e = len - allowed_;
      if (max_exponent_ > 0) e = std::min(e, max_exponent_);
      x.logit -= multiplier_ * std::pow(base_, static_cast<float>(e));
    }
    for (const int32_t t : touched_) longest_[static_cast<size_t>(t)] = -1;
    touched_.clear();
  }

  std::unique_ptr<Sampler> clone() const override { return std::make_unique<Dry>(*this); }

  // "n t_oldest ... t_newest", as the penalties write theirs.
  std::string save_state() const override {
    std::string out;
    detail::put_u64(out, n_);
    for (size_t i = 0; i < n_; ++i) detail::put_u64(out, static_cast<uint64_t>(ring_[(head_ + i) % window_]));
    return out;
  }

  Status load_state(std::string_view state) override {
    detail::StateReader in(state);
    uint64_t n = 0;
    std::vector<int32_t> tokens;
    bool ok = in.next(n) && n <= window_;
    for (uint64_t i = 0; ok && i < n; ++i) {
      uint64_t t = 0;
      ok = in.next(t) && t <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
      tokens.push_back(static_cast<int32_t>(t));
    }
    if (!ok || !in.done())
      return make_error(ErrorCode::InvalidArgument,
                        "sampler 'dry': state must be a count of at most " + std::to_string(window_) +
                            " and that many token ids, got '" + std::string(state.substr(0, 120)) + "'");
    reset();
    for (const int32_t t : tokens) accept(t);
    return {};
  }

 private:
  float multiplier_, base_;
  int32_t allowed_;
  size_t window_;
  std::vector<DryBreaker> breakers_;     // sorted by head
  std::vector<uint8_t> single_breaker_;  // per id: its own text holds a breaker
  std::vector<int32_t> first_breaker_;   // per id: its first breaker in breakers_, -1 for none
  std::vector<int32_t> longest_;         // per id: longest repeat it would extend, -1 for none
  std::vector<int32_t> ring_;
  size_t head_ = 0, n_ = 0;
  int32_t max_exponent_ = 0;
  std::vector<int32_t> rev_, z_, touched_;
};

}  // namespace

std::vector<DryBreaker> dry_breakers(std::span<const std::string> texts, const SamplerVocab& vocab,
                                     size_t vocab_size) {
  std::vector<DryBreaker> out;
  if (!vocab.piece || !vocab.tokenize) return out;
  std::vector<std::string> pieces(vocab_size);
  for (size_t id = 0; id < vocab_size; ++id) pieces[id] = vocab.piece(static_cast<int32_t>(id));
  for (std::string text : texts) {
    if (text.empty()) continue;
    if (text.size() > kMaxBreakerBytes) text.resize(kMaxBreakerBytes);
    for (size_t id = 0; id < vocab_size; ++id) {
      const std::string& word = pieces[id];
      auto add = [&](std::vector<int32_t> tail) {
        out.push_back({static_cast<int32_t>(id), std::move(tail)});
      };
      if (word.find(text) != std::string::npos) {
        add({});
        continue;
      }
      // The token ends with text[0, m) for some m < |text|: the rest must follow as tokens.
      for (size_t pos = word.find(text[0]); pos != std::string::npos; pos = word.find(text[0], pos + 1)) {
        const size_t m = word.size() - pos;
        if (m >= text.size() || word.compare(pos, m, text, 0, m) != 0) continue;
        std::vector<int32_t> tail = vocab.tokenize(std::string_view(text).substr(m));
        if (tail.size() > kMaxBreakerTail) tail.resize(kMaxBreakerTail);
        add(std::move(tail));
      }
    }
  }
  // One entry per (head, tail): several breakers or overlaps can give the same one.
  auto key = [](const DryBreaker& b) { return std::tie(b.head, b.tail); };
  std::sort(out.begin(), out.end(),
            [&](const DryBreaker& a, const DryBreaker& b) { return key(a) < key(b); });
  out.erase(std::unique(out.begin(), out.end(),
                        [&](const DryBreaker& a, const DryBreaker& b) { return key(a) == key(b); }),
            out.end());
  return out;
}

std::unique_ptr<Sampler> make_dry(float multiplier, float base, int32_t allowed_length, size_t window,
                                  std::vector<DryBreaker> breakers, size_t vocab_size) {
  return std::make_unique<Dry>(multiplier, base, allowed_length, window, std::move(breakers), vocab_size);
}

}  // namespace glass::runtime
