// HF directory -> GGUF (see hf_to_gguf.h): the checkpoint opened and checked as for loading, its
// metadata merged with the tokenizer's keys, its tensors listed in GGUF order, then the quantize
// machinery writes them.
#include "models/hf_to_gguf.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "formats/hf_gguf_vocab.h"
#include "models/hf.h"

namespace glass::models {
namespace {

// The adapter's metadata, general.name, then the tokenizer's keys; the adapter's tokenizer ids
// (from config.json) only where the tokenizer names none, as convert_hf_to_gguf.py does.
Result<formats::GgufFile> metadata(const std::filesystem::path& dir, const formats::GgufFile& adapter,
                                   int64_t n_vocab) {
  auto files = formats::read_hf_tokenizer_files(dir);
  if (!files) return files.error();
  formats::GgufMetadataBuilder tok;
  if (Status s = formats::hf_tokenizer_to_gguf(*files, n_vocab, tok); !s) return s.error();
  formats::GgufMetadataBuilder m;
  for (const auto& [key, value] : adapter.metadata())
    if (!key.starts_with("tokenizer.")) m.value(key, value);
  if (!m.has("general.name")) {
    const std::filesystem::path name = dir.filename().empty() ? dir.parent_path().filename() : dir.filename();
    m.string("general.name", name.string());
  }
  auto tokenizer = tok.build(files->where);
  if (!tokenizer) return tokenizer.error();
  for (const auto& [key, value] : tokenizer->metadata()) m.value(key, value);
  for (const auto& [key, value] : adapter.metadata())
    if (key.starts_with("tokenizer.") && tokenizer->find(key) == nullptr) m.value(key, value);
  return m.build((dir / "config.json").string());
}

Result<int64_t> positive(const formats::GgufFile& f, const std::string& key) {
  auto v = f.get_u32(key);
  if (!v) return v.error();
  if (*v == 0)
    return make_error(ErrorCode::InvalidFile, fmt::format("hf to gguf: {}: {} is 0", f.path(), key));
  return static_cast<int64_t>(*v);
}

// The row order of attn_q / attn_k in GGUF.
Result<std::vector<int64_t>> qk_rows(const formats::GgufFile& f, const std::string& arch, const WeightInfo& w,
                                     bool k, const std::string& name) {
  auto heads = positive(f, arch + (k ? ".attention.head_count_kv" : ".attention.head_count"));
  if (!heads) return heads.error();
  auto n_rot = positive(f, arch + ".rope.dimension_count");
  if (!n_rot) return n_rot.error();
  const int64_t rows = w.shape.front();
  if (w.shape.size() != 2 || rows % *heads != 0 || *n_rot > rows / *heads || *n_rot % 2 != 0)
    return make_error(
        ErrorCode::InvalidFile,
        fmt::format("hf to gguf: tensor '{}' has {} rows, not {} heads of at least {} rotated rows", name,
                    rows, *heads, *n_rot));
  return rope_rows_hf_to_gguf(*heads, rows / *heads, *n_rot);
}

}  // namespace

std::vector<int64_t> rope_rows_hf_to_gguf(int64_t n_heads, int64_t head_dim, int64_t n_rot) {
  // HF rotates dim i with dim i + n_rot/2; GGUF rotates 2i with 2i + 1.
  std::vector<int64_t> rows(static_cast<size_t>(n_heads * head_dim));
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t r = 0; r < head_dim; ++r)
      rows[static_cast<size_t>(h * head_dim + r)] =
          h * head_dim + (r < n_rot ? (r % 2) * (n_rot / 2) + r / 2 : r);
  return rows;
}

Result<formats::QuantizeReport> hf_to_gguf(const std::filesystem::path& dir, const std::filesystem::path& out,
                                           const formats::QuantizeOptions& options) {
  auto hf = open_hf_model(dir);
  if (!hf) return hf.error();
  const std::string arch(hf->arch->name);
  const HfAdapter* adapter = find_hf_adapter(arch);  // open_hf_model found it
  const auto embd = hf->weights.find("token_embd.weight");
  if (embd == hf->weights.end() || embd->second.shape.empty())
    return make_error(ErrorCode::InvalidFile,
                      fmt::format("hf to gguf: {}: no token embedding (token_embd.weight)", dir.string()));
  auto meta = metadata(dir, *hf->metadata, embd->second.shape.front());
  if (!meta) return meta.error();
  if (adapter->gguf_writable != nullptr)
    if (Status st = adapter->gguf_writable(*meta); !st) return st.error();

  // llama.cpp's loader order (weight_name_comparer): model-wide tensors, then layer by layer, by
  // name within each. llama-quantize writes that order, so quantizing this file's F32/F16/BF16 form
  // with it gives the same bytes as converting straight to the quantized type.
  std::vector<std::string> names;
  for (const auto& entry : hf->weights) names.push_back(entry.first);
  std::stable_sort(names.begin(), names.end(), formats::llama_loader_order);

  std::vector<formats::SourceTensor> tensors;
  for (const std::string& name : names) {
    const WeightInfo& w = hf->weights.find(name)->second;
    formats::SourceTensor t{name, w.shape, w.dtype, w.data, {}};
    const bool q = name.ends_with(".attn_q.weight"), k = name.ends_with(".attn_k.weight");
    if (adapter->gguf_permutes_qk && (q || k)) {
      auto rows = qk_rows(*meta, arch, w, k, name);
      if (!rows) return rows.error();
      t.row_map = std::move(*rows);
    }
    tensors.push_back(std::move(t));
  }
  auto report = formats::quantize_tensors(*meta, tensors, 32, out, options, /*kept_as_f32=*/true);
  if (!report) return report.error();
  report->bytes_in = hf->file_bytes;
  return report;
}

}  // namespace glass::models
