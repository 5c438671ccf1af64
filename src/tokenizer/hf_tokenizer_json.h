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
#include "tokenizer/token_texts.h"

namespace glass::tokenizer::hf {

struct TokenizerJson {
  // The top-level value with only what the loader reads: "model" (its members other than vocab and
  // merges), "normalizer", "pre_tokenizer", "decoder", "post_processor". A member read as a scalar
  // that holds an array or object holds an empty one (the readers check its type, nothing more).
  Json rest;

  // model.vocab when it is an object: its members in file order (a repeated key is listed each time;
  // the last one counts, as in a DOM), the keys packed in one buffer and an id each. A string and an
  // id per entry cost ~56 bytes of headers: a hostile file of 3M short keys took 170 MB that way.
  struct VocabKeys {
    // What an entry's value was when it was not an id in [0, INT32_MAX): a value that is not a JSON
    // integer, or an integer out of that range (its value, in decimal, is in `out_of_range`).
    static constexpr int32_t kNotAnInteger = -1;
    static constexpr int32_t kOutOfRange = -2;

    TokenTexts texts;
    std::vector<int32_t> ids;
    std::vector<std::pair<uint32_t, std::string>> out_of_range;  // (entry, value), by entry

    size_t size() const { return ids.size(); }
    // The value entry i held, for an entry whose id is kOutOfRange.
    std::string out_of_range_value(uint32_t i) const;
    // An entry whose value is an id, kNotAnInteger, or kOutOfRange with the integer as written.
    // False (nothing added) past TokenTexts::kMaxBytes of keys.
    bool add(std::string_view key, int32_t id, std::string out_of_range_value = {});
    // Room for the keys `text_bytes` of JSON typically hold, so that a large vocabulary is not
    // copied and faulted in again each time its buffers double (a 100 MB tokenizer.json's load: ~0.45 s
    // of ~1.6). Untouched room costs address space, not memory.
    void reserve_for(size_t text_bytes);
    void clear() {  // a move-assignment from an empty value would keep the keys' buffer
      [[maybe_unused]] VocabKeys gone = std::move(*this);
      *this = VocabKeys();
    }
  };
  bool vocab_is_object = false;
  VocabKeys vocab;
  std::optional<Error> vocab_error;  // the keys past TokenTexts::kMaxBytes

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
