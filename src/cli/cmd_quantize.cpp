// glass quantize: an F32/F16/BF16 GGUF, or a Hugging Face model directory, to one of llama.cpp's
// file types (q4_k_m, q8_0, ...) with llama-quantize's per-tensor choices and bytes, so quantized
// models need no llama.cpp build (HF directories: converted as convert_hf_to_gguf.py does first,
// glass::quantize_model, glass/tools.h).
// Prints each tensor and its fallback (-v; otherwise a count per kind of fallback: a large model has
// hundreds), a per-type summary, the sizes and the time.
#include <fmt/format.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cli/common.h"
#include "cli/progress.h"
#include "glass/tools.h"

namespace glass::cli {
namespace {

struct QuantizeArgs {
  std::string in, out, type;
  bool pure = false;
  bool allow_requantize = false;
  bool verbose = false;
  int threads = 0;
  std::string split_max_size;  // "2G", "500M", "4096K", bytes
  int64_t split_max_tensors = 0;
};

// llama-gguf-split's --split-max-size: a number with an optional K, M or G (powers of 1024).
std::optional<uint64_t> size_value(const std::string& text) {
  if (text.empty()) return std::nullopt;
  uint64_t unit = 1;
  std::string digits = text;
  switch (text.back()) {
    case 'K':
    case 'k':
      unit = uint64_t{1} << 10;
      break;
    case 'M':
    case 'm':
      unit = uint64_t{1} << 20;
      break;
    case 'G':
    case 'g':
      unit = uint64_t{1} << 30;
      break;
    default:
      break;
  }
  if (unit != 1) digits.pop_back();
  if (digits.empty() || digits.size() > 12 || digits.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const uint64_t v = std::stoull(digits) * unit;
  return v > 0 ? std::optional<uint64_t>(v) : std::nullopt;
}

double mib(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

std::string type_names() {
  std::string s;
  for (const auto& t : quantize_type_names()) s += (s.empty() ? "" : ", ") + t;
  return s + " (q3_k, q4_k, q5_k: the _m mixes)";
}

int quantize(const QuantizeArgs& a) {
  QuantizeOptions o;
  o.type = a.type;
  o.pure = a.pure;
  o.allow_requantize = a.allow_requantize;
  o.n_threads = a.threads;
  if (!a.split_max_size.empty()) {
    const auto bytes = size_value(a.split_max_size);
    if (!bytes)
      return report(
          make_error(ErrorCode::InvalidArgument,
                     fmt::format("quantize: --split-max-size '{}': expected a positive size such as "
                                 "2G, 500M or 4096K",
                                 a.split_max_size)));
    o.split_max_bytes = *bytes;
  }
  if (a.split_max_tensors < 0)
    return report(make_error(ErrorCode::InvalidArgument, "quantize: --split-max-tensors must be positive"));
  o.split_max_tensors = a.split_max_tensors;
  size_t index = 0;
  Progress progress("quantize", Progress::Unit::Bytes);
  std::map<std::string, std::pair<int, std::string>> fallbacks;  // note -> (count, first tensor)
  o.on_tensor = [&](const QuantizedTensorInfo& t) {
    ++index;
    if (!a.verbose) progress.update(t.input_done, t.input_total);
    if (!t.fallback.empty()) {
      auto& [count, first] = fallbacks[t.fallback];
      if (count++ == 0) first = t.name;
      if (a.verbose) fmt::print(stderr, "glass: quantize: {}: {}\n", t.name, t.fallback);
    }
    if (a.verbose)
      fmt::print(stderr, "[{:4}] {:<36} {:<16} {:>5} -> {:<5} {:9.3f} MiB -> {:9.3f} MiB\n", index, t.name,
                 shape_text(t.shape), t.from, t.to, mib(t.bytes_in), mib(t.bytes_out));
  };
  const auto start = std::chrono::steady_clock::now();
  auto r = quantize_model(a.in, a.out, o);
  if (r.ok() && !a.verbose) progress.finish();
  if (!r.ok()) return report(r.error());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!a.verbose)
    for (const auto& [note, seen] : fallbacks)
      fmt::print(stderr, "glass: quantize: {} tensor{} ({}{}): {} (-v lists them)\n", seen.first,
                 seen.first == 1 ? "" : "s", seen.second, seen.first > 1 ? ", ..." : "", note);

  struct Group {
    int count = 0;
    uint64_t bytes = 0;
    std::string examples;
  };
  std::map<std::string, Group> groups;
  for (const auto& t : r->tensors) {
    Group& g = groups[fmt::format("{}{}", t.to, t.quantizable ? "" : " (kept)")];
    if (++g.count <= 3) g.examples += (g.examples.empty() ? "" : ", ") + t.name;
    if (g.count == 4) g.examples += ", ...";
    g.bytes += t.bytes_out;
  }
  fmt::print("{} -> {} ({}{})\n", a.in,
             r->files.size() > 1
                 ? fmt::format("{} shards: {} ... {}", r->files.size(), r->files.front(), r->files.back())
                 : a.out,
             r->type, a.pure ? ", pure" : "");
  for (const auto& [type, g] : groups)
    fmt::print("  {:<10} {:5} tensors {:10.2f} MiB  {}\n", type, g.count, mib(g.bytes), g.examples);
  const double n = static_cast<double>(r->n_elements);
  fmt::print(
      "size: {:.2f} MiB ({:.2f} bits/weight) -> {:.2f} MiB ({:.2f} bits/weight), {} tensors, {:.2f} s on {} "
      "threads\n",
      mib(r->bytes_in), 8.0 * static_cast<double>(r->bytes_in) / n, mib(r->bytes_out),
      8.0 * static_cast<double>(r->bytes_out) / n, r->tensors.size(), seconds, r->n_threads);
  return 0;
}

}  // namespace

void add_quantize_command(CLI::App& app, int& exit_code) {
  auto* cmd =
      app.add_subcommand("quantize",
                         "write a quantized copy of an F32/F16/BF16 GGUF or a Hugging Face model directory "
                         "(llama-quantize's types)");
  auto a = std::make_shared<QuantizeArgs>();
  cmd->add_option("input", a->in,
                  "F32, F16 or BF16 GGUF file (a quantized one with --allow-requantize), or a Hugging "
                  "Face model directory (config.json, *.safetensors, tokenizer.json)")
      ->required();
  cmd->add_option("output", a->out, "GGUF file to write")->required();
  cmd->add_option("type", a->type, type_names())->required();
  cmd->add_flag("--pure", a->pure, "every quantizable tensor gets the base type (no mix rules)");
  cmd->add_flag("--allow-requantize", a->allow_requantize,
                "quantize again tensors stored quantized (a quantized GGUF, an MLX snapshot): they carry "
                "both rounding errors");
  cmd->add_flag("-v,--verbose", a->verbose, "print every tensor's choice");
  cmd->add_option("-t,--threads", a->threads, "threads (default: one per hardware thread)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option(
      "--split-max-size", a->split_max_size,
      "write a split model (llama-gguf-split's shards: OUTPUT-00001-of-0000N.gguf) of at most this "
      "much tensor data a shard: 2G, 500M, 4096K");
  cmd->add_option("--split-max-tensors", a->split_max_tensors,
                  "write a split model of at most N tensors a shard");
  cmd->callback([&exit_code, a] { exit_code = quantize(*a); });
}

}  // namespace glass::cli
