#include "cli/args.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <string_view>

namespace glass::cli {
namespace {

struct Spelling {
  std::string_view llama;  // as llama.cpp's tools spell it
  std::string_view glass;  // glass's long name
};

// One-dash multi-letter options of llama.cpp's tools that glass has under a long name.
constexpr std::array kSpellings{
    Spelling{"-npp", "--npp"},
    Spelling{"-ntg", "--ntg"},
    Spelling{"-npl", "--npl"},
    Spelling{"-pps", "--pps"},
    Spelling{"-np", "--parallel"},     // glass serve, as llama-server's
    Spelling{"-ub", "--ubatch-size"},  // glass serve: tokens per engine step
    Spelling{"-sys", "--system-prompt"},
    Spelling{"-cnv", "--conversation"},
    Spelling{"-if", "--interactive-first"},
    Spelling{"-st", "--single-turn"},
    Spelling{"-co", "--color"},
    Spelling{"-jf", "--json-schema-file"},
    Spelling{"-ctk", "--cache-type-k"},
    Spelling{"-ctv", "--cache-type-v"},
    Spelling{"-mli", "--multiline-input"},
};

// GPU options: accepted (scripts written for llama.cpp keep working) and dropped with one note.
struct GpuOption {
  std::string_view names[3];
  enum Value { None, Required, Optional } value;
};
constexpr std::array kGpuOptions{
    GpuOption{{"-ngl", "--gpu-layers", "--n-gpu-layers"}, GpuOption::Required},
    GpuOption{{"-fa", "--flash-attn", ""}, GpuOption::Optional},  // [on|off|auto], or a bare flag (older)
    GpuOption{{"-sm", "--split-mode", ""}, GpuOption::Required},
    GpuOption{{"-mg", "--main-gpu", ""}, GpuOption::Required},
    GpuOption{{"-ts", "--tensor-split", ""}, GpuOption::Required},
    GpuOption{{"-dev", "--device", ""}, GpuOption::Required},
    GpuOption{{"-nkvo", "--no-kv-offload", ""}, GpuOption::None},
};

const GpuOption* gpu_option(std::string_view a) {
  for (const GpuOption& g : kGpuOptions)
    for (std::string_view n : g.names)
      if (!n.empty() && a == n) return &g;
  return nullptr;
}

bool is_fa_value(std::string_view v) {
  return v == "on" || v == "off" || v == "auto" || v == "1" || v == "0" || v == "true" || v == "false";
}

// "-5", "-0.5", "-.5", "-inf": a negative value, never an option.
bool is_negative_number(std::string_view a) {
  return a.size() >= 2 && a[0] == '-' &&
         (std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.' || a.substr(1) == "inf");
}

// Whether `name` (an option of `sub` as spelled on the command line) takes a value from the next
// argument.
bool takes_value(const CLI::App* sub, const std::string& name) {
  if (sub == nullptr || name.find('=') != std::string::npos) return false;
  const CLI::Option* opt = sub->get_option_no_throw(name);
  return opt != nullptr && opt->get_type_size_max() > 0 && opt->get_expected_min() > 0;
}

}  // namespace

Result<std::vector<std::string>> normalize_args(CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> out;
  if (argc > 0) out.emplace_back(argv[0]);
  const CLI::App* sub = nullptr;
  bool value_next = false;  // the previous argument was an option that takes a value
  bool noted = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (value_next) {  // an option's value, whatever it looks like (-p "-x", --seed -1)
      out.push_back(std::move(a));
      value_next = false;
      continue;
    }
    if (sub == nullptr && !a.empty() && a[0] != '-') {
      for (CLI::App* s : app.get_subcommands([&a](CLI::App* c) { return c->get_name() == a; })) sub = s;
      out.push_back(std::move(a));
      continue;
    }
    if (a == "--") {  // everything after is positional
      for (; i < argc; ++i) out.emplace_back(argv[i]);
      break;
    }
    if (const GpuOption* g = gpu_option(a)) {
      std::string shown = a;
      if (g->value == GpuOption::Required && i + 1 < argc) shown += std::string(" ") + argv[++i];
      if (g->value == GpuOption::Optional && i + 1 < argc && is_fa_value(argv[i + 1]))
        shown += std::string(" ") + argv[++i];
      if (!noted)
        fmt::print(stderr, "glass: note: {}: this build has no GPU backend; everything runs on the CPU\n",
                   shown);
      noted = true;
      continue;
    }
    for (const Spelling& s : kSpellings)
      if (a == s.llama) a = std::string(s.glass);
    const bool one_dash_word = a.size() > 2 && a[0] == '-' && a[1] != '-' && !is_negative_number(a);
    if (one_dash_word) {
      // CLI11 reads "-abc" as -a with the value "bc" (or flags -a -b -c): never what was meant.
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("unknown option '{}'{} (glass's options are one letter after '-', or a name "
                      "after '--'; see --help)",
                      a, sub ? fmt::format(" for 'glass {}'", sub->get_name()) : ""));
    }
    if (a.size() > 1 && a[0] == '-' && !is_negative_number(a)) value_next = takes_value(sub, a);
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace glass::cli
