#pragma once
// Where a Model's chat template comes from.
#include <filesystem>
#include <string>

#include "glass/result.h"
#include "runtime/hf_source.h"
#include "runtime/model_impl.h"

namespace glass {

// The template Session::chat uses: LoadOptions::chat_template when given, else the model's own
// (GGUF tokenizer.chat_template; HF chat_template.jinja, else tokenizer_config.json's
// chat_template, a string or the entry named "default" of a list). A model without one loads.
Status load_chat_template(Model::Impl& impl, ModelFormat format, const std::filesystem::path& path);

// An HF directory's template: chat_template.jinja beside the config (as transformers prefers), else
// tokenizer_config.json's chat_template; "" when it has none (also glass::load_chat_template's).
Result<std::string> hf_chat_template(const std::filesystem::path& dir);

}  // namespace glass
