#pragma once
// Reading HF tokenizer.json sections into glass's pipeline parts: normalizer, pre_tokenizer, decoder
// and post_processor (tokenizers/src/*/mod.rs serialization, tokenizers 0.23). Errors are
// InvalidFile naming the JSON path ("tokenizer.json: pre_tokenizer.pretokenizers[0].pattern: ...");
// a component glass does not implement is Unsupported, naming its type.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "glass/result.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"

namespace glass::tokenizer::hf {

using Json = nlohmann::json;

Error bad(std::string_view where, std::string_view what);
Result<bool> get_bool(const Json& obj, std::string_view key, bool fallback, std::string_view where);
Result<std::string> get_string(const Json& obj, std::string_view key, std::optional<std::string> fallback,
                               std::string_view where);
Result<int64_t> get_int(const Json& obj, std::string_view key, std::optional<int64_t> fallback,
                        std::string_view where);
// obj[key] when it is present and not null, else nullptr.
const Json* find(const Json& obj, std::string_view key);

// A null section yields an empty normalizer / pre-tokenizer.
Result<Normalizer> parse_normalizer(const Json& j, std::string_view where = "normalizer");
Result<PreTokenizer> parse_pre_tokenizer(const Json& j, std::string_view where = "pre_tokenizer");
// A null decoder is std::nullopt (HF joins the tokens with spaces).
Result<std::optional<Decoder>> parse_decoder(const Json& j, std::string_view where = "decoder");

// The ids the post-processor puts around a single sequence when add_special_tokens is on.
struct Template {
  std::vector<int32_t> prefix, suffix;
};
// TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel (no ids) and Sequence; null: none.
Result<Template> parse_post_processor(const Json& j, std::string_view where = "post_processor");

}  // namespace glass::tokenizer::hf
