// glass chat-template: renders one conversation with a model's chat template, exactly as Hugging
// Face transformers renders it (see tokenizer/chat/chat_template.h), and prints the prompt with no
// newline added.
//
//   glass chat-template (-m MODEL | --template FILE.jinja) --context FILE.json
//                       [--var NAME=VALUE]... [--now 2026-01-01T00:00:00]
//
// MODEL is a GGUF file (template from tokenizer.chat_template, bos_token / eos_token texts from its
// vocabulary), or an HF directory, or a file inside one such as tokenizer.json (template from
// chat_template.jinja or tokenizer_config.json's chat_template, bos_token / eos_token from
// tokenizer_config.json). FILE.json is one conversation in the fixtures' context format.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/common.h"
#include "core/read_file.h"
#include "formats/gguf.h"
#include "formats/gguf_vocab.h"
#include "tokenizer/chat/chat_template.h"

namespace glass::cli {
namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

struct ChatTemplateOptions {
  std::string model;
  std::string template_file;
  std::string context_file;
  std::vector<std::string> vars;
  std::string now;
};

struct TemplateSource {
  std::string text;
  json variables = json::object();  // bos_token / eos_token from the model
};

Result<std::string> read_file(const fs::path& path) {
  return read_file_bounded(path, kMaxTextFileBytes, "chat-template");  // regular files, bounded
}

Result<json> read_json(const fs::path& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return make_error(ErrorCode::InvalidArgument, fmt::format("'{}' is not valid JSON", path.string()));
  return j;
}

// A special token in tokenizer_config.json: a string, or an AddedToken object {"content": ...}.
void take_token(const json& config, const char* key, json& vars) {
  const auto it = config.find(key);
  if (it == config.end()) return;
  if (it->is_string()) {
    vars[key] = *it;
  } else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    vars[key] = (*it)["content"];
  }
}

Result<TemplateSource> from_hf(const fs::path& dir) {
  TemplateSource src;
  const fs::path config_path = dir / "tokenizer_config.json";
  json config = json::object();
  std::error_code ec;
  if (fs::exists(config_path, ec)) {
    auto c = read_json(config_path);
    if (!c) return c.error();
    config = std::move(*c);
    take_token(config, "bos_token", src.variables);
    take_token(config, "eos_token", src.variables);
    take_token(config, "unk_token", src.variables);
    take_token(config, "pad_token", src.variables);
  }
  // Newer checkpoints keep the template beside the config; transformers prefers that file.
  if (fs::exists(dir / "chat_template.jinja", ec)) {
    auto text = read_file(dir / "chat_template.jinja");
    if (!text) return text.error();
    src.text = std::move(*text);
    return src;
  }
  const auto t = config.find("chat_template");
  if (t != config.end() && t->is_string()) {
    src.text = t->get<std::string>();
    return src;
  }
  if (t != config.end() && t->is_array()) {  // named templates: [{"name": "default", "template": ...}]
    for (const auto& entry : *t) {
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string()) {
        src.text = entry["template"].get<std::string>();
        return src;
      }
    }
  }
  return make_error(ErrorCode::InvalidArgument,
                    fmt::format("'{}' has no chat template (no chat_template.jinja, no chat_template in "
                                "tokenizer_config.json)",
                                dir.string()));
}

Result<TemplateSource> from_gguf(const fs::path& path) {
  auto file = formats::GgufFile::open(path);
  if (!file) return file.error();
  TemplateSource src;
  if (!file->find("tokenizer.chat_template")) {
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("'{}' has no chat template (no tokenizer.chat_template key)", path.string()));
  }
  auto text = file->get_string("tokenizer.chat_template");
  if (!text) return text.error();
  src.text = std::move(*text);
  auto vocab = formats::vocab_from_gguf(*file);
  if (vocab) {
    const auto& tokens = vocab->tokens;
    auto put = [&](const char* key, int32_t id) {
      if (id >= 0 && static_cast<size_t>(id) < tokens.size())
        src.variables[key] = tokens[static_cast<size_t>(id)];
    };
    put("bos_token", vocab->bos_id);
    put("eos_token", vocab->eos_id);
    return src;
  }
  // A vocabulary glass cannot tokenize with still names its special tokens.
  auto tokens = file->get_string_array("tokenizer.ggml.tokens");
  if (!tokens) return vocab.error();
  for (const auto& [key, meta] : {std::pair{"bos_token", "tokenizer.ggml.bos_token_id"},
                                  std::pair{"eos_token", "tokenizer.ggml.eos_token_id"}}) {
    if (!file->find(meta)) continue;
    auto id = file->get_u32(meta);
    if (id && *id < tokens->size()) src.variables[key] = (*tokens)[*id];
  }
  return src;
}

Result<TemplateSource> load_template(const ChatTemplateOptions& o) {
  if (!o.template_file.empty()) {
    auto text = read_file(o.template_file);
    if (!text) return text.error();
    return TemplateSource{std::move(*text), json::object()};
  }
  const fs::path path = o.model;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return from_hf(path);
  if (path.extension() == ".json")
    return from_hf(path.parent_path().empty() ? fs::path(".") : path.parent_path());
  return from_gguf(path);
}

// --var NAME=VALUE: VALUE is JSON when it parses as JSON (true, 3, null, "quoted", [..]), else text.
Status apply_var(const std::string& spec, json& vars) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) {
    return make_error(ErrorCode::InvalidArgument, fmt::format("--var '{}': expected NAME=VALUE", spec));
  }
  const std::string value = spec.substr(eq + 1);
  json parsed = json::parse(value, nullptr, /*allow_exceptions=*/false);
  vars[spec.substr(0, eq)] = parsed.is_discarded() ? json(value) : parsed;
  return {};
}

int run_chat_template(const ChatTemplateOptions& o) {
  if (o.model.empty() == o.template_file.empty()) {
    return report(make_error(ErrorCode::InvalidArgument,
                             "chat-template: give exactly one of -m MODEL or --template FILE"));
  }
  auto source = load_template(o);
  if (!source) return report(source.error());
  auto context = read_json(o.context_file);
  if (!context) return report(context.error());
  if (context->is_object() && context->contains("contexts")) {
    return report(
        make_error(ErrorCode::InvalidArgument,
                   fmt::format("'{}' holds several conversations; --context takes one (a single object "
                               "with \"messages\")",
                               o.context_file)));
  }
  auto vars = tokenizer::chat::variables_from_context(*context, source->variables);
  if (!vars) return report(vars.error());
  for (const std::string& spec : o.vars) {
    if (Status s = apply_var(spec, *vars); !s) return report(s.error());
  }
  tokenizer::chat::RenderOptions options;
  if (!o.now.empty()) {
    auto now = tokenizer::chat::parse_datetime(o.now);
    if (!now) return report(now.error());
    const std::tm fixed = *now;
    options.clock = [fixed] { return fixed; };
  }
  auto tmpl = tokenizer::chat::ChatTemplate::parse(source->text);
  if (!tmpl) return report(tmpl.error());
  auto text = tmpl->render(*vars, options);
  if (!text) return report(text.error());
  std::fwrite(text->data(), 1, text->size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

void add_chat_template_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ChatTemplateOptions>();
  CLI::App* cmd = app.add_subcommand("chat-template",
                                     "render a conversation with a chat template (as transformers does)");
  auto* model = cmd->add_option("-m,--model", o->model,
                                "GGUF file, or HF directory / tokenizer.json holding the template");
  auto* tmpl = cmd->add_option("--template", o->template_file, "a Jinja chat template file");
  model->excludes(tmpl);
  cmd->add_option("--context", o->context_file,
                  "one conversation: {messages, tools, add_generation_prompt, extra}")
      ->required();
  cmd->add_option("--var", o->vars,
                  "set or override a template variable: NAME=VALUE (VALUE as JSON, else text)");
  cmd->add_option("--now", o->now, "fix the clock strftime_now() reads, e.g. 2026-01-01T00:00:00");
  cmd->callback([o, &exit_code] { exit_code = run_chat_template(*o); });
}

}  // namespace glass::cli
