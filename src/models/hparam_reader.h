#pragma once
// Reading an architecture's hyper-parameters from GGUF metadata ("{arch}.<suffix>" keys): the one
// reader every family uses (HF checkpoints too: their adapters write these keys). Like the graph
// builder, it keeps the first error (naming the key and what was wrong) and hands back fallbacks
// meanwhile, so a config reads as one line per field and is checked once at the end.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf.h"
#include "glass/result.h"
#include "models/weights.h"

namespace glass::models {

class HparamReader {
 public:
  HparamReader(const formats::GgufFile& f, std::string_view arch) : f_(f), arch_(arch) {}

  const std::string& arch() const { return arch_; }
  const formats::GgufFile& file() const { return f_; }
  std::string key(std::string_view suffix) const;
  bool has(std::string_view suffix) const;

  int64_t required_int(std::string_view suffix);
  int64_t optional_int(std::string_view suffix, int64_t fallback);
  float required_float(std::string_view suffix);
  float optional_float(std::string_view suffix, float fallback);
  std::optional<float> maybe_float(std::string_view suffix);
  bool optional_bool(std::string_view suffix, bool fallback);
  std::string optional_string(std::string_view suffix, const std::string& fallback);
  // A value per layer: the key holds either one integer for every layer or an array of n_layers.
  std::vector<int64_t> per_layer_int(std::string_view suffix, int64_t n_layers);
  // Which layers are local (sliding window), from "attention.sliding_window_pattern": either a
  // period n (layer i is local iff i % n < n - 1, llama.cpp's rule; n = 0 or 1: all global) or an
  // array of n_layers bools (true = local). Without the key: the period `default_period`.
  std::vector<bool> sliding_layers(int64_t n_layers, int64_t default_period);

  // Rows of a 2-D tensor (e.g. the vocabulary size from token_embd.weight); records an error if the
  // tensor is missing or not 2-D.
  int64_t tensor_rows(const WeightIndex& w, const std::string& name);

  // Records an error about the file (the first one wins).
  void fail(const std::string& what);
  Status status() const;

 private:
  template <class T, class Get>
  T optional_value(std::string_view suffix, T fallback, Get get);

  const formats::GgufFile& f_;
  std::string arch_;
  std::optional<Error> error_;
};

}  // namespace glass::models
