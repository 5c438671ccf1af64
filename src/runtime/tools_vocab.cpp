// glass/tools.h: a vocabulary's tokenizer.* keys as GGUF records (glass synth --vocab).
#include <fmt/format.h>

#include <filesystem>

#include "core/exception_guard.h"
#include "formats/gguf.h"
#include "formats/gguf_metadata.h"
#include "formats/gguf_shards.h"
#include "formats/hf_gguf_vocab.h"
#include "glass/tools.h"

namespace glass {

Result<GgufVocabularyKeys> vocabulary_gguf_keys(const std::string& path) try {
  namespace fs = std::filesystem;
  const fs::path p = path;
  std::error_code ec;
  const bool dir = fs::is_directory(p, ec);
  formats::GgufMetadataBuilder keys;
  if (dir || p.extension() == ".json") {
    auto files = formats::read_hf_tokenizer_files(dir                       ? p
                                                  : p.parent_path().empty() ? fs::path(".")
                                                                            : p.parent_path());
    if (!files) return files.error();
    if (Status st = formats::hf_tokenizer_to_gguf(*files, 0, keys); !st) return st.error();
  } else {
    auto shards = formats::GgufShards::open(p);
    if (!shards) return shards.error();
    for (const auto& [key, value] : shards->metadata().metadata())
      if (key.starts_with("tokenizer.")) keys.value(key, value);
  }
  // Read back as a file reads them: the token list must be there.
  auto built = keys.build(path);
  if (!built) return built.error();
  auto tokens = built->get_string_views("tokenizer.ggml.tokens");
  if (!tokens)
    return make_error(ErrorCode::InvalidFile,
                      fmt::format("vocabulary: {}: no token list (tokenizer.ggml.tokens)", path));
  return GgufVocabularyKeys{
      .records = keys.records(), .count = keys.size(), .n_tokens = static_cast<int64_t>((*tokens)->size())};
} catch (...) {
  return error_from_exception("vocabulary", path, std::current_exception());
}

}  // namespace glass
