#include "cli/synth_hf.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "glass/files.h"

namespace glass::cli {
namespace {

using Json = nlohmann::ordered_json;

// GGUF names -> HF names (the inverse of models/llama_hf.cpp's table).
std::string hf_name(const std::string& gguf) {
  if (gguf == "token_embd.weight") return "model.embed_tokens.weight";
  if (gguf == "output_norm.weight") return "model.norm.weight";
  if (gguf == "output.weight") return "lm_head.weight";
  static const std::pair<const char*, const char*> kLayer[] = {
      {"attn_norm", "input_layernorm"},    {"attn_q", "self_attn.q_proj"},
      {"attn_k", "self_attn.k_proj"},      {"attn_v", "self_attn.v_proj"},
      {"attn_output", "self_attn.o_proj"}, {"ffn_norm", "post_attention_layernorm"},
      {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"}};
  const size_t dot = gguf.find('.', 4);  // "blk.N."
  const std::string layer = gguf.substr(4, dot - 4);
  const std::string what = gguf.substr(dot + 1, gguf.size() - dot - 1 - std::string(".weight").size());
  for (const auto& [g, h] : kLayer)
    if (what == g) return fmt::format("model.layers.{}.{}.weight", layer, h);
  return gguf;
}

Status write(const std::filesystem::path& path, const std::string& text) {
  auto f = OutputFile::create(path, "synth");
  if (!f) return f.error();
  if (auto st = f->write(text.data(), text.size()); !st) return st;
  return f->commit();
}

}  // namespace

Status write_hf_json_files(const std::filesystem::path& dir, const SynthHfModel& m) {
  Json config = {{"architectures", {"LlamaForCausalLM"}},
                 {"model_type", "llama"},
                 {"hidden_size", m.dim},
                 {"intermediate_size", m.ffn_dim},
                 {"num_hidden_layers", m.n_layers},
                 {"num_attention_heads", m.n_heads},
                 {"num_key_value_heads", m.n_kv_heads},
                 {"head_dim", m.dim / m.n_heads},
                 {"hidden_act", "silu"},
                 {"vocab_size", m.vocab},
                 {"max_position_embeddings", m.n_ctx},
                 {"rms_norm_eps", m.rms_eps},
                 {"rope_theta", m.rope_base},
                 {"tie_word_embeddings", true},
                 {"torch_dtype", m.dtype == "F32"   ? "float32"
                                 : m.dtype == "F16" ? "float16"
                                                    : "bfloat16"},
                 {"bos_token_id", 1},
                 {"eos_token_id", 2}};
  // A SentencePiece-style BPE as Llama 2's tokenizer.json writes it (spaces as U+2581 with one
  // prepended, byte fallback; what the GGUF twin's "llama" tokenizer does), without merges: text
  // falls back to byte tokens, which is all a benchmark needs.
  Json vocab = Json::object();
  for (size_t i = 0; i < m.tokens.size(); ++i) vocab[m.tokens[i]] = i;
  Json added = Json::array();
  for (int i = 0; i < 3; ++i)
    added.push_back({{"id", i},
                     {"content", m.tokens[static_cast<size_t>(i)]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  Json tokenizer = {{"version", "1.0"},
                    {"added_tokens", added},
                    {"normalizer",
                     {{"type", "Sequence"},
                      {"normalizers",
                       {{{"type", "Prepend"}, {"prepend", "\u2581"}},
                        {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}}},
                    {"pre_tokenizer", nullptr},
                    {"post_processor",
                     {{"type", "TemplateProcessing"},
                      {"single",
                       {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                      {"pair",
                       {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                        {{"SpecialToken", {{"id", "<s>"}, {"type_id", 1}}}},
                        {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
                      {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
                    {"decoder",
                     {{"type", "Sequence"},
                      {"decoders",
                       {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                        {{"type", "ByteFallback"}},
                        {{"type", "Fuse"}},
                        {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
                    {"model",
                     {{"type", "BPE"},
                      {"dropout", nullptr},
                      {"unk_token", "<unk>"},
                      {"continuing_subword_prefix", nullptr},
                      {"end_of_word_suffix", nullptr},
                      {"fuse_unk", true},
                      {"byte_fallback", true},
                      {"vocab", vocab},
                      {"merges", Json::array()}}}};
  Json tokenizer_config = {{"add_bos_token", true},
                           {"add_eos_token", false},
                           {"bos_token", "<s>"},
                           {"eos_token", "</s>"},
                           {"unk_token", "<unk>"}};
  for (const auto& [name, j] :
       {std::pair{"config.json", config}, std::pair{"tokenizer.json", tokenizer},
        std::pair{"tokenizer_config.json", tokenizer_config},
        std::pair{"generation_config.json", Json{{"bos_token_id", 1}, {"eos_token_id", 2}}}})
    if (auto st = write(dir / name, j.dump(1)); !st) return st;
  return {};
}

std::vector<uint8_t> safetensors_header(const SynthHfModel& m, const std::vector<SynthTensorInfo>& tensors) {
  Json h = Json::object();
  h["__metadata__"] = {{"format", "pt"}};
  uint64_t at = 0;
  for (const SynthTensorInfo& t : tensors) {
    h[hf_name(t.gguf_name)] = {
        {"dtype", t.matrix ? m.dtype : "F32"}, {"shape", t.shape}, {"data_offsets", {at, at + t.nbytes}}};
    at += t.nbytes;
  }
  std::string text = h.dump();
  while (text.size() % 8 != 0) text += ' ';
  const uint64_t n = text.size();
  std::vector<uint8_t> out(8 + text.size());
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  return out;
}

void to_hf_rows(const SynthHfModel& m, const SynthTensorInfo& t, std::vector<uint8_t>& data) {
  const bool q = t.gguf_name.ends_with(".attn_q.weight"), k = t.gguf_name.ends_with(".attn_k.weight");
  if (!q && !k) return;
  const int64_t heads = q ? m.n_heads : m.n_kv_heads, head_dim = m.dim / m.n_heads;
  const uint64_t row = t.nbytes / static_cast<uint64_t>(t.shape[0]);
  const std::vector<uint8_t> src(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(t.nbytes));
  // GGUF row (h, 2j + r) holds HF row (h, r * head_dim/2 + j): the converter's permutation, undone.
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t j = 0; j < head_dim / 2; ++j)
      for (int64_t r = 0; r < 2; ++r)
        std::memcpy(data.data() + static_cast<uint64_t>(h * head_dim + r * head_dim / 2 + j) * row,
                    src.data() + static_cast<uint64_t>(h * head_dim + 2 * j + r) * row, row);
}

}  // namespace glass::cli
