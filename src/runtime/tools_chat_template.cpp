// glass/tools.h's chat templates rendered alone (`glass chat-template`): a model's template and
// special-token texts (GGUF metadata, or an HF directory's template as a loaded model finds it,
// chat_load.h, and its tokenizer_config.json), rendered by tokenizer/chat/ over one conversation in
// the fixtures' context format, exactly as Hugging Face transformers renders it.
#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/exception_guard.h"
#include "core/json_bounded.h"
#include "formats/gguf.h"
#include "formats/gguf_shards.h"
#include "formats/gguf_vocab.h"
#include "glass/tools.h"
#include "runtime/chat_load.h"
#include "runtime/hf_source.h"
#include "tokenizer/chat/chat_template.h"

namespace glass {
namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

Result<std::string> read_file(const fs::path& path) {
  return read_file_bounded(path, kMaxTextFileBytes, "chat-template");  // regular files, bounded
}

Result<json> parse_json(std::string_view text, const std::string& where) {
  return parse_json_bounded<json>(text, where);
}

Result<json> read_json(const fs::path& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  return parse_json(*text, path.string());
}

// A JSON object given as text (overrides); `what` names it in errors.
Result<json> parse_object(std::string_view text, const char* what) {
  auto j = parse_json(text, what);
  if (!j) return j.error();
  if (!j->is_object())
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("chat template {}: expected a JSON object", what));
  return j;
}

// A special token in tokenizer_config.json: a string, or an AddedToken object {"content": ...}.
void take_token(const json& config, const char* key, std::vector<std::pair<std::string, std::string>>& vars) {
  const auto it = config.find(key);
  if (it == config.end()) return;
  if (it->is_string()) {
    vars.emplace_back(key, it->get<std::string>());
  } else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    vars.emplace_back(key, (*it)["content"].get<std::string>());
  }
}

Result<ChatTemplateSource> from_hf(const fs::path& dir) {
  ChatTemplateSource src;
  const fs::path config_path = dir / "tokenizer_config.json";
  std::error_code ec;
  if (fs::exists(config_path, ec)) {
    auto config = read_json(config_path);
    if (!config) return config.error();
    for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"})
      take_token(*config, key, src.variables);
  }
  auto text = hf_chat_template(dir);  // what a model loaded from the directory renders
  if (!text) return text.error();
  if (text->empty())
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("'{}' has no chat template (no chat_template.jinja, no chat_template in "
                                  "tokenizer_config.json)",
                                  dir.string()));
  src.text = std::move(*text);
  return src;
}

Result<ChatTemplateSource> from_gguf(const fs::path& path) {
  auto shards = formats::GgufShards::open(path);  // a split model's template is in its first shard
  if (!shards) return shards.error();
  const formats::GgufFile* file = &shards->metadata();
  ChatTemplateSource src;
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
        src.variables.emplace_back(key, tokens[static_cast<size_t>(id)]);
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
    if (id && *id < tokens->size()) src.variables.emplace_back(key, (*tokens)[*id]);
  }
  return src;
}

}  // namespace

Result<ChatTemplateSource> load_chat_template(const std::string& path) try {
  const fs::path p = path;
  std::error_code ec;
  if (fs::is_directory(p, ec) && is_hf_directory(p)) return from_hf(p);
  if (p.extension() == ".json") return from_hf(p.parent_path().empty() ? fs::path(".") : p.parent_path());
  return from_gguf(p);
} catch (...) {
  return error_from_exception("chat-template", path, std::current_exception());
}

Result<std::string> render_chat_template(std::string_view template_text, std::string_view context_json,
                                         const ChatTemplateRender& options) try {
  auto context = parse_json(context_json, "context");
  if (!context) return context.error();
  json defaults = json::object();
  for (const auto& [name, text] : options.variables) defaults[name] = text;
  auto overrides = parse_object(options.overrides_json, "overrides");
  if (!overrides) return overrides.error();
  auto vars = tokenizer::chat::variables_from_context(*context, defaults);
  if (!vars) return vars.error();
  for (auto it = overrides->begin(); it != overrides->end(); ++it) (*vars)[it.key()] = it.value();
  tokenizer::chat::RenderOptions render;
  if (!options.now.empty()) {
    auto now = tokenizer::chat::parse_datetime(options.now);
    if (!now) return now.error();
    const std::tm fixed = *now;
    render.clock = [fixed] { return fixed; };
  }
  auto tmpl = tokenizer::chat::ChatTemplate::parse(template_text);
  if (!tmpl) return tmpl.error();
  return tmpl->render(*vars, render);
} catch (...) {
  return error_from_exception("chat-template", std::current_exception());
}

}  // namespace glass
