#include "tokenizer/vocab.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <string_view>

namespace glass::tokenizer {
namespace {

// Token texts as data, from llama.cpp llama-vocab.cpp (llama_vocab::impl::load, commit 3f545bec).
constexpr std::array<std::string_view, 11> kEotTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",         "<|endoftext|>",     "<|end_of_text|>",
    "<EOT>",      "_<EOT>",     "[EOT]",   "<｜end▁of▁sentence｜>", "<end_of_utterance>"};
constexpr std::array<std::string_view, 1> kEomTexts = {"<|eom_id|>"};
constexpr std::array<std::string_view, 8> kFimPreTexts = {"<|fim_prefix|>",  "<fim-prefix>", "<fim_prefix>",
                                                          "<｜fim▁begin｜>", "<PRE>",        "▁<PRE>",
                                                          "<|code_prefix|>", "<|prefix|>"};
constexpr std::array<std::string_view, 8> kFimSufTexts = {"<|fim_suffix|>",  "<fim-suffix>", "<fim_suffix>",
                                                          "<｜fim▁hole｜>",  "<SUF>",        "▁<SUF>",
                                                          "<|code_suffix|>", "<|suffix|>"};
constexpr std::array<std::string_view, 8> kFimMidTexts = {"<|fim_middle|>",  "<fim-middle>", "<fim_middle>",
                                                          "<｜fim▁end｜>",   "<MID>",        "▁<MID>",
                                                          "<|code_middle|>", "<|middle|>"};
constexpr std::array<std::string_view, 5> kFimPadTexts = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>",
                                                          "[PAD]"};
constexpr std::array<std::string_view, 5> kFimRepTexts = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                                          "<REPO>", "<reponame>"};
constexpr std::array<std::string_view, 1> kFimSepTexts = {"<|file_sep|>"};
// Texts that end generation wherever they appear.
constexpr std::array<std::string_view, 22> kEogTexts = {"<|eot_id|>",
                                                        "<|im_end|>",
                                                        "<|end|>",
                                                        "<|return|>",
                                                        "<|call|>",
                                                        "<|flush|>",
                                                        "<|calls|>",
                                                        "<end_of_turn>",
                                                        "<|endoftext|>",
                                                        "</s>",
                                                        "<|eom_id|>",
                                                        "<EOT>",
                                                        "_<EOT>",
                                                        "[EOT]",
                                                        "[EOS]",
                                                        "<|end_of_text|>",
                                                        "<end_of_utterance>",
                                                        "<eos>",
                                                        "<turn|>",
                                                        "<|tool_response>",
                                                        "<｜end▁of▁sentence｜>",
                                                        "[e~["};
// gpt-oss: always rendered, never control.
constexpr std::array<std::string_view, 4> kUserDefinedTexts = {"<|channel|>", "<|message|>", "<|start|>",
                                                               "<|constrain|>"};

// The bytes the texts above start with and their longest length: nearly every token of a vocabulary
// is told apart by these two before any list is searched (ten searches of every token took a tenth
// of a 3M-token load).
struct TextFilter {
  std::array<bool, 256> first{};
  size_t longest = 0;
};
template <size_t... N>
constexpr TextFilter text_filter(const std::array<std::string_view, N>&... lists) {
  TextFilter f;
  auto add = [&f](const auto& list) {
    for (std::string_view t : list) {
      f.first[static_cast<unsigned char>(t[0])] = true;
      f.longest = std::max(f.longest, t.size());
    }
  };
  (add(lists), ...);
  return f;
}
constexpr TextFilter kListed =
    text_filter(kEotTexts, kEomTexts, kFimPreTexts, kFimSufTexts, kFimMidTexts, kFimPadTexts, kFimRepTexts,
                kFimSepTexts, kEogTexts, kUserDefinedTexts);

template <size_t N>
bool contains(const std::array<std::string_view, N>& texts, std::string_view s) {
  if (s.empty() || s.size() > kListed.longest || !kListed.first[static_cast<unsigned char>(s[0])])
    return false;
  return std::find(texts.begin(), texts.end(), s) != texts.end();
}

bool in_range(const Vocab& v, int32_t id) { return id >= 0 && static_cast<size_t>(id) < v.tokens.size(); }

// Resolves one special id: the given one when in range, else the lowest id whose text matches
// (which becomes Control), else -1.
template <size_t N>
int32_t resolve(Vocab& v, int32_t given, const std::array<std::string_view, N>& texts) {
  if (in_range(v, given)) return given;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (contains(texts, v.tokens[i])) {
      v.types[i] = TokenType::Control;
      return static_cast<int32_t>(i);
    }
  }
  return -1;
}

}  // namespace

void apply_special_token_rules(Vocab& v, const SpecialTokenIds& given) {
  if (v.types.size() != v.tokens.size()) return;  // malformed; Tokenizer::create reports it
  const int32_t eot = resolve(v, given.eot, kEotTexts);
  const int32_t eom = resolve(v, given.eom, kEomTexts);
  (void)resolve(v, given.fim_pre, kFimPreTexts);
  (void)resolve(v, given.fim_suf, kFimSufTexts);
  (void)resolve(v, given.fim_mid, kFimMidTexts);
  const int32_t fim_pad = resolve(v, given.fim_pad, kFimPadTexts);
  const int32_t fim_rep = resolve(v, given.fim_rep, kFimRepTexts);
  const int32_t fim_sep = resolve(v, given.fim_sep, kFimSepTexts);

  std::vector<int32_t> eog;
  for (int32_t id : {fim_pad, fim_rep, fim_sep}) {
    if (id >= 0) eog.push_back(id);
  }
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (contains(kEogTexts, v.tokens[i])) {
      eog.push_back(static_cast<int32_t>(i));
      v.types[i] = TokenType::Control;
    } else if (contains(kUserDefinedTexts, v.tokens[i])) {
      v.types[i] = TokenType::UserDefined;
    }
  }
  for (int32_t id : {v.eos_id, eot, eom}) {
    if (in_range(v, id)) eog.push_back(id);
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());

  // gpt-oss (o200k_harmony) and solar-open: "<|end|>" ends a message, not the generation.
  bool has_return = false, has_call = false, has_flush = false, has_tool_response = false;
  int32_t end_id = -1, s_id = -1;
  for (int32_t id : eog) {
    const std::string_view t = v.tokens[static_cast<size_t>(id)];
    if (t == "<|return|>") has_return = true;
    if (t == "<|call|>" || t == "<|calls|>") has_call = true;
    if (t == "<|flush|>") has_flush = true;
    if (t == "<|end|>") end_id = id;
    if (t == "<|tool_response>") has_tool_response = true;
    if (t == "</s>") s_id = id;
  }
  auto drop = [&](int32_t id, TokenType type) {
    eog.erase(std::remove(eog.begin(), eog.end(), id), eog.end());
    v.types[static_cast<size_t>(id)] = type;
  };
  if (end_id >= 0 && ((has_return && has_call) || (has_call && has_flush)))
    drop(end_id, TokenType::UserDefined);
  // gemma4 (and paddleocr): "</s>" is an ordinary token there.
  if (s_id >= 0 && has_tool_response) drop(s_id, TokenType::Normal);
  v.eog_ids = std::move(eog);
}

}  // namespace glass::tokenizer
