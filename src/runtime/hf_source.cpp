#include "runtime/hf_source.h"

#include <fmt/format.h>

#include "models/hf.h"
#include "tokenizer/hf_tokenizer.h"

namespace glass {

namespace {

// Whether the folder holds any file whose name ends with `suffix`.
bool holds_file_ending(const std::filesystem::path& dir, std::string_view suffix) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    if (it->path().filename().string().ends_with(suffix)) return true;
  return false;
}

}  // namespace

bool is_hf_directory(const std::filesystem::path& dir) {
  // A hub GGUF snapshot may carry the original config.json beside its GGUF files, without weights.
  std::error_code ec;
  return !holds_file_ending(dir, ".gguf") || (std::filesystem::is_regular_file(dir / "config.json", ec) &&
                                              holds_file_ending(dir, ".safetensors"));
}

Result<ModelFormat> detect_model_format(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return std::filesystem::is_regular_file(path / "config.json", ec) && is_hf_directory(path)
               ? ModelFormat::HfDirectory
               : ModelFormat::Gguf;  // formats::GgufShards::open finds its GGUF file or says why not
  if (path.filename() == "config.json" || path.extension() == ".safetensors" ||
      path.filename() == "model.safetensors.index.json")
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("load: {} is part of a Hugging Face checkpoint: pass its directory ({})", path.string(),
                    path.has_parent_path() ? path.parent_path().string() : std::string(".")));
  return ModelFormat::Gguf;
}

Result<HfSource> open_hf_source(const std::filesystem::path& dir, Model::Impl& impl,
                                models::BuildOptions& build) {
  auto hf = models::open_hf_model(dir);
  if (!hf) return hf.error();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(dir / "tokenizer.json", ec))
    return make_error(
        ErrorCode::InvalidFile,
        fmt::format("load: {} has config.json and weights but no tokenizer.json (glass reads HF "
                    "tokenizers from tokenizer.json only, not tokenizer.model)",
                    dir.string()));
  tokenizer::HfTokenizerOptions tok_options;
  tok_options.eog_ids = hf->eog_ids;
  auto tok = tokenizer::load_hf_tokenizer(dir, tok_options);
  if (!tok) return tok.error();
  impl.tokenizer = std::move(*tok);
  impl.file = std::move(hf->metadata);
  impl.weights = std::move(hf->weights);
  impl.storage = std::move(hf->storage);
  impl.weight_mappings = std::move(hf->mappings);
  build.hf_layout = true;
  return HfSource{hf->arch, hf->file_bytes};
}

Error hf_build_error(const Error& e, const std::filesystem::path& dir) {
  return make_error(e.code, fmt::format("{} (from {}, its keys read as the GGUF keys named)", e.message,
                                        (dir / "config.json").string()));
}

}  // namespace glass
