// glass chat-template: renders one conversation with a model's chat template, exactly as Hugging
// Face transformers renders it (glass::render_chat_template, glass/tools.h), and prints the prompt
// with no newline added.
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
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/common.h"
#include "glass/files.h"
#include "glass/json.h"
#include "glass/tools.h"

namespace glass::cli {
namespace {

using json = nlohmann::ordered_json;

struct ChatTemplateOptions {
  std::string model;
  std::string template_file;
  std::string context_file;
  std::vector<std::string> vars;
  std::string now;
};

Result<std::string> read_file(const std::string& path) {
  return read_file_bounded(path, kMaxTextFileBytes, "chat-template");  // regular files, bounded
}

Result<ChatTemplateSource> load_template(const ChatTemplateOptions& o) {
  if (o.template_file.empty()) return load_chat_template(o.model);
  auto text = read_file(o.template_file);
  if (!text) return text.error();
  return ChatTemplateSource{std::move(*text), {}};
}

// --var NAME=VALUE: VALUE is JSON when it parses as JSON (true, 3, null, "quoted", [..]), else text.
Status apply_var(const std::string& spec, json& vars) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) {
    return make_error(ErrorCode::InvalidArgument, fmt::format("--var '{}': expected NAME=VALUE", spec));
  }
  const std::string value = spec.substr(eq + 1);
  auto parsed = parse_json_bounded<json>(value, "--var");
  vars[spec.substr(0, eq)] = parsed ? std::move(*parsed) : json(value);
  return {};
}

int run_chat_template(const ChatTemplateOptions& o) {
  if (o.model.empty() == o.template_file.empty()) {
    return report(make_error(ErrorCode::InvalidArgument,
                             "chat-template: give exactly one of -m MODEL or --template FILE"));
  }
  auto source = load_template(o);
  if (!source) return report(source.error());
  auto context = read_file(o.context_file);
  if (!context) return report(context.error());
  auto context_json = parse_json_bounded<json>(*context, o.context_file);
  if (!context_json) return report(context_json.error());
  const json& parsed = *context_json;
  if (parsed.is_object() && parsed.contains("contexts")) {
    return report(
        make_error(ErrorCode::InvalidArgument,
                   fmt::format("'{}' holds several conversations; --context takes one (a single object "
                               "with \"messages\")",
                               o.context_file)));
  }
  json overrides = json::object();
  for (const std::string& spec : o.vars) {
    if (Status s = apply_var(spec, overrides); !s) return report(s.error());
  }
  ChatTemplateRender render;
  render.variables = std::move(source->variables);
  render.overrides_json = overrides.dump(-1, ' ', false, json::error_handler_t::replace);
  render.now = o.now;
  auto text = render_chat_template(source->text, *context, render);
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
