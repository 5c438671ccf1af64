// glass tokenize: text -> token ids, as the model's tokenizer metadata says.
#include <fmt/format.h>

#include "cli/common.h"

namespace glass::cli {
namespace {

struct TokenizeOptions {
  ModelOptions model;
  std::string text;
  bool no_bos = false;
  bool no_parse_special = false;
  bool pieces = false;
};

int tokenize(const TokenizeOptions& o) {
  auto model = load_or_report(o.model);
  if (!model) return 1;
  auto ids = model->tokenize(o.text, !o.no_bos, !o.no_parse_special);
  if (!ids) return report(ids.error());
  if (o.pieces) {
    for (int32_t id : *ids) fmt::print("{}\t'{}'\n", id, model->token_to_piece(id));
  } else {
    fmt::print("{}\n", fmt::join(*ids, ","));
  }
  return 0;
}

}  // namespace

void add_tokenize_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "print the token ids of a text (comma-separated)");
  add_model_options(*cmd, o->model);
  cmd->add_option("text", o->text, "text to tokenize")->required();
  cmd->add_flag("--no-bos", o->no_bos, "do not add the BOS/EOS tokens the model asks for");
  cmd->add_flag("--no-parse-special", o->no_parse_special, "treat special-token text as plain text");
  cmd->add_flag("--pieces", o->pieces, "print one 'id<TAB>piece' line per token");
  cmd->callback([o, &exit_code] { exit_code = tokenize(*o); });
}

}  // namespace glass::cli
