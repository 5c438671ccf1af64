// Tokenizer::create: validation of a vocabulary and its pipeline, and the state both flavours share.
// Encoding and decoding are in tokenizer_codec.cpp.
#include "tokenizer/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <unordered_set>

#include "tokenizer/special.h"
#include "tokenizer/spm.h"
#include "tokenizer/tokenizer_impl.h"

namespace glass::tokenizer {
namespace {

Error invalid(std::string message) { return make_error(ErrorCode::InvalidArgument, "tokenizer: " + message); }

Status validate(const Vocab& v, const Pipeline& p) {
  const size_t n = v.tokens.size();
  if (n == 0) return invalid("the vocabulary has no tokens");
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return invalid(fmt::format("{} tokens exceed the int32 id range", n));
  }
  if (v.scores.size() != n) return invalid(fmt::format("{} scores for {} tokens", v.scores.size(), n));
  if (v.types.size() != n) return invalid(fmt::format("{} token types for {} tokens", v.types.size(), n));
  if (!v.strip.empty() && v.strip.size() != n) {
    return invalid(fmt::format("{} strip flags for {} tokens", v.strip.size(), n));
  }
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(v.scores[i])) return invalid(fmt::format("token {} has a NaN score", i));
    const auto t = static_cast<int32_t>(v.types[i]);
    if (t < 0 || t > static_cast<int32_t>(TokenType::Byte)) {
      return invalid(fmt::format("token {} has type {}, expected 0..6", i, t));
    }
  }
  const auto n32 = static_cast<int32_t>(n);
  auto check_id = [&](std::string_view name, int32_t id, bool none_ok) -> Status {
    if ((none_ok && id == -1) || (id >= 0 && id < n32)) return {};
    return invalid(fmt::format("{} {} is out of range [0, {})", name, id, n));
  };
  const std::pair<const char*, int32_t> ids[] = {{"bos_id", v.bos_id},
                                                 {"eos_id", v.eos_id},
                                                 {"unk_id", v.unk_id},
                                                 {"pad_id", v.pad_id},
                                                 {"sep_id", v.sep_id}};
  for (const auto& [name, id] : ids) {
    if (Status s = check_id(name, id, true); !s) return s;
  }
  for (int32_t id : v.eog_ids) {
    if (Status s = check_id("end-of-generation id", id, false); !s) return s;
  }
  for (int32_t id : p.prefix) {
    if (Status s = check_id("added special token", id, false); !s) return s;
  }
  for (int32_t id : p.suffix) {
    if (Status s = check_id("added special token", id, false); !s) return s;
  }
  for (const AddedToken& t : p.added_tokens) {
    if (Status s = check_id(fmt::format("added token '{}': id", t.content), t.id, false); !s) return s;
  }
  if (Status s = check_id("BPE unk_id", p.bpe.unk_id, true); !s) return s;
  if (Status s = check_id("WordPiece unk_id", p.wordpiece.unk_id, true); !s) return s;
  if (p.flavor == Flavor::LlamaCpp) {
    if (v.add_bos && v.bos_id < 0) return invalid("add_bos is set but the vocabulary has no BOS token");
    if (v.add_eos && v.eos_id < 0) return invalid("add_eos is set but the vocabulary has no EOS token");
  }
  return {};
}

Result<std::unique_ptr<Algorithm>> make_algorithm(const Tokenizer::Impl& impl) {
  const Vocab& v = impl.vocab;
  const Pipeline& p = impl.pipeline;
  std::vector<bool> excluded;
  for (const AddedToken& t : p.added_tokens) {
    if (t.in_model_vocab) continue;
    excluded.resize(v.tokens.size());
    excluded[static_cast<size_t>(t.id)] = true;
  }
  switch (p.model) {
    case ModelKind::Spm:
      return std::unique_ptr<Algorithm>(std::make_unique<SpmAlgorithm>(v, impl.index));
    case ModelKind::Bpe: {
      Result<BpeModel> bpe = BpeModel::build(v.merges, ModelVocab(impl.index, std::move(excluded)), p.bpe);
      if (!bpe) return bpe.error();
      return std::unique_ptr<Algorithm>(std::make_unique<PipelineAlgorithm>(
          p.pre_tokenizer, std::make_unique<BpeModel>(std::move(bpe).value()), p.pieces));
    }
    case ModelKind::WordPiece:
      return std::unique_ptr<Algorithm>(std::make_unique<PipelineAlgorithm>(
          p.pre_tokenizer,
          std::make_unique<WordPieceModel>(ModelVocab(impl.index, std::move(excluded)), p.wordpiece),
          p.pieces));
    case ModelKind::Wpm: {
      size_t max_len = 0;
      for (std::string_view t : v.tokens) max_len = std::max(max_len, t.size());
      return std::unique_ptr<Algorithm>(std::make_unique<WpmAlgorithm>(impl.index, v.unk_id, max_len,
                                                                       p.wpm_lowercase, p.wpm_strip_accents));
    }
  }
  return invalid("unknown model kind");
}

Status build_hf_state(Tokenizer::Impl& impl) {
  const Pipeline& p = impl.pipeline;
  std::vector<const AddedToken*> raw, normalized;
  std::vector<std::string> raw_patterns, normalized_patterns;
  // Looked up by view: a string per token cost a copy of every text at start-up.
  struct ViewHash {
    using is_transparent = void;
    size_t operator()(std::string_view v) const { return std::hash<std::string_view>{}(v); }
  };
  std::unordered_set<std::string, ViewHash, std::equal_to<>> special_contents;
  for (const AddedToken& t : p.added_tokens) {
    if (t.special) special_contents.insert(t.content);
    if (!t.normalized) {
      raw.push_back(&t);
      raw_patterns.push_back(t.content);
      continue;
    }
    // HF matches (and decodes) such a token in its normalized form.
    Result<std::string> form = p.normalizer.apply(t.content);
    if (!form) return form.error();
    if (*form != t.content) impl.hf_string[t.id] = *form;
    normalized.push_back(&t);
    normalized_patterns.push_back(std::move(form).value());
  }
  for (const AddedToken& t : p.added_tokens) {
    if (!t.normalized && t.content != impl.vocab.tokens[static_cast<size_t>(t.id)])
      impl.hf_string[t.id] = t.content;
  }
  impl.added_raw = AddedTokenMatcher(raw, raw_patterns);
  impl.added_normalized = AddedTokenMatcher(normalized, normalized_patterns);
  const size_t n = impl.vocab.tokens.size();
  impl.hf_skip.resize(n);
  if (special_contents.empty()) return {};
  for (size_t i = 0; i < n; ++i)
    impl.hf_skip[i] = special_contents.contains(impl.decode_string(static_cast<int32_t>(i)));
  return {};
}

}  // namespace

Status check_supported_model(std::string_view model) {
  if (model == "llama" || model == "gpt2" || model == "bert" || model == "gemma4") return {};
  const std::string_view family = model == "t5"       ? " (Unigram)"
                                  : model == "rwkv"   ? " (RWKV)"
                                  : model == "plamo2" ? " (PLaMo-2)"
                                                      : "";
  return make_error(ErrorCode::Unsupported,
                    fmt::format("tokenizer: model '{}'{} is not supported yet", model, family));
}

Result<Tokenizer> Tokenizer::create(Vocab vocab) {
  if (Status s = check_supported_model(vocab.model); !s) return s.error();
  Result<Pipeline> pipeline = llama_cpp_pipeline(vocab);
  if (!pipeline) return pipeline.error();
  return create(std::move(vocab), std::move(pipeline).value());
}

Result<Tokenizer> Tokenizer::create(Vocab vocab, Pipeline pipeline) {
  if (Status s = validate(vocab, pipeline); !s) return s.error();
  auto impl = std::make_shared<Impl>();
  impl->vocab = std::move(vocab);
  // The index reads impl->vocab's texts: built where they stay.
  Result<TokenIndex> index = TokenIndex::build(impl->vocab);
  if (!index) return index.error();
  impl->index = std::move(index).value();
  impl->pipeline = std::move(pipeline);
  Result<std::unique_ptr<Algorithm>> algorithm = make_algorithm(*impl);
  if (!algorithm) return algorithm.error();
  impl->algorithm = std::move(algorithm).value();
  if (impl->pipeline.flavor == Flavor::LlamaCpp) {
    impl->special_order = special_token_order(impl->vocab);
  } else if (Status s = build_hf_state(*impl); !s) {
    return s.error();
  }
  impl->eog_sorted = impl->vocab.eog_ids;
  std::sort(impl->eog_sorted.begin(), impl->eog_sorted.end());

  Tokenizer t(impl);
  if (t.flavor() == Flavor::HuggingFace) {
    // The stream context: an ordinary token whose text is plain ("a" as this tokenizer encodes it).
    // Set before the tokenizer is shared with anyone.
    Result<std::vector<int32_t>> a = t.encode("a", false, false);
    if (a && a->size() == 1) impl->stream_context = a->front();
  }
  return t;
}

bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(impl_->eog_sorted.begin(), impl_->eog_sorted.end(), id);
}
int32_t Tokenizer::bos_id() const { return impl_->vocab.bos_id; }
int32_t Tokenizer::eos_id() const { return impl_->vocab.eos_id; }
int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->vocab.tokens.size()); }
bool Tokenizer::add_bos() const {
  const std::vector<int32_t>& prefix = impl_->pipeline.prefix;
  return !prefix.empty() && prefix.front() == impl_->vocab.bos_id;
}
bool Tokenizer::add_space_prefix() const {
  return impl_->pipeline.flavor == Flavor::LlamaCpp && impl_->vocab.add_space_prefix;
}
Flavor Tokenizer::flavor() const { return impl_->pipeline.flavor; }
CleanUp Tokenizer::clean_up() const { return impl_->pipeline.clean_up; }
const Vocab& Tokenizer::vocab() const { return impl_->vocab; }

bool Tokenizer::begins_with_bos(const std::vector<int32_t>& ids) const {
  return add_bos() && !ids.empty() && ids.front() == impl_->vocab.bos_id;
}

std::string Tokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return std::string(impl_->pipeline.flavor == Flavor::HuggingFace
                         ? impl_->decode_string(id)
                         : impl_->vocab.tokens[static_cast<size_t>(id)]);
}

}  // namespace glass::tokenizer
