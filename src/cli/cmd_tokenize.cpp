// glass tokenize / glass detokenize: text <-> token ids with a model's tokenizer alone (no weights
// are loaded). MODEL is a GGUF file, or an HF directory / tokenizer.json file.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli/common.h"
#include "core/read_file.h"
#include "formats/gguf.h"
#include "formats/gguf_vocab.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace glass::cli {
namespace {

using tokenizer::Tokenizer;

// The bundled default model (as the other commands): ./models/stories260K.gguf, else the source tree's.
std::filesystem::path default_model() {
  const std::filesystem::path rel = "models/stories260K.gguf";
  std::error_code ec;
  if (std::filesystem::exists(rel, ec)) return rel;
  return std::filesystem::path(GLASS_SOURCE_DIR) / rel;
}

// A directory or a .json file is an HF tokenizer; anything else is read as GGUF.
Result<Tokenizer> load_tokenizer(const std::string& model) {
  const std::filesystem::path path = model.empty() ? default_model() : std::filesystem::path(model);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec) || path.extension() == ".json") {
    return tokenizer::load_hf_tokenizer(path);
  }
  Result<formats::GgufFile> file = formats::GgufFile::open(path);
  if (!file) return file.error();
  Result<tokenizer::Vocab> vocab = formats::vocab_from_gguf(*file);
  if (!vocab) {
    // llama.cpp's weights-only files: say what they are rather than "unsupported tokenizer".
    auto tok_model = file->find("tokenizer.ggml.model") ? file->get_string("tokenizer.ggml.model")
                                                        : Result<std::string>(std::string());
    if (tok_model && *tok_model == "no_vocab")
      return make_error(ErrorCode::Unsupported,
                        fmt::format("{} has no vocabulary (tokenizer.ggml.model = \"no_vocab\"): there is "
                                    "nothing to tokenize with",
                                    path.string()));
    return vocab.error();
  }
  return Tokenizer::create(std::move(vocab).value());
}

Result<std::string> read_file(const std::string& path) {
  return read_file_bounded(path, kMaxTextFileBytes, "tokenize");  // regular files, bounded
}

struct TokenizeOptions {
  std::string model;
  std::optional<std::string> text;
  std::string file;
  bool no_add_special = false;
  bool no_parse_special = false;
  bool json = false;
};

int tokenize(const TokenizeOptions& o) {
  if (o.text.has_value() == !o.file.empty()) {
    return report(
        make_error(ErrorCode::InvalidArgument, "tokenize: give the text or --file FILE (one of them)"));
  }
  std::string text;
  if (o.text) {
    text = *o.text;
  } else {
    Result<std::string> content = read_file(o.file);
    if (!content) return report(content.error());
    text = std::move(content).value();
  }
  Result<Tokenizer> t = load_tokenizer(o.model);
  if (!t) return report(t.error());
  Result<std::vector<int32_t>> ids = t->encode(text, !o.no_add_special, !o.no_parse_special);
  if (!ids) return report(ids.error());
  if (o.json) {
    nlohmann::json pieces = nlohmann::json::array();
    for (int32_t id : *ids) pieces.push_back(t->token_text(id));
    const nlohmann::json out = {{"ids", *ids}, {"pieces", std::move(pieces)}};
    fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    fmt::print("{}\n", fmt::join(*ids, " "));
  }
  return 0;
}

struct DetokenizeOptions {
  std::string model;
  std::vector<int32_t> ids;
  bool skip_special = false;
};

int detokenize(const DetokenizeOptions& o) {
  Result<Tokenizer> t = load_tokenizer(o.model);
  if (!t) return report(t.error());
  for (int32_t id : o.ids) {
    if (id < 0 || id >= t->vocab_size()) {
      return report(
          make_error(ErrorCode::InvalidArgument,
                     fmt::format("detokenize: id {} is out of range [0, {})", id, t->vocab_size())));
    }
  }
  // As transformers' decode and llama.cpp's detokenize: with the tokenizer's configured clean-up.
  const std::string text = t->decode(o.ids, tokenizer::DecodeOptions{!o.skip_special, true});
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace

void add_tokenize_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "print the token ids of a text (space-separated)");
  cmd->add_option(
      "-m,--model", o->model,
      "GGUF file, or HF directory / tokenizer.json (default: the bundled models/stories260K.gguf)");
  cmd->add_option("text", o->text, "text to tokenize");
  cmd->add_option("--file", o->file, "read the text from FILE, as raw bytes");
  cmd->add_flag("--no-add-special", o->no_add_special,
                "do not add the BOS/EOS tokens the model's configuration adds");
  cmd->add_flag("--no-parse-special", o->no_parse_special, "treat special-token text as plain text");
  cmd->add_flag("--json", o->json, "print {\"ids\": [...], \"pieces\": [...]} on one line");
  cmd->callback([o, &exit_code] { exit_code = tokenize(*o); });
}

void add_detokenize_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<DetokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("detokenize", "print the text of token ids (exactly, no newline added)");
  cmd->add_option(
      "-m,--model", o->model,
      "GGUF file, or HF directory / tokenizer.json (default: the bundled models/stories260K.gguf)");
  cmd->add_option("ids", o->ids, "token ids")->required();
  cmd->add_flag("--skip-special", o->skip_special, "leave special tokens out");
  cmd->callback([o, &exit_code] { exit_code = detokenize(*o); });
}

}  // namespace glass::cli
