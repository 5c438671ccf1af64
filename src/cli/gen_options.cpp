#include "cli/gen_options.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "glass/files.h"

namespace glass::cli {
namespace {

Error invalid(std::string message) { return make_error(ErrorCode::InvalidArgument, std::move(message)); }

// A CLI11 check that a number lies in [lo, hi] (finite); the message names the range and meaning.
CLI::Validator in_range(double lo, double hi, std::string meaning) {
  return CLI::Validator(
      [lo, hi, meaning](std::string& v) -> std::string {
        double x = 0;
        const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        if (ec != std::errc() || p != v.data() + v.size() || !std::isfinite(x))
          return fmt::format("'{}' is not a finite number", v);
        if (x < lo || x > hi) {
          const std::string range = hi == std::numeric_limits<double>::max()
                                        ? fmt::format(">= {}", lo)
                                        : fmt::format("in [{}, {}]", lo, hi);
          return fmt::format("{} must be {}{}", v, range, meaning.empty() ? "" : " (" + meaning + ")");
        }
        return {};
      },
      "", "");
}
constexpr double kAny = std::numeric_limits<double>::max();

// --seed: -1 (random) or [0, 2^64 - 2]; past 64 bits is an error, not a wrap.
Result<uint64_t> parse_seed(const std::string& v) {
  if (v == "-1") return SamplingConfig::kRandomSeed;
  uint64_t x = 0;
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec == std::errc::result_out_of_range ||
      (ec == std::errc() && p == v.data() + v.size() && x == SamplingConfig::kRandomSeed))
    return invalid(fmt::format("--seed {}: past 64 bits (seeds are 0 .. 2^64 - 2, -1 = random)", v));
  if (ec != std::errc() || p != v.data() + v.size())
    return invalid(fmt::format("--seed {}: expected an integer 0 .. 2^64 - 2, or -1 for a random seed", v));
  return x;
}

}  // namespace

std::string process_escapes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case '\'':
      case '"':
      case '\\':
      case '?':
        out += c;
        break;
      case 'x':
        if (i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
          out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
          i += 2;
          break;
        }
        [[fallthrough]];
      default:  // not an escape: kept as written
        out += '\\';
        out += c;
    }
  }
  return out;
}

Result<std::pair<int32_t, float>> parse_logit_bias(std::string_view text) {
  const auto bad = [&] {
    return invalid(
        fmt::format("--logit-bias '{}': expected TOKEN_ID(+/-)BIAS, e.g. 15043+1, 15043-1 or "
                    "15043-inf",
                    text));
  };
  int64_t id = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  auto r = std::from_chars(p, end, id);
  if (r.ec != std::errc() || r.ptr == p || r.ptr == end || id < 0 || id > INT32_MAX) return bad();
  const char sign = *r.ptr;
  if (sign != '+' && sign != '-') return bad();
  const std::string_view rest(r.ptr + 1, static_cast<size_t>(end - r.ptr - 1));
  float bias = 0;
  if (rest == "inf" || rest == "INF" || rest == "infinity") {
    bias = INFINITY;
  } else {
    auto f = std::from_chars(rest.data(), rest.data() + rest.size(), bias);
    if (f.ec != std::errc() || f.ptr != rest.data() + rest.size() || rest.empty() || !std::isfinite(bias))
      return bad();
  }
  if (sign == '-') bias = -bias;
  if (bias == INFINITY)
    return invalid(fmt::format("--logit-bias '{}': +inf is no bias (use -inf to ban)", text));
  return std::pair{static_cast<int32_t>(id), bias};
}

Result<std::vector<std::string>> parse_sampling_seq(std::string_view letters) {
  std::vector<std::string> names;
  for (const char c : letters) {
    const char* name = nullptr;
    switch (c) {
      case 'd':
        name = "dry";
        break;
      case 'e':
        name = "penalties";
        break;
      case 's':
        name = "top_n_sigma";
        break;
      case 'k':
        name = "top_k";
        break;
      case 'y':
        name = "typical_p";
        break;
      case 'p':
        name = "top_p";
        break;
      case 'm':
        name = "min_p";
        break;
      case 'x':
        name = "xtc";
        break;
      case 't':
        name = "temperature";
        break;
      default:
        return invalid(
            fmt::format("--sampling-seq '{}': unknown sampler letter '{}' (known: d dry, e penalties, "
                        "s top_n_sigma, k top_k, y typical_p, p top_p, m min_p, x xtc, t temperature)",
                        letters, c));
    }
    names.emplace_back(name);
  }
  return names;
}

void add_generation_options(CLI::App& cmd, GenOptions& g) {
  GenerateConfig& gen = g.gen;
  SamplingConfig& s = gen.sampling;
  auto num = [&cmd](const std::string& names, auto& field, const std::string& help, double lo, double hi,
                    const std::string& meaning = "") {
    cmd.add_option(names, field, help)->check(in_range(lo, hi, meaning))->capture_default_str();
  };
  // The chain's values, with llama.cpp's meanings for the ends of their ranges.
  num("--temp,--temperature", s.temperature, "temperature; <= 0 = greedy", -kAny, kAny);
  cmd.add_option("--top-k", s.top_k, "top-k; <= 0 = off")->capture_default_str();
  num("--top-p", s.top_p, "top-p mass in [0, 1]; 1 = off", 0, 1, "a probability; 1 = off");
  num("--min-p", s.min_p, "min-p in [0, 1]; 0 = off", 0, 1, "a probability; 0 = off");
  num("--typical,--typical-p", s.typical_p, "locally typical sampling mass in [0, 1]; 1 = off", 0, 1,
      "a probability; 1 = off");
  num("--repeat-penalty", s.repeat_penalty, "repetition penalty; 1 = off", 1e-6, kAny, "1 = off");
  cmd.add_option("--repeat-last-n", s.penalty_last_n, "penalty window in tokens; 0 = off, -1 = context")
      ->check(CLI::Range(-1, 1 << 24))
      ->capture_default_str();
  num("--presence-penalty", s.presence_penalty, "presence penalty; 0 = off", -kAny, kAny);
  num("--frequency-penalty", s.frequency_penalty, "frequency penalty; 0 = off", -kAny, kAny);
  num("--dry-multiplier", s.dry_multiplier, "DRY repetition penalty multiplier; 0 = off", 0, kAny, "0 = off");
  num("--dry-base", s.dry_base, "DRY base: the penalty grows as base^(repeat length - allowed length)", 1,
      kAny);
  cmd.add_option("--dry-allowed-length", s.dry_allowed_length, "DRY: repeats up to this length are free")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  cmd.add_option("--dry-penalty-last-n", s.dry_penalty_last_n,
                 "DRY: tokens scanned for repeats; 0 = off, -1 = context")
      ->check(CLI::Range(-1, 1 << 24))
      ->capture_default_str();
  // Repeatable; the first use replaces the defaults, "none" clears them (as llama.cpp's).
  auto breakers_given = std::make_shared<bool>(false);
  cmd.add_option_function<std::vector<std::string>>(
      "--dry-sequence-breaker",
      [&s, breakers_given](const std::vector<std::string>& v) {
        if (!*breakers_given) s.dry_sequence_breakers.clear();
        *breakers_given = true;
        for (const std::string& b : v) {
          if (b == "none")
            s.dry_sequence_breakers.clear();
          else
            s.dry_sequence_breakers.push_back(process_escapes(b));
        }
      },
      "DRY sequence breaker (repeatable; replaces the defaults '\\n', ':', '\"', '*'; \"none\" for none)");
  num("--xtc-probability", s.xtc_probability, "XTC: chance per token of excluding the top choices; 0 = off",
      0, 1, "a probability; 0 = off");
  num("--xtc-threshold", s.xtc_threshold,
      "XTC: tokens at or above this probability are the top choices; > 0.5 = off", 0, 1, "a probability");
  num("--top-nsigma,--top-n-sigma", s.top_n_sigma,
      "top-n-sigma: keep logits within N deviations of the best; <= 0 = off", -kAny, kAny);
  num("--dynatemp-range", s.dynatemp_range, "dynamic temperature: temp +- range by entropy; 0 = off", 0, kAny,
      "0 = off");
  num("--dynatemp-exp", s.dynatemp_exponent, "dynamic temperature exponent", 0, kAny);
  cmd.add_option(
         "--mirostat", s.mirostat,
         "Mirostat: 0 = off, 1 = v1, 2 = v2 (replaces top-k, top-p, typical and the other truncations)")
      ->check(CLI::Range(0, 2))
      ->capture_default_str();
  num("--mirostat-lr", s.mirostat_eta, "Mirostat learning rate, eta", 0, kAny);
  num("--mirostat-ent", s.mirostat_tau, "Mirostat target entropy (surprise, bits), tau", 0, kAny);
  cmd.add_option_function<std::string>(
      "--samplers",
      [&s](const std::string& v) {
        s.order.clear();
        size_t start = 0;
        while (start <= v.size()) {
          const size_t semi = v.find(';', start);
          const std::string name =
              v.substr(start, semi == std::string::npos ? std::string::npos : semi - start);
          if (name.empty()) throw CLI::ValidationError("--samplers", "'" + v + "': an empty sampler name");
          s.order.push_back(name);
          if (semi == std::string::npos) break;
          start = semi + 1;
        }
      },
      "samplers in the order they run, separated by ';' (default: "
      "penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature)");
  cmd.add_option_function<std::string>(
      "--sampling-seq,--sampler-seq",
      [&s](const std::string& v) {
        auto names = parse_sampling_seq(v);
        if (!names) throw CLI::ValidationError(names.error().message);
        s.order = std::move(*names);
      },
      "the sampler order as letters (default: edskypmxt)");
  cmd.add_option_function<std::vector<std::string>>(
      "-l,--logit-bias",
      [&s](const std::vector<std::string>& v) {
        for (const std::string& b : v) {
          auto bias = parse_logit_bias(b);
          if (!bias) throw CLI::ValidationError(bias.error().message);
          s.logit_bias.push_back(*bias);
        }
      },
      "TOKEN_ID(+/-)BIAS added to the token's logit (repeatable): 15043+1, 15043-1, 15043-inf bans it");
  cmd.add_option_function<std::string>(
      "-s,--seed",
      [&s](const std::string& v) {
        auto seed = parse_seed(v);
        if (!seed) throw CLI::ValidationError(seed.error().message);
        s.seed = *seed;
      },
      "sampling seed; -1 = random (the default; printed with --json and -v)");
  // Both append: CLI11 would otherwise let the second option's values replace the first's.
  auto append = [&gen](const std::vector<std::string>& v) {
    gen.stop.insert(gen.stop.end(), v.begin(), v.end());
  };
  cmd.add_option_function<std::vector<std::string>>("--stop", append, "stop string (repeatable)");
  cmd.add_option_function<std::vector<std::string>>(
      "-r,--reverse-prompt", append,
      "stop at PROMPT (repeatable; llama.cpp's reverse prompt; in chat the reply ends there)");
  cmd.add_flag("--ignore-eos", g.ignore_eos,
               "keep generating past end-of-generation tokens (they are banned, as --logit-bias EOS-inf)");
  // llama.cpp's names: -j '{}' asks for any JSON value, -j '{"type": "object"}' for JSON mode.
  auto* grammar =
      cmd.add_option("--grammar", g.grammar, "constrain the output to a GBNF grammar (root ::= ...)");
  auto* grammar_file = cmd.add_option("--grammar-file", g.grammar_file, "the GBNF grammar from a file");
  auto* schema = cmd.add_option("-j,--json-schema", g.json_schema,
                                "constrain the output to a JSON schema ('{}': any JSON; unsupported keywords "
                                "are errors)");
  auto* schema_file =
      cmd.add_option("--json-schema-file", g.json_schema_file, "the JSON schema from a file (also -jf)");
  grammar->excludes(grammar_file)->excludes(schema)->excludes(schema_file);
  grammar_file->excludes(schema)->excludes(schema_file);
  schema->excludes(schema_file);
  cmd.add_flag(
      "-e,--escape,!--no-escape", g.escape,
      "process escapes (\\n, \\r, \\t, \\', \\\", \\\\, \\xHH) in prompts and stop strings (default: on)");
}

namespace {

Status compile_constraint(GenOptions& g) {
  using Compile = Result<std::shared_ptr<const Constraint>> (*)(std::string_view);
  const Compile gbnf = [](std::string_view t) { return Constraint::from_gbnf(t); };
  const Compile schema = [](std::string_view t) { return Constraint::from_json_schema(t); };
  struct Source {
    const char* flag;
    const std::string& value;
    bool is_file;
    Compile compile;
  };
  const Source sources[] = {{"--grammar", g.grammar, false, gbnf},
                            {"--grammar-file", g.grammar_file, true, gbnf},
                            {"--json-schema", g.json_schema, false, schema},
                            {"--json-schema-file", g.json_schema_file, true, schema}};
  for (const Source& src : sources) {  // CLI11 lets at most one of them through
    if (src.value.empty()) continue;
    Result<std::string> text = src.value;
    if (src.is_file) text = read_file_bounded(src.value, kMaxTextFileBytes, src.flag);
    if (!text) return text.error();
    auto c = src.compile(*text);
    if (!c) return make_error(c.error().code, fmt::format("{}: {}", src.flag, c.error().message));
    g.gen.constraint = *c;
  }
  return {};
}

}  // namespace

Status check_generation_options(GenOptions& g) {
  if (auto st = compile_constraint(g); !st) return st;
  // No model yet: token ids and the context's windows are checked when generation starts.
  return validate(g.gen.sampling);
}

Status prepare_generation(GenOptions& g, const Model& model) {
  if (g.escape)
    for (std::string& stop : g.gen.stop) stop = process_escapes(stop);
  const int64_t n_vocab = model.info().vocab_size;
  for (const auto& [id, bias] : g.gen.sampling.logit_bias)
    if (id >= n_vocab)
      return invalid(
          fmt::format("--logit-bias {}: token id out of range for the model's {} tokens", id, n_vocab));
  if (g.ignore_eos) {
    g.gen.stop_at_end_of_generation = false;
    for (int64_t id = 0; id < n_vocab; ++id)
      if (model.is_end_of_generation(static_cast<int32_t>(id)))
        g.gen.sampling.logit_bias.emplace_back(static_cast<int32_t>(id), -INFINITY);
  }
  return {};
}

}  // namespace glass::cli
