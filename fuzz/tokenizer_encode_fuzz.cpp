// Tokenizer encode / decode on arbitrary bytes, over fixed tokenizers of every flavour loaded once
// from the shared fixtures: SentencePiece, byte-level BPE and WordPiece GGUF vocabularies, HF
// tokenizer.json files (byte-fallback BPE and byte-level BPE with a split regex). The first byte
// picks the tokenizer and the flags; the rest is the text, and also read as token ids for decode and
// the streaming decoder (out-of-range and special ids included).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "formats/gguf_vocab.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer.h"

using namespace glass;

namespace {

std::vector<tokenizer::Tokenizer> load_all() {
  const std::string fx = GLASS_FIXTURES_DIR;
  std::vector<tokenizer::Tokenizer> out;
  for (const char* name :
       {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-bert-bge.gguf"}) {
    auto file = formats::GgufFile::open(fx + "/tokenizers/gguf/" + name);
    if (!file.ok()) continue;
    auto vocab = formats::vocab_from_gguf(*file);
    if (!vocab.ok()) continue;
    if (auto tok = tokenizer::Tokenizer::create(std::move(*vocab)); tok.ok()) out.push_back(std::move(*tok));
  }
  for (const char* dir : {"/models/stories260K-hf", "/tokenizers/hf/qwen2_5"})
    if (auto tok = tokenizer::load_hf_tokenizer(fx + dir); tok.ok()) out.push_back(std::move(*tok));
  if (out.empty()) {
    std::fprintf(stderr, "tokenizer_encode: no fixture tokenizer under %s\n", fx.c_str());
    std::abort();
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<tokenizer::Tokenizer> tokenizers = load_all();
  if (size == 0) return 0;
  const tokenizer::Tokenizer& tok = tokenizers[data[0] % tokenizers.size()];
  const bool add_special = (data[0] & 0x40) != 0, parse_special = (data[0] & 0x80) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (auto ids = tok.encode(text, add_special, parse_special); ids.ok()) {
    for (int32_t id : *ids)
      if (id < 0 || id >= tok.vocab_size()) __builtin_trap();  // encode must return vocabulary ids
    (void)tok.decode(*ids, parse_special);
  }
  std::vector<int32_t> ids(text.size() / 4);
  if (!ids.empty()) std::memcpy(ids.data(), text.data(), ids.size() * 4);
  // Mostly in-range ids (the ones that reach the decoder chain), some raw.
  for (int32_t& id : ids)
    if ((id & 1) == 0)
      id = static_cast<int32_t>(static_cast<uint32_t>(id) % static_cast<uint32_t>(tok.vocab_size()));
  (void)tok.decode(ids, add_special);
  tokenizer::StreamingDecoder stream(tok, tokenizer::StreamOptions{parse_special, add_special});
  for (int32_t id : ids) (void)stream.push(id);
  (void)stream.flush();
  for (int32_t id : ids) (void)tok.token_to_piece(id, parse_special);
  return 0;
}
