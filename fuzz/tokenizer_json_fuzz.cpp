// HF tokenizer.json + tokenizer_config.json (separated as fuzz_input.h says): the tokenizer module's
// loader, then the formats module's HF -> GGUF vocabulary conversion of the same files; a tokenizer
// that loads then encodes and decodes a fixed text, so every component it names runs once.
#include <cstddef>
#include <cstdint>
#include <string>

#include "formats/gguf_vocab.h"
#include "formats/hf_gguf_vocab.h"
#include "fuzz_input.h"
#include "tokenizer/hf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [tokenizer_json, config_json] = glass::fuzz::split2(data, size);
  auto tok = glass::tokenizer::hf_tokenizer_from_json(tokenizer_json, config_json);
  if (tok.ok()) {
    auto ids =
        tok->encode("Hello world! <s> 123 \xc3\xa9t\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd  \n\t x", true, true);
    if (ids.ok()) (void)tok->decode(*ids, true);
  }
  glass::formats::HfTokenizerFiles files;
  files.where = "tokenizer.json";
  files.tokenizer_json = std::string(tokenizer_json);
  files.config_json = std::string(config_json);
  // The GGUF keys written from it must read back as a vocabulary (what hf_to_gguf's output holds).
  glass::formats::GgufMetadataBuilder m;
  if (!glass::formats::hf_tokenizer_to_gguf(files, 0, m).ok()) return 0;
  auto gguf = m.build("fuzz.gguf");
  if (!gguf.ok()) return 0;
  auto vocab = glass::formats::vocab_from_gguf(*gguf);
  if (vocab.ok()) (void)glass::tokenizer::Tokenizer::create(std::move(*vocab));
  return 0;
}
