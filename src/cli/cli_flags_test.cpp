// The glass command's flags as a llama.cpp user types them: every option each help lists is accepted
// by that subcommand, llama.cpp's spellings and meanings (-sys, -cnv, -ngl, -r, --ignore-eos, -e,
// --logit-bias, --samplers, --seed -1, --version, --log-disable, -v), and values out of range are
// errors naming the flag, before any model is loaded.
#include <gtest/gtest.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_test_support.h"

namespace glass {
namespace {

struct HelpOption {
  std::vector<std::string> names;  // every spelling the help lists
  std::string value;               // "" for a flag
  std::string needs;               // another option it needs ("Needs: --json")
  bool required = false;
};

// A value the option's help line says it takes: the first of a member list, the low end of a range,
// else one that fits the option.
std::string value_for(const std::string& name, const std::string& type, const fs::path& file) {
  std::smatch m;
  if (std::regex_search(type, m, std::regex(R"(:\{([^,}]+))"))) return m[1];
  if (std::regex_search(type, m, std::regex(R"(in \[(-?[0-9.]+) -)"))) return m[1];
  if (type.starts_with("TEXT")) {
    if (name == "--logit-bias" || name == "-l") return "1+1";
    if (name == "--samplers") return "top_k";
    if (name == "--sampling-seq" || name == "--sampler-seq") return "k";
    if (name == "--var") return "x=1";
    if (name == "--chat-template-file" || name == "-f" || name == "--file" || name == "--reference" ||
        name == "--context" || name == "--template")
      return file.string();
  }
  return "1";
}

// The options of `glass SUB --help`, and in `base` the arguments its required positionals need.
std::vector<HelpOption> parse_help(const std::string& help, const fs::path& file, std::string& base) {
  std::vector<HelpOption> out;
  std::istringstream lines(help);
  std::string line, section;
  while (std::getline(lines, line)) {
    if (!line.empty() && line[0] != ' ') section = line;
    if (line.size() < 3 || line[0] != ' ' || line[1] != ' ' || line[2] == ' ') continue;
    std::istringstream words(line.substr(2));
    std::string names, type;
    words >> names >> type;
    if (section.starts_with("Positionals")) {
      if (line.find("REQUIRED") != std::string::npos) {
        base += ' ';
        base += value_for(names, type, file);
      }
      continue;
    }
    if (names[0] != '-' || names == "-h,--help") continue;
    HelpOption o;
    names = names.substr(0, names.find('{'));  // "--no-repack{false}"
    std::stringstream split(names);
    for (std::string n; std::getline(split, n, ',');) o.names.push_back(n);
    const bool takes_value = type.starts_with("TEXT") || type.starts_with("INT") ||
                             type.starts_with("UINT") || type.starts_with("FLOAT");
    if (takes_value) o.value = value_for(o.names.back(), type, file);
    if (const size_t n = line.find("Needs: "); n != std::string::npos) {
      std::istringstream needs(line.substr(n + 7));
      needs >> o.needs;
    }
    o.required = line.find("REQUIRED") != std::string::npos;
    out.push_back(std::move(o));
  }
  return out;
}

// Each subcommand's help, every spelling of every option in it, parsed by that subcommand (the
// GLASS_CLI_PARSE_ONLY hook: arguments checked, nothing run).
TEST_F(Cli, EveryOptionEachHelpListsIsAcceptedByThatSubcommand) {
  std::ofstream(path("f.txt")) << "{}";
  const Ran top = glass("--help");
  ASSERT_EQ(top.status, 0);
  std::vector<std::string> subs;
  std::istringstream lines(top.out.substr(top.out.find("Subcommands:")));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    std::istringstream w(line);
    std::string name;
    if (w >> name) subs.push_back(name);
  }
  ASSERT_GE(subs.size(), 12u) << top.out;
  size_t checked = 0;
  for (const std::string& sub : subs) {
    const Ran help = glass(sub + " --help");
    ASSERT_EQ(help.status, 0) << sub;
    std::string base;
    const auto options = parse_help(help.out, path("f.txt"), base);
    EXPECT_FALSE(options.empty()) << sub;
    for (const HelpOption& o : options)
      for (const std::string& name : o.names) {
        std::string required;  // the other required options
        for (const HelpOption& r : options)
          if (r.required && &r != &o) required += " " + r.names.back() + " '" + r.value + "'";
        const std::string args = sub + base + required + " " + name +
                                 (o.value.empty() ? "" : " '" + o.value + "'") +
                                 (o.needs.empty() ? "" : " " + o.needs);
        const Ran r = glass(args, "", "GLASS_CLI_PARSE_ONLY=1");
        EXPECT_EQ(r.status, 0) << "glass " << args << "\n" << r.err << r.out;
        ++checked;
      }
  }
  EXPECT_GT(checked, 150u);
}

// --chat-template-file only where a chat is rendered; llama.cpp's one-dash spellings are named in
// the help of the commands that take them.
TEST_F(Cli, HelpListsOnlyTheOptionsTheSubcommandUses) {
  for (const char* sub : {"bench", "graph", "logits", "verify"}) {
    const Ran r = glass(std::string(sub) + " --help");
    EXPECT_EQ(r.out.find("--chat-template-file"), std::string::npos) << sub;
    EXPECT_EQ(r.out.find("--temp"), std::string::npos) << sub;
  }
  for (const char* sub : {"run", "chat", "serve"}) {
    const Ran r = glass(std::string(sub) + " --help");
    EXPECT_NE(r.out.find("--chat-template-file"), std::string::npos) << sub;
  }
  const Ran run = glass("run --help");
  for (const char* spelling : {"-sys", "-cnv", "-ngl"})
    EXPECT_NE(run.out.find(spelling), std::string::npos) << spelling;
}

TEST_F(Cli, VersionNamesTheBuildAndItsKernelTiers) {
  const Ran r = glass("--version");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex(R"(^glass [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]+|unknown)")))
      << r.out;
  EXPECT_NE(r.out.find(" build)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scalar"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("this CPU runs "), std::string::npos) << r.out;
}

// CLI11 alone reads "-ngl 99" as "-n gl 99" and "-sys hi" as "-s ys hi": here a one-dash word is
// llama.cpp's option or an unknown one, never two others.
TEST_F(Cli, OneDashWordsAreLlamaCppsOptionsOrUnknownNeverSplit) {
  for (const char* bad : {"-xyz", "-ngx 1", "-nope"}) {
    const Ran r = glass(std::string("run -n 1 ") + bad);
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_NE(r.err.find("unknown option '" + std::string(bad).substr(0, std::string(bad).find(' ')) + "'"),
              std::string::npos)
        << r.err;
  }
  // GPU options: accepted with one note, the run goes on on the CPU.
  const Ran gpu = glass("run -p Once -n 3 --temp 0 -t 1 -ngl 99 -fa on --json");
  ASSERT_EQ(gpu.status, 0) << gpu.err;
  EXPECT_NE(gpu.err.find("-ngl 99: this build has no GPU backend"), std::string::npos) << gpu.err;
  EXPECT_EQ(nlohmann::json::parse(gpu.out)["tokens"].size(), 3u);
  // -sys is the system prompt (conversation mode): the bundled model has no chat template, which
  // is what the error says (not a seed of "ys").
  const Ran sys = glass("run -sys hi -p hello -n 2");
  EXPECT_NE(sys.status, 0);
  EXPECT_NE(sys.err.find("no chat template"), std::string::npos) << sys.err;
  // A value that starts with a dash is the option's value.
  const Ran dash = glass("run -p '-abc' -n 2 --temp 0 -t 1 --json");
  ASSERT_EQ(dash.status, 0) << dash.err;
}

TEST_F(Cli, OutOfRangeValuesAreErrorsNamingTheFlag) {
  const std::pair<const char*, const char*> cases[] = {
      {"--top-p 2", "--top-p"},
      {"--min-p 2", "--min-p"},
      {"--typical -1", "--typical"},
      {"--xtc-probability 1.5", "--xtc-probability"},
      {"--dry-base 0.5", "--dry-base"},
      {"--mirostat 3", "--mirostat"},
      {"--temp nan", "--temp"},
      {"--seed 18446744073709551616", "past 64 bits"},
      {"--seed 18446744073709551615", "past 64 bits"},
      {"--seed -2", "--seed"},
      {"--logit-bias 12x", "--logit-bias '12x'"},
      {"--logit-bias 12+inf", "+inf"},
      {"--samplers 'top_k;bogus'", "'bogus'"},
      {"--samplers 'top_k;;temp'", "empty sampler name"},
      {"--sampling-seq kz", "letter 'z'"},
      {"-t 100000", "-t 100000"},
      {"-c 64 -b 128", "-b 128 is larger than the context"},
      {"-c -5", "-c -5"},
      {"--logit-bias 100000+1", "--logit-bias 100000"},  // past the model's vocabulary
  };
  for (const auto& [args, what] : cases) {
    const Ran r = glass(std::string("run -n 2 ") + args);
    EXPECT_NE(r.status, 0) << args;
    EXPECT_NE(r.err.find(what), std::string::npos) << args << ": " << r.err;
    if (std::string(args).starts_with("--logit-bias 100000")) continue;
    EXPECT_EQ(r.err.find("loaded"), std::string::npos) << args << ": checked before loading";
  }
  for (const char* bad : {"1,,2", "1,", "1;2", "-1", "x", "99999999999"}) {
    const Ran r = glass(std::string("logits --tokens '") + bad + "' -o out.npy");
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_NE(r.err.find("token ids"), std::string::npos) << bad << ": " << r.err;
  }
  // llama.cpp's meanings at the ends: temperature <= 0 is greedy, top-k <= 0 off.
  const Ran greedy = glass("run -n 4 -t 1 --temp -1 --top-k -1 --json");
  ASSERT_EQ(greedy.status, 0) << greedy.err;
  const Ran zero = glass("run -n 4 -t 1 --temp 0 --json");
  ASSERT_EQ(zero.status, 0) << zero.err;
  EXPECT_EQ(nlohmann::json::parse(greedy.out)["tokens"], nlohmann::json::parse(zero.out)["tokens"]);
}

// llama.cpp's -ctk / -ctv: f32 or f16, K and V alike (glass keeps them in one type); the load line
// says which type the cache got.
TEST_F(Cli, CacheTypeFlagsAsLlamaCppSpellsThem) {
  const Ran f16 = glass("run -p Once -n 2 --temp 0 -t 1 -v -ctk f16 -ctv f16");
  ASSERT_EQ(f16.status, 0) << f16.err;
  EXPECT_NE(f16.err.find("(f16 cache of"), std::string::npos) << f16.err;
  const Ran v_only = glass("run -p Once -n 2 --temp 0 -t 1 -v --cache-type-v f16");
  ASSERT_EQ(v_only.status, 0) << v_only.err;
  EXPECT_NE(v_only.err.find("(f16 cache of"), std::string::npos) << v_only.err;
  const Ran q8 = glass("run -p Once -n 2 -ctk q8_0");
  EXPECT_NE(q8.status, 0);
  EXPECT_NE(q8.err.find("--cache-type-k q8_0: glass's KV cache holds f32 or f16"), std::string::npos)
      << q8.err;
  const Ran mixed = glass("run -p Once -n 2 -ctk f16 -ctv f32");
  EXPECT_NE(mixed.status, 0);
  EXPECT_NE(mixed.err.find("differ"), std::string::npos) << mixed.err;
}

// A context past the model's training context is a warning (stories260K: 128), not a silent choice.
TEST_F(Cli, ContextPastTheTrainingContextWarns) {
  const Ran c = glass("run -n 2 -t 1 -c 512");
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.err.find("warning: context 512 is larger than the model's training context 128"),
            std::string::npos)
      << c.err;
  const Ran n = glass("run -n 300 -t 1 --temp 0 --ignore-eos --log-disable");
  ASSERT_EQ(n.status, 0) << n.err;
  EXPECT_NE(n.err.find("training context 128"), std::string::npos) << n.err;
  const Ran fits = glass("run -n 8 -t 1");
  EXPECT_EQ(fits.err.find("warning"), std::string::npos) << fits.err;
}

// A prompt longer than the default context is refused at once, naming -c: the default context is not
// sized by the prompt's characters past max(training context, 4096).
TEST_F(Cli, PromptLongerThanTheDefaultContextIsRefused) {
  std::string words;
  for (int i = 0; i < 3000; ++i) words += "Once upon a time ";
  std::ofstream(path("long.txt")) << words;
  const Ran r = glass("run -t 1 -n 4 -f long.txt");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("but the context is 4096 (-c)"), std::string::npos) << r.err;
  // A prompt that fits runs.
  const Ran shorter = glass("run -t 1 -n 2 -p 'Once upon a time there was'");
  EXPECT_EQ(shorter.status, 0) << shorter.err;
}

// A generation that ends before -n for want of cache or context says which.
TEST_F(Cli, GenerationCutShortSaysWhy) {
  const Ran kv = glass("run -t 1 -n 64 --temp 0 --ignore-eos --kv-size 32");
  ASSERT_EQ(kv.status, 0) << kv.err;
  EXPECT_NE(kv.err.find("the KV cache of 32 rows is full (--kv-size raises it)"), std::string::npos)
      << kv.err;
  const Ran ctx = glass("run -t 1 -n 64 --temp 0 --ignore-eos -c 24");
  ASSERT_EQ(ctx.status, 0) << ctx.err;
  EXPECT_NE(ctx.err.find("the context of 24 positions is full (-c raises it)"), std::string::npos) << ctx.err;
  const Ran whole = glass("run -t 1 -n 8 --temp 0 --ignore-eos");
  ASSERT_EQ(whole.status, 0) << whole.err;
  EXPECT_EQ(whole.err.find("stopped after"), std::string::npos) << whole.err;
}

TEST_F(Cli, ThreadCountsAreBoundedWhereParsed) {
  const Ran q = glass("quantize in.gguf out.gguf q8_0 -t 100000");
  EXPECT_GT(q.status, 0) << q.err;
  EXPECT_LT(q.status, 128) << "killed by a signal: " << q.err;
  EXPECT_NE(q.err.find("100000"), std::string::npos) << q.err;
  const Ran r = glass("run -n 1 -t 100000");
  EXPECT_GT(r.status, 0) << r.err;
  EXPECT_LT(r.status, 128) << r.err;
  const Ran s = glass("serve --threads-http 100000");
  EXPECT_GT(s.status, 0) << s.err;
  EXPECT_LT(s.status, 128) << s.err;
}

TEST_F(Cli, SeedIsRandomByDefaultAndReported) {
  const Ran a = glass("run -n 8 -t 1 --temp 1 --json"), b = glass("run -n 8 -t 1 --temp 1 --json");
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_NE(ja["seed"], jb["seed"]);
  // The reported seed replays the run.
  const Ran replay = glass("run -n 8 -t 1 --temp 1 --json --seed " + ja["seed"].dump());
  ASSERT_EQ(replay.status, 0) << replay.err;
  EXPECT_EQ(nlohmann::json::parse(replay.out)["tokens"], ja["tokens"]);
  // -v prints it (and the chain) on stderr.
  const Ran v = glass("run -n 2 -t 1 -v --seed 77");
  ASSERT_EQ(v.status, 0) << v.err;
  EXPECT_NE(v.err.find("glass: seed 77"), std::string::npos) << v.err;
  EXPECT_NE(v.err.find("sampler chain: top_k -> top_p -> min_p -> temperature -> dist"), std::string::npos)
      << v.err;
}

TEST_F(Cli, SamplerFlagsBuildLlamaCppsChain) {
  const std::pair<const char*, const char*> cases[] = {
      {"--dry-multiplier 0.8 --xtc-probability 0.5 --top-nsigma 1.5 --dynatemp-range 0.5 --repeat-penalty "
       "1.1",
       "penalties -> dry -> top_n_sigma -> top_k -> top_p -> min_p -> xtc -> dynatemp -> dist"},
      {"--mirostat 2 --mirostat-lr 0.2 --mirostat-ent 4", "temperature -> mirostat_v2"},
      {"--mirostat 1", "temperature -> mirostat"},
      {"--samplers 'min_p;top-k;temp'", "min_p -> top_k -> temperature -> dist"},
      {"--sampling-seq mkt", "min_p -> top_k -> temperature -> dist"},
      {"--logit-bias 5-1 --top-k 0", "logit_bias -> top_p -> min_p -> temperature -> dist"},
  };
  for (const auto& [args, chain] : cases) {
    const Ran r = glass(std::string("run -n 6 -t 1 -v --json ") + args);
    ASSERT_EQ(r.status, 0) << args << ": " << r.err;
    EXPECT_NE(r.err.find(std::string("sampler chain: ") + chain), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"].size(), 6u) << args;
  }
}

// --logit-bias, --ignore-eos, -r, -f, -e with llama.cpp's meanings, seen in greedy output.
TEST_F(Cli, GenerationFlagsHaveLlamaCppsMeanings) {
  const auto tokens = [&](const std::string& args) {
    const Ran r = glass("run -t 1 --temp 0 --json " + args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  };
  const auto plain = tokens("-n 6");
  const int first = plain["tokens"][0];
  // Banning the greedy first token changes it; a large boost makes a token win every step.
  const auto banned = tokens("-n 6 --logit-bias " + std::to_string(first) + "-inf");
  EXPECT_NE(banned["tokens"][0], first);
  const auto boosted = tokens("-n 4 -l 300+100");
  EXPECT_EQ(boosted["tokens"], nlohmann::json({300, 300, 300, 300}));
  // --ignore-eos: the whole -n, no end-of-generation token (stories260K's EOS is 2).
  const auto eos = tokens("-n 100 --ignore-eos");
  EXPECT_EQ(eos["tokens"].size(), 100u);
  EXPECT_EQ(eos["finish_reason"], "length");
  for (const auto& t : eos["tokens"]) EXPECT_NE(t, 2);
  // -r: a reverse prompt stops generation before it (as --stop).
  const auto r = tokens("-n 30 -r ' little'");
  EXPECT_EQ(r["finish_reason"], "stop");
  EXPECT_EQ(r["text"], ", there was a");
  // -f reads the prompt from a file: the same as -p.
  std::ofstream(path("prompt.txt")) << "Once upon a time";
  EXPECT_EQ(tokens("-n 6 -f prompt.txt")["tokens"], plain["tokens"]);
  // Escapes are processed by default (\n is one byte); --no-escape keeps the backslash.
  const auto esc = tokens("-n 1 -p 'a\\nb'"), raw = tokens("-n 1 -p 'a\\nb' --no-escape");
  EXPECT_LT(esc["usage"]["prompt_tokens"].get<int>(), raw["usage"]["prompt_tokens"].get<int>());
}

TEST_F(Cli, LogDisableLeavesOnlyTheOutput) {
  const Ran r = glass("run -n 4 -t 1 --temp 0 --log-disable");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_FALSE(r.out.empty());
  const Ran loud = glass("run -n 4 -t 1 --temp 0");
  EXPECT_NE(loud.err.find("glass: loaded"), std::string::npos);
}

}  // namespace
}  // namespace glass

namespace glass {
namespace {

// quantize: the fallbacks as one line per kind (a real model has hundreds); every tensor with -v.
TEST_F(Cli, QuantizeSummarizesFallbacksAndListsThemWithVerbose) {
  ASSERT_EQ(glass("synth --shape tiny --type f16 -o tiny.gguf").status, 0);
  const Ran q = glass("quantize tiny.gguf q.gguf q4_k_m");
  ASSERT_EQ(q.status, 0) << q.err;
  // The tiny model's rows of 64 fit no K-quant block of 256.
  size_t lines = 0;
  std::istringstream err(q.err);
  for (std::string line; std::getline(err, line);) {
    EXPECT_NE(line.find("(-v lists them)"), std::string::npos) << line;
    EXPECT_NE(line.find(" tensor"), std::string::npos) << line;
    ++lines;
  }
  EXPECT_GE(lines, 1u);
  EXPECT_LE(lines, 6u) << q.err;  // one per kind of fallback, not one per tensor (14 matrices)
  const Ran v = glass("quantize -v tiny.gguf v.gguf q4_k_m");
  ASSERT_EQ(v.status, 0) << v.err;
  EXPECT_NE(v.err.find("glass: quantize: blk.0.attn_q.weight: rows of 64 not divisible by 256"),
            std::string::npos)
      << v.err;
  EXPECT_EQ(read_all(path("q.gguf")), read_all(path("v.gguf")));
}

}  // namespace
}  // namespace glass

namespace glass {
namespace {

// llama.cpp's weights-only GGUFs (tokenizer.ggml.model = "no_vocab") run everything that takes
// token ids; what needs text says the file has no vocabulary.
TEST_F(Cli, VocabLessGgufRunsWhatTakesTokenIds) {
  ASSERT_EQ(glass("synth --shape tiny --no-vocab -o nv.gguf").status, 0);
  const Ran bench = glass("bench -m nv.gguf -p 8 -n 2 -r 1 -t 1 -o json");
  ASSERT_EQ(bench.status, 0) << bench.err;
  EXPECT_EQ(nlohmann::json::parse(bench.out).size(), 2u);
  const Ran logits = glass("logits -m nv.gguf --tokens 1,2,3 -o l.npy -t 1");
  ASSERT_EQ(logits.status, 0) << logits.err;
  EXPECT_TRUE(fs::exists(path("l.npy")));
  EXPECT_EQ(glass("graph -m nv.gguf").status, 0);
  const Ran verify = glass("verify -m nv.gguf --self -n 16 -t 1");
  EXPECT_EQ(verify.status, 0) << verify.err;
  for (const char* text : {"run -m nv.gguf -n 2 -t 1", "tokenize -m nv.gguf hello"}) {
    const Ran r = glass(text);
    EXPECT_NE(r.status, 0) << text;
    EXPECT_NE(r.err.find("has no vocabulary (tokenizer.ggml.model = \"no_vocab\")"), std::string::npos)
        << text << ": " << r.err;
  }
}

}  // namespace
}  // namespace glass

namespace glass {
namespace {

// --grammar / --grammar-file / -j / -jf constrain run's output; what cannot be compiled is an error
// naming the flag before the model loads.
TEST_F(Cli, GrammarAndJsonSchemaFlagsConstrainTheOutput) {
  const Ran g =
      glass(R"(run -p "Once upon a time" -n 20 --temp 1 -s 3 --grammar 'root ::= ("yes" | "no") "."')");
  ASSERT_EQ(g.status, 0) << g.err;
  EXPECT_TRUE(g.out.find("yes.") != std::string::npos || g.out.find("no.") != std::string::npos) << g.out;
  std::ofstream(path("yn.gbnf")) << "root ::= [0-9] [0-9] \"!\"\n";
  const Ran f = glass(R"(run -p "Once upon a time" -n 20 --temp 1 -s 4 --grammar-file yn.gbnf --json)");
  ASSERT_EQ(f.status, 0) << f.err;
  const auto text_at = f.out.find("\"text\":\"");
  ASSERT_NE(text_at, std::string::npos) << f.out;
  const std::string text = f.out.substr(text_at + 8, 3);
  EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(text[0])) &&
              std::isdigit(static_cast<unsigned char>(text[1])) && text[2] == '!')
      << f.out;
  std::ofstream(path("s.json")) << R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1,
      "maximum": 9}}, "required": ["n"], "additionalProperties": false})";
  for (const std::string& flags : {std::string("-jf s.json"), std::string("--json-schema-file s.json")}) {
    const Ran j = glass("run -p 'Once upon a time' -n 40 --temp 0.8 -s 5 " + flags);
    ASSERT_EQ(j.status, 0) << flags << ": " << j.err;
    EXPECT_NE(j.out.find("\"n\""), std::string::npos) << j.out;
  }
  const Ran bad = glass(R"X(run -p x -n 4 -j '{"type": "string", "pattern": "(?=a)"}')X");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("--json-schema"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("pattern"), std::string::npos) << bad.err;
  const Ran undefined = glass("run -p x -n 4 --grammar 'root ::= nothing'");
  EXPECT_NE(undefined.status, 0);
  EXPECT_NE(undefined.err.find("--grammar"), std::string::npos) << undefined.err;
  const Ran both = glass(R"X(run -p x -n 4 --grammar 'root ::= "a"' -j '{}')X");
  EXPECT_NE(both.status, 0);
  EXPECT_NE(both.err.find("excludes"), std::string::npos) << both.err;
}

}  // namespace
}  // namespace glass
