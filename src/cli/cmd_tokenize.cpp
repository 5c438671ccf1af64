// glass tokenize / glass detokenize: text <-> token ids with a model's tokenizer alone (no weights
// are loaded). MODEL is a GGUF file, or an HF directory / tokenizer.json file.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/common.h"
#include "glass/files.h"
#include "glass/tools.h"

namespace glass::cli {
namespace {

Result<std::unique_ptr<TextTokenizer>> load_tokenizer(const std::string& model) {
  return TextTokenizer::load(model.empty() ? default_model() : model);
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
  auto t = load_tokenizer(o.model);
  if (!t) return report(t.error());
  Result<std::vector<int32_t>> ids = (*t)->tokenize(text, !o.no_add_special, !o.no_parse_special);
  if (!ids) return report(ids.error());
  if (o.json) {
    nlohmann::json pieces = nlohmann::json::array();
    for (int32_t id : *ids) pieces.push_back((*t)->token_text(id));
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
  auto t = load_tokenizer(o.model);
  if (!t) return report(t.error());
  // As transformers' decode and llama.cpp's detokenize: with the tokenizer's configured clean-up.
  auto text = (*t)->detokenize(o.ids, o.skip_special);
  if (!text) return report(text.error());
  std::fwrite(text->data(), 1, text->size(), stdout);
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
