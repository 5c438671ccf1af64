#pragma once
// tokenizer.json read in one pass (nlohmann's SAX interface), without a DOM of its big parts: the
// model's vocabulary and merges and the added tokens are collected into flat lists as they are read,
// everything else the loader reads (the model's scalar fields, normalizer, pre_tokenizer, decoder,
// post_processor) is kept as a DOM, and the members nothing reads are dropped while parsing. A DOM of
// a 150k-token vocabulary costs ~10 times its text; the lists cost about what the tokenizer built
// from them costs anyway. The loader (hf_tokenizer.cpp) checks the lists in the order, and with the
// messages, it checked the DOM's members in.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "glass/result.h"
#include "tokenizer/hf_json.h"
#include "tokenizer/merge_list.h"

namespace glass::tokenizer::hf {

struct TokenizerJson {
  // The top-level value with only what the loader reads: "model" (its members other than vocab and
  // merges), "normalizer", "pre_tokenizer", "decoder", "post_processor". A member read as a scalar
  // that holds an array or object holds an empty one (the readers check its type, nothing more).
  Json rest;

  // model.vocab when it is an object: its members in file order (a repeated key is listed each time;
  // the last one counts, as in a DOM). `integer`: the value is a JSON integer (then `id` holds it, an
  // unsigned one cast as Json::get<int64_t> casts).
  struct VocabEntry {
    std::string text;
    int64_t id = 0;
    uint32_t order = 0;  // position in the file, to sort repeated keys stably
    bool integer = false;
  };
  bool vocab_is_object = false;
  std::vector<VocabEntry> vocab;

  // model.merges: present (and not null), an array, and its pairs up to the first entry that is
  // neither "a b" nor ["a", "b"], which is `merges_error` ("tokenizer.json: model.merges[i]: ...").
  bool merges_present = false;
  bool merges_is_array = false;
  MergeList merges;
  std::optional<Error> merges_error;

  // added_tokens: present (and not null), an array, and its entries with only the members the loader
  // reads (content, special, lstrip, rstrip, single_word, normalized).
  bool added_present = false;
  bool added_is_array = false;
  std::vector<Json> added;
};

// Errors as Json::parse's were: InvalidFile "<name>: JSON nested more than 128 deep at byte N"
// (core/json_depth.h, checked first) and "<name>: not valid JSON: <parser message>";
// CapacityExceeded when the kept DOM would take more than 16 MiB + the text's size.
Result<TokenizerJson> read_tokenizer_json(std::string_view text, std::string_view name);

}  // namespace glass::tokenizer::hf
