// The sampler chain: building it from SamplingConfig (llama.cpp's common_sampler order), running
// and timing it, and snapshotting its samplers' state.
#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>
#include <string>

#include "core/exception_guard.h"
#include "runtime/sampler.h"
#include "runtime/sampler_internal.h"

namespace glass::runtime {
namespace {

enum class Kind { Penalties, Dry, TopNSigma, TopK, TypicalP, TopP, MinP, Xtc, Temperature };

struct KindName {
  std::string_view name;
  Kind kind;
};

// Names accepted in SamplingConfig::order ('-' reads as '_', case ignored); the first row per kind
// is canonical (in llama.cpp's default order) and the aliases are llama.cpp's
// (common_sampler_types_from_names: its canonical names, without '_', and a few more).
constexpr std::array kKindNames{
    KindName{"penalties", Kind::Penalties},
    KindName{"dry", Kind::Dry},
    KindName{"top_n_sigma", Kind::TopNSigma},
    KindName{"top_k", Kind::TopK},
    KindName{"typical_p", Kind::TypicalP},
    KindName{"top_p", Kind::TopP},
    KindName{"min_p", Kind::MinP},
    KindName{"xtc", Kind::Xtc},
    KindName{"temperature", Kind::Temperature},
    KindName{"typ_p", Kind::TypicalP},
    KindName{"typical", Kind::TypicalP},
    KindName{"typ", Kind::TypicalP},
    KindName{"nucleus", Kind::TopP},
    KindName{"temp", Kind::Temperature},
    KindName{"topnsigma", Kind::TopNSigma},
    KindName{"topk", Kind::TopK},
    KindName{"typp", Kind::TypicalP},
    KindName{"topp", Kind::TopP},
    KindName{"minp", Kind::MinP},
};

// llama.cpp's default "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature".
constexpr std::array kDefaultOrder{Kind::Penalties, Kind::Dry,      Kind::TopNSigma,
                                   Kind::TopK,      Kind::TypicalP, Kind::TopP,
                                   Kind::MinP,      Kind::Xtc,      Kind::Temperature};

// The penalty window is allocated up front: bound it (a context never holds more tokens).
constexpr int32_t kMaxPenaltyWindow = 1 << 24;

Error invalid(const std::string& message) {
  return make_error(ErrorCode::InvalidArgument, "sampling: " + message);
}

std::string known_names() {
  std::string out;
  for (size_t i = 0; i < kDefaultOrder.size(); ++i)
    out +=  // the canonical rows
        (i ? ", " : "") + std::string(kKindNames[i].name);
  return out;
}

Result<Kind> parse_kind(const std::string& name) {
  std::string n = name;
  std::replace(n.begin(), n.end(), '-', '_');
  for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const KindName& k : kKindNames)
    if (k.name == n) return k.kind;
  return invalid("unknown sampler '" + name + "' in order (known: " + known_names() + ")");
}

std::string fmt(float v) { return std::to_string(v); }

// Values no sampler can use; everything else is a valid setting (possibly "off").
Status validate(const SamplingConfig& c, size_t vocab_size) {
  const std::pair<const char*, float> numbers[] = {
      {"temperature", c.temperature},
      {"top_p", c.top_p},
      {"min_p", c.min_p},
      {"typical_p", c.typical_p},
      {"repeat_penalty", c.repeat_penalty},
      {"presence_penalty", c.presence_penalty},
      {"frequency_penalty", c.frequency_penalty},
      {"dry_multiplier", c.dry_multiplier},
      {"dry_base", c.dry_base},
      {"xtc_probability", c.xtc_probability},
      {"xtc_threshold", c.xtc_threshold},
      {"top_n_sigma", c.top_n_sigma},
      {"dynatemp_range", c.dynatemp_range},
      {"dynatemp_exponent", c.dynatemp_exponent},
      {"mirostat_tau", c.mirostat_tau},
      {"mirostat_eta", c.mirostat_eta},
  };
  for (const auto& [name, v] : numbers)
    if (!std::isfinite(v)) return invalid(std::string(name) + " must be a finite number, got " + fmt(v));
  // Probabilities: outside [0, 1] is a mistake, not "off" (1 and 0 are the documented offs).
  const std::pair<const char*, float> probabilities[] = {{"top_p", c.top_p},
                                                         {"min_p", c.min_p},
                                                         {"typical_p", c.typical_p},
                                                         {"xtc_probability", c.xtc_probability},
                                                         {"xtc_threshold", c.xtc_threshold}};
  for (const auto& [name, v] : probabilities)
    if (v < 0.0f || v > 1.0f) return invalid(std::string(name) + " must be in [0, 1], got " + fmt(v));
  if (c.dry_multiplier < 0.0f)
    return invalid("dry_multiplier must be >= 0 (0 = off), got " + fmt(c.dry_multiplier));
  if (c.dry_base < 1.0f) return invalid("dry_base must be >= 1, got " + fmt(c.dry_base));
  if (c.dry_allowed_length < 0)
    return invalid("dry_allowed_length must be >= 0, got " + std::to_string(c.dry_allowed_length));
  if (c.dry_penalty_last_n < -1 || c.dry_penalty_last_n > kMaxPenaltyWindow)
    return invalid("dry_penalty_last_n must be in [-1, " + std::to_string(kMaxPenaltyWindow) +
                   "] (-1 = context size, 0 = off), got " + std::to_string(c.dry_penalty_last_n));
  if (c.dynatemp_range < 0.0f)
    return invalid("dynatemp_range must be >= 0 (0 = off), got " + fmt(c.dynatemp_range));
  if (c.dynatemp_exponent < 0.0f)
    return invalid("dynatemp_exponent must be >= 0, got " + fmt(c.dynatemp_exponent));
  if (c.mirostat < 0 || c.mirostat > 2)
    return invalid("mirostat must be 0 (off), 1 or 2, got " + std::to_string(c.mirostat));
  if (c.mirostat_tau < 0.0f || c.mirostat_eta < 0.0f)
    return invalid("mirostat_tau and mirostat_eta must be >= 0");
  if (!(c.repeat_penalty > 0.0f) || std::isinf(c.repeat_penalty))
    return invalid("repeat_penalty must be > 0 and finite (1 = off), got " + fmt(c.repeat_penalty));
  if (std::isinf(c.presence_penalty) || std::isinf(c.frequency_penalty))
    return invalid("presence_penalty and frequency_penalty must be finite");
  if (c.penalty_last_n > kMaxPenaltyWindow)
    return invalid("penalty_last_n must be at most " + std::to_string(kMaxPenaltyWindow) + ", got " +
                   std::to_string(c.penalty_last_n));
  if (c.penalty_last_n < -1)
    return invalid("penalty_last_n must be >= -1 (-1 = context size, 0 = off), got " +
                   std::to_string(c.penalty_last_n));
  for (const auto& [id, bias] : c.logit_bias) {
    if (id < 0 || static_cast<size_t>(id) >= vocab_size)
      return invalid("logit_bias token " + std::to_string(id) + " out of range [0, " +
                     std::to_string(vocab_size) + ")");
    if (std::isnan(bias)) return invalid("logit_bias for token " + std::to_string(id) + " is nan");
  }
  return {};
}

// A window setting in tokens: -1 is the context size; no window is longer than the context.
Result<size_t> resolve_window(int32_t last_n, size_t context_size, const char* what) {
  if (last_n == -1) {
    if (context_size == 0)
      return invalid(std::string(what) + " = -1 (the context size) needs a known context size");
    return context_size;
  }
  const auto window = static_cast<size_t>(last_n);
  return context_size > 0 ? std::min(window, context_size) : window;
}

// XTC's coin must not be the final draw's stream (the same uniforms would correlate the two).
uint64_t xtc_seed(uint64_t seed) { return seed * 0xD1342543DE82EF95ULL + 0x5854435fULL; }

uint64_t draw_seed() {
  std::random_device rd;
  uint64_t seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  if (seed == SamplingConfig::kRandomSeed) seed = 0;  // so the reported seed replays
  return seed;
}

}  // namespace

namespace {
// Whether the chain picks the best candidate after its leading logit_bias samplers: the samplers
// after them keep the best until one selects it, or none selects (the chain then selects as greedy
// does). `bias` gets the leading biases in id order, each id's in the order the samplers add them
// (so a logit gets the same float sums).
bool picks_best(std::span<const std::unique_ptr<Sampler>> samplers,
                std::vector<std::pair<int32_t, float>>& bias) {
  size_t i = 0;
  for (; i < samplers.size() && !samplers[i]->logit_bias().empty(); ++i)
    for (const auto& [id, b] : samplers[i]->logit_bias())
      if (id >= 0) bias.emplace_back(id, b);
  std::stable_sort(bias.begin(), bias.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (; i < samplers.size(); ++i) {
    if (samplers[i]->selects_best()) return true;
    if (!samplers[i]->keeps_best()) return false;
  }
  return true;
}
}  // namespace

SamplerChain::SamplerChain(std::vector<std::unique_ptr<Sampler>> samplers, size_t vocab_size, uint64_t seed)
    : samplers_(std::move(samplers)), seed_(seed) {
  greedy_ = picks_best(samplers_, greedy_bias_);
  buf_.items.reserve(vocab_size);
}

SamplerChain::SamplerChain(const SamplerChain& other)
    : Sampler(other),
      seed_(other.seed_),
      greedy_(other.greedy_),
      greedy_bias_(other.greedy_bias_),
      stats_(other.stats_) {
  samplers_.reserve(other.samplers_.size());
  for (const auto& s : other.samplers_) samplers_.push_back(s->clone());
  buf_.items.reserve(other.buf_.items.capacity());
}

SamplerChain& SamplerChain::operator=(const SamplerChain& other) {
  if (this != &other) *this = SamplerChain(other);
  return *this;
}

Result<SamplerChain> SamplerChain::from_config(const SamplingConfig& c, size_t vocab_size,
                                               size_t context_size, const SamplerVocab* vocab) {
  if (auto st = validate(c, vocab_size); !st) return st.error();
  std::vector<Kind> order;
  if (c.order.empty()) {
    order.assign(kDefaultOrder.begin(), kDefaultOrder.end());
  } else {
    for (const std::string& name : c.order) {
      auto kind = parse_kind(name);
      if (!kind) return kind.error();
      order.push_back(*kind);
    }
  }

  auto window = resolve_window(c.penalty_last_n, context_size, "penalty_last_n");
  if (!window) return window.error();
  auto dry_window = resolve_window(c.dry_penalty_last_n, context_size, "dry_penalty_last_n");
  if (!dry_window) return dry_window.error();
  const bool penalties_on =
      *window > 0 && (c.repeat_penalty != 1.0f || c.frequency_penalty != 0.0f || c.presence_penalty != 0.0f);
  const uint64_t seed = c.seed == SamplingConfig::kRandomSeed ? draw_seed() : c.seed;

  std::vector<std::unique_ptr<Sampler>> s;
  if (!c.logit_bias.empty()) s.push_back(make_logit_bias(c.logit_bias));
  if (c.mirostat != 0) {
    // As llama.cpp's common_sampler: temperature, then Mirostat draws; the order is not used.
    s.push_back(make_temperature(c.temperature));
    s.push_back(make_mirostat(c.mirostat, c.mirostat_tau, c.mirostat_eta, vocab_size, seed));
    return SamplerChain(std::move(s), vocab_size, seed);
  }
  for (const Kind k : order) {
    switch (k) {
      case Kind::Penalties:
        if (penalties_on)
          s.push_back(
              make_penalties(*window, c.repeat_penalty, c.frequency_penalty, c.presence_penalty, vocab_size));
        break;
      case Kind::Dry:
        if (c.dry_multiplier > 0.0f && *dry_window > 0)
          s.push_back(make_dry(
              c.dry_multiplier, c.dry_base, c.dry_allowed_length, *dry_window,
              vocab ? dry_breakers(c.dry_sequence_breakers, *vocab, vocab_size) : std::vector<DryBreaker>{},
              vocab_size));
        break;
      case Kind::TopNSigma:
        if (c.top_n_sigma > 0.0f) s.push_back(make_top_n_sigma(c.top_n_sigma));
        break;
      case Kind::TopK:
        if (c.top_k > 0) s.push_back(make_top_k(c.top_k));
        break;
      case Kind::TypicalP:
        if (c.typical_p < 1.0f) s.push_back(make_typical_p(c.typical_p, vocab_size));
        break;
      case Kind::TopP:
        if (c.top_p < 1.0f) s.push_back(make_top_p(c.top_p));
        break;
      case Kind::MinP:
        if (c.min_p > 0.0f) s.push_back(make_min_p(c.min_p));
        break;
      case Kind::Xtc:
        if (c.xtc_probability > 0.0f && c.xtc_threshold <= 0.5f)
          s.push_back(make_xtc(c.xtc_probability, c.xtc_threshold, xtc_seed(seed)));
        break;
      case Kind::Temperature:
        s.push_back(make_dynatemp(c.temperature, c.dynatemp_range, c.dynatemp_exponent));
        break;
    }
  }
  s.push_back(make_dist(seed));
  return SamplerChain(std::move(s), vocab_size, seed);
}

void SamplerChain::apply(Candidates& c) {
  GLASS_CHECK(!c.items.empty());
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& s : samplers_) {
    s->apply(c);
    if (c.selected >= 0) break;
  }
  if (c.selected < 0) c.selected = c.items[detail::best_index(c)].id;
  count_sample(t0);
}

void SamplerChain::count_sample(std::chrono::steady_clock::time_point t0) {
  ++stats_.n_sample;
  stats_.sample_us += static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count());
}

// The best candidate in one pass, as the chain would pick it: the highest biased logit, the lowest
// id on ties, NaN as -inf (with its bias added, as logit_bias adds it to the candidate's -inf).
int32_t SamplerChain::pick_best(std::span<const float> logits) const {
  size_t best = 0, b = 0;
  float top = 0.0f;
  bool any = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    float v = std::isnan(logits[i]) ? -INFINITY : logits[i];
    for (; b < greedy_bias_.size() && static_cast<size_t>(greedy_bias_[b].first) == i; ++b)
      v += greedy_bias_[b].second;
    if (!any || v > top) {
      best = i;
      top = v;
      any = true;
    }
  }
  return static_cast<int32_t>(best);
}

int32_t SamplerChain::sample(std::span<const float> logits) {
  GLASS_CHECK(!logits.empty());
  if (greedy_) {
    const auto t0 = std::chrono::steady_clock::now();
    const int32_t best = pick_best(logits);
    count_sample(t0);
    return best;
  }
  buf_.items.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    const float l = logits[i];
    buf_.items[i] = Candidate{static_cast<int32_t>(i), std::isnan(l) ? -INFINITY : l, 0.0f};
  }
  buf_.selected = -1;
  apply(buf_);
  return buf_.selected;
}

void SamplerChain::accept(int32_t token) {
  for (auto& s : samplers_) s->accept(token);
}

void SamplerChain::reset() {
  for (auto& s : samplers_) s->reset();
}

std::unique_ptr<Sampler> SamplerChain::clone() const { return std::make_unique<SamplerChain>(*this); }

std::string SamplerChain::describe() const {
  std::string out;
  for (const auto& s : samplers_) out += (out.empty() ? "" : " -> ") + std::string(s->name());
  return out;
}

// Format: "glass-sampler-chain 1 <n>\n" then per sampler "<name> <bytes>\n<state>\n".
std::string SamplerChain::save_state() const {
  std::string out = "glass-sampler-chain 1 " + std::to_string(samplers_.size()) + "\n";
  for (const auto& s : samplers_) {
    const std::string state = s->save_state();
    out += std::string(s->name()) + " " + std::to_string(state.size()) + "\n" + state + "\n";
  }
  return out;
}

Status SamplerChain::load_state(std::string_view state) {
  std::string_view rest = state;
  auto line = [&rest]() -> std::optional<std::string_view> {
    const size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;
    const std::string_view l = rest.substr(0, nl);
    rest.remove_prefix(nl + 1);
    return l;
  };
  auto bad = [](const std::string& what) {
    return make_error(ErrorCode::InvalidArgument, "sampler chain state: " + what);
  };
  const std::string header = "glass-sampler-chain 1 " + std::to_string(samplers_.size());
  const auto first = line();
  if (!first || *first != header)
    return bad("expected header '" + header + "', got '" + std::string(first.value_or(rest).substr(0, 80)) +
               "'");
  // Load into copies and swap them in at the end, so a bad state changes nothing.
  std::vector<std::unique_ptr<Sampler>> loaded;
  loaded.reserve(samplers_.size());
  for (const auto& s : samplers_) {
    const auto l = line();
    const std::string want = std::string(s->name()) + " ";
    if (!l || !l->starts_with(want))
      return bad("expected sampler '" + std::string(s->name()) + "', got '" +
                 std::string(l.value_or("").substr(0, 80)) + "'");
    uint64_t n = 0;
    detail::StateReader len(l->substr(want.size()));
    if (!len.next(n) || !len.done() || n + 1 > rest.size() || rest[n] != '\n')
      return bad("sampler '" + std::string(s->name()) + "': bad length line '" + std::string(*l) + "'");
    auto copy = s->clone();
    if (auto st = copy->load_state(rest.substr(0, n)); !st) return st.error();
    rest.remove_prefix(n + 1);
    loaded.push_back(std::move(copy));
  }
  if (!rest.empty()) return bad(std::to_string(rest.size()) + " bytes after the last sampler");
  samplers_ = std::move(loaded);
  return {};
}

}  // namespace glass::runtime

namespace glass {

// Public (glass/llm.h): the checks from_config makes, without building a chain.
Status validate(const SamplingConfig& config, int64_t vocab_size, int64_t n_ctx) try {
  if (vocab_size < 0 || n_ctx < 0)
    return make_error(ErrorCode::InvalidArgument, "sampling: vocab_size " + std::to_string(vocab_size) +
                                                      " and n_ctx " + std::to_string(n_ctx) +
                                                      " must be >= 0 (0: not known)");
  // Without a vocabulary every id an int32_t holds is in range; the biases are still checked.
  const size_t vocab = vocab_size > 0 ? static_cast<size_t>(vocab_size) : size_t{1} << 31;
  if (auto st = runtime::validate(config, vocab); !st) return st;
  for (const std::string& name : config.order)
    if (auto kind = runtime::parse_kind(name); !kind) return kind.error();
  if (n_ctx > 0) {  // -1 windows with no context known are resolved when generation starts
    const auto context = static_cast<size_t>(n_ctx);
    if (auto w = runtime::resolve_window(config.penalty_last_n, context, "penalty_last_n"); !w)
      return w.error();
    if (auto w = runtime::resolve_window(config.dry_penalty_last_n, context, "dry_penalty_last_n"); !w)
      return w.error();
  }
  return {};
} catch (...) {
  return error_from_exception("sampling", std::current_exception());
}

Result<std::string> describe_sampler_chain(const SamplingConfig& config, int64_t vocab_size,
                                           int64_t n_ctx) try {
  if (vocab_size <= 0 || n_ctx < 0)
    return make_error(ErrorCode::InvalidArgument, "sampling: vocab_size " + std::to_string(vocab_size) +
                                                      " must be > 0 and n_ctx " + std::to_string(n_ctx) +
                                                      " >= 0 (0: not known)");
  auto chain =
      runtime::SamplerChain::from_config(config, static_cast<size_t>(vocab_size), static_cast<size_t>(n_ctx));
  if (!chain) return chain.error();
  return chain->describe();
} catch (...) {
  return error_from_exception("sampling", std::current_exception());
}

}  // namespace glass
