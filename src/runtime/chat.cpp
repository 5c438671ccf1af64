// Chat turns: the model's Jinja chat template renders the whole conversation, and the session
// re-evaluates only what its cache does not already hold.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/json_bounded.h"
#include "core/read_file.h"
#include "runtime/access.h"
#include "runtime/chat_load.h"
#include "runtime/chat_template_source.h"
#include "runtime/model_impl.h"
#include "runtime/session_impl.h"

namespace glass {

void ChatTemplateSlot::load(std::string text) {
  source = std::move(text);
  parsed.reset();
  error.reset();
  if (source.empty()) return;
  auto t = tokenizer::chat::ChatTemplate::parse(source);
  if (t)
    parsed.emplace(std::move(*t));
  else
    error = t.error();  // reported by the first chat call: a model loads for plain generation anyway
}

namespace {

// Bounded and regular files only (glass/files.h).
Result<std::string> read_text(const std::filesystem::path& p) {
  return read_file_bounded(p, kMaxTextFileBytes, "chat");
}

}  // namespace

// HF: chat_template.jinja beside the config wins (as in transformers), then tokenizer_config.json.
Result<std::string> hf_chat_template(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir / "chat_template.jinja", ec)) return read_text(dir / "chat_template.jinja");
  const auto config_path = dir / "tokenizer_config.json";
  if (!std::filesystem::exists(config_path, ec)) return std::string();
  auto text = read_text(config_path);
  if (!text) return text.error();
  auto parsed = parse_json_bounded<nlohmann::json>(*text, fmt::format("chat: {}", config_path.string()));
  if (!parsed) return parsed.error();
  const nlohmann::json& config = *parsed;
  if (!config.is_object())
    return make_error(ErrorCode::InvalidFile,
                      fmt::format("chat: {} is not a JSON object", config_path.string()));
  const auto t = config.find("chat_template");
  if (t == config.end() || t->is_null()) return std::string();
  if (t->is_string()) return t->get<std::string>();
  if (t->is_array())
    for (const auto& entry : *t)
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string())
        return entry["template"].get<std::string>();
  return make_error(
      ErrorCode::InvalidFile,
      fmt::format("chat: {}: chat_template is neither a string nor a list with a \"default\" entry",
                  config_path.string()));
}

Status load_chat_template(Model::Impl& impl, ModelFormat format, const std::filesystem::path& path) {
  if (!impl.options.chat_template.empty()) {
    impl.chat.load(impl.options.chat_template);
    return {};
  }
  if (format == ModelFormat::HfDirectory) {
    auto text = hf_chat_template(path);
    if (!text) return text.error();
    impl.chat.load(std::move(*text));
    return {};
  }
  if (impl.file->find("tokenizer.chat_template") == nullptr) return {};
  auto text = impl.file->get_string("tokenizer.chat_template");
  if (!text) return text.error();
  impl.chat.load(std::move(*text));
  return {};
}

const std::string& Model::chat_template() const { return impl_->chat.source; }

Result<std::string> Model::apply_chat_template(const std::vector<ChatMessage>& messages,
                                               bool add_generation_prompt) const {
  return apply_chat_template(messages, ChatTemplateInputs{.add_generation_prompt = add_generation_prompt});
}

Result<std::string> Model::apply_chat_template(const std::vector<ChatMessage>& messages,
                                               const ChatTemplateInputs& inputs) const {
  const ChatTemplateSlot& slot = impl_->chat;
  if (slot.source.empty())
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("chat: {} has no chat template (no tokenizer.chat_template); pass one "
                                  "with LoadOptions::chat_template or --chat-template-file",
                                  impl_->info.path));
  if (!slot.parsed)
    return make_error(slot.error->code, fmt::format("chat: the chat template of {} does not parse: {}",
                                                    impl_->info.path, slot.error->message));
  using Json = nlohmann::ordered_json;  // key order as given: templates print tools with tojson
  Json vars = Json::object();
  Json list = Json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    Json msg = {{"role", m.role}, {"content", m.content}};
    if (!m.extra_json.empty()) {
      // Template values are converted and rendered recursively: the nesting is bounded first.
      auto parsed = parse_json_bounded<Json>(m.extra_json, fmt::format("chat: messages[{}].extra_json", i),
                                             {.memory_factor = 16});
      if (!parsed) return make_error(ErrorCode::InvalidArgument, parsed.error().message);
      Json& extra = *parsed;
      if (!extra.is_object())
        return make_error(ErrorCode::InvalidArgument,
                          fmt::format("chat: messages[{}].extra_json is not a JSON object", i));
      for (auto& [k, v] : extra.items()) msg[k] = std::move(v);
    }
    list.push_back(std::move(msg));
  }
  vars["messages"] = std::move(list);
  // transformers passes tools=None when there are none: templates test `tools is not none`.
  vars["tools"] = nullptr;
  if (!inputs.tools_json.empty()) {
    auto parsed = parse_json_bounded<Json>(inputs.tools_json, "chat: tools", {.memory_factor = 16});
    if (!parsed) return make_error(ErrorCode::InvalidArgument, parsed.error().message);
    Json& tools = *parsed;
    if (!tools.is_array()) return make_error(ErrorCode::InvalidArgument, "chat: tools is not a JSON array");
    if (!tools.empty()) vars["tools"] = std::move(tools);
  }
  vars["add_generation_prompt"] = inputs.add_generation_prompt;
  if (!inputs.kwargs_json.empty()) {
    auto parsed =
        parse_json_bounded<Json>(inputs.kwargs_json, "chat: template kwargs", {.memory_factor = 16});
    if (!parsed) return make_error(ErrorCode::InvalidArgument, parsed.error().message);
    if (!parsed->is_object())
      return make_error(ErrorCode::InvalidArgument, "chat: template kwargs are not a JSON object");
    for (auto& [k, v] : parsed->items()) {
      if (k == "messages" || k == "tools" || k == "add_generation_prompt" || k == "bos_token" ||
          k == "eos_token")
        return make_error(ErrorCode::InvalidArgument,
                          fmt::format("chat: template kwarg '{}' is a variable the renderer sets itself", k));
      vars[k] = std::move(v);
    }
  }
  if (!impl_->tokenizer) return no_vocabulary(impl_->info.path);
  const tokenizer::Tokenizer& tok = *impl_->tokenizer;
  vars["bos_token"] = tok.bos_id() >= 0 ? tok.token_text(tok.bos_id()) : std::string();
  vars["eos_token"] = tok.eos_id() >= 0 ? tok.token_text(tok.eos_id()) : std::string();
  auto text = slot.parsed->render(vars);
  if (!text) return make_error(text.error().code, "chat: " + text.error().message);
  return text;
}

Result<GenerateResult> Session::chat(const std::vector<ChatMessage>& messages, const GenerateConfig& config,
                                     const PieceCallback& on_piece) {
  if (messages.empty()) return make_error(ErrorCode::InvalidArgument, "chat: no messages");
  const Model& m = model();
  auto text = m.apply_chat_template(messages, /*add_generation_prompt=*/true);
  if (!text) return text.error();
  // Templates that write BOS themselves (most do) must not get a second one from the tokenizer.
  if (!internal::Access::impl(m).tokenizer) return no_vocabulary(m.info().path);
  const tokenizer::Tokenizer& tok = *internal::Access::impl(m).tokenizer;
  auto ids = tok.encode(*text, /*add_special=*/false, /*parse_special=*/true);
  if (!ids) return ids.error();
  if (ids->empty() && tok.bos_id() < 0)
    return make_error(ErrorCode::InvalidArgument, "chat: the chat template rendered an empty prompt");
  if (!tok.begins_with_bos(*ids)) {
    ids = tok.encode(*text, /*add_special=*/true, /*parse_special=*/true);
    if (!ids) return ids.error();
  }
  // Reuse the longest cached prefix; at least the last prompt token is evaluated again so the
  // reply starts from fresh logits.
  const std::span<const int32_t> cached = tokens();
  const auto limit = std::min(cached.size(), ids->size() - 1);
  const auto common = static_cast<size_t>(
      std::mismatch(cached.begin(), cached.begin() + static_cast<std::ptrdiff_t>(limit), ids->begin()).first -
      cached.begin());
  Impl& s = *impl_;
  const bool recorded = s.length(0) == static_cast<int64_t>(cached.size());
  // The prefix index may hold more of this prompt than the sequence shares with it (an earlier
  // conversation this one returns to, blocks another sequence of the session left): the sequence
  // then starts again from the index's blocks (kv::State::cached_prefix says when that is exact).
  const int64_t indexed = s.kv->cached_prefix(*ids);
  if (!recorded || indexed > static_cast<int64_t>(common)) {
    reset();  // the blocks stay in the index (unreferenced) until evicted
    const int64_t matched = indexed > 0 ? s.kv->match_prefix(0, *ids) : 0;
    s.history.assign(ids->begin(), ids->begin() + matched);
    s.stats.prefix_tokens_reused += static_cast<uint64_t>(matched);
  } else if (auto st = truncate(static_cast<int64_t>(common)); !st) {
    return st.error();
  }
  const std::vector<int32_t> fresh(ids->begin() + static_cast<std::ptrdiff_t>(n_past()), ids->end());
  return generate(*this, fresh, config, on_piece);
}

}  // namespace glass
