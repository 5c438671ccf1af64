#pragma once
// Tokenizer's shared state (private to the tokenizer module): built once by Tokenizer::create.
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/algorithm.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/token_index.h"
#include "tokenizer/tokenizer.h"

namespace glass::tokenizer {

struct Tokenizer::Impl {
  Vocab vocab;
  TokenIndex index;
  Pipeline pipeline;
  std::unique_ptr<Algorithm> algorithm;  // refers to vocab and index
  std::vector<int32_t> eog_sorted;

  // llama.cpp flavour.
  std::vector<int32_t> special_order;  // split_special_tokens candidates

  // HF flavour.
  AddedTokenMatcher added_raw;                         // added tokens with normalized = false
  AddedTokenMatcher added_normalized;                  // the others, in their normalized form
  std::unordered_map<int32_t, std::string> hf_string;  // decode strings that differ from tokens[id]
  std::vector<bool> hf_skip;                           // dropped by decode unless special
  int32_t stream_context = -1;  // an ordinary token that stands before a continuation stream

  std::string_view decode_string(int32_t id) const {
    const auto it = hf_string.find(id);
    return it == hf_string.end() ? vocab.tokens[static_cast<size_t>(id)] : std::string_view(it->second);
  }
};

}  // namespace glass::tokenizer
