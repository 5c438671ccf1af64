// llama.cpp's per-tensor type rules (src/llama-quant.cpp: tensor_allows_quantization,
// llama_tensor_get_type_impl, tensor_type_fallback), for the file types glass writes. The rules
// count attn_v and ffn_down tensors as they go, so tensors are visited in llama.cpp's order: by
// layer number (tensors outside blk.N first), then by name.
#include "formats/quant_mix.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <numeric>

namespace glass::formats {
namespace {

using graph::DType;

const std::vector<FileTypeInfo>& table() {
  static const std::vector<FileTypeInfo> kTable = {
      {FileType::AllF32, "f32", DType::F32, "all F32"},
      {FileType::F16, "f16", DType::F16, "F16"},
      {FileType::BF16, "bf16", DType::BF16, "BF16"},
      {FileType::Q8_0, "q8_0", DType::Q8_0, "Q8_0"},
      {FileType::Q4_0, "q4_0", DType::Q4_0, "Q4_0"},
      {FileType::Q4_1, "q4_1", DType::Q4_1, "Q4_1"},
      {FileType::Q5_0, "q5_0", DType::Q5_0, "Q5_0"},
      {FileType::Q5_1, "q5_1", DType::Q5_1, "Q5_1"},
      {FileType::Q2_K, "q2_k", DType::Q2_K, "Q2_K - Medium"},
      {FileType::Q3_K_S, "q3_k_s", DType::Q3_K, "Q3_K - Small"},
      {FileType::Q3_K_M, "q3_k_m", DType::Q3_K, "Q3_K - Medium"},
      {FileType::Q3_K_L, "q3_k_l", DType::Q3_K, "Q3_K - Large"},
      {FileType::Q4_K_S, "q4_k_s", DType::Q4_K, "Q4_K - Small"},
      {FileType::Q4_K_M, "q4_k_m", DType::Q4_K, "Q4_K - Medium"},
      {FileType::Q5_K_S, "q5_k_s", DType::Q5_K, "Q5_K - Small"},
      {FileType::Q5_K_M, "q5_k_m", DType::Q5_K, "Q5_K - Medium"},
      {FileType::Q6_K, "q6_k", DType::Q6_K, "Q6_K"},
      {FileType::IQ4_NL, "iq4_nl", DType::IQ4_NL, "IQ4_NL - 4.5 bpw"},
      {FileType::IQ4_XS, "iq4_xs", DType::IQ4_XS, "IQ4_XS - 4.25 bpw"},
      {FileType::MXFP4_MOE, "mxfp4_moe", DType::MXFP4, "MXFP4 MoE"},
  };
  return kTable;
}

enum class Category {
  Output,
  TokenEmbd,
  AttnQkv,
  AttnKvB,
  AttnV,
  AttnK,
  AttnQ,
  AttnOutput,
  FfnUp,
  FfnGate,
  FfnDown,
  Other
};

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// Broad roles by name, first match wins (llama.cpp's tensor_get_category).
Category category_of(std::string_view name) {
  if (name == "output.weight") return Category::Output;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::TokenEmbd;
  struct Rule {
    std::string_view part;
    Category category;
  };
  static constexpr Rule kRules[] = {
      {"attn_qkv.weight", Category::AttnQkv},
      {"attn_kv_b.weight", Category::AttnKvB},
      {"attn_v.weight", Category::AttnV},
      {"attn_k.weight", Category::AttnK},
      {"attn_q.weight", Category::AttnQ},
      {"attn_output.weight", Category::AttnOutput},
      {"ffn_up", Category::FfnUp},
      {"ffn_gate", Category::FfnGate},
      {"ffn_down", Category::FfnDown},
  };
  for (const Rule& r : kRules)
    if (contains(name, r.part)) return r.category;
  return Category::Other;
}

bool is_attn_v_like(Category c) {
  return c == Category::AttnV || c == Category::AttnQkv || c == Category::AttnKvB;
}

// ggml's dimension count: trailing (outermost) dimensions of 1 do not count.
int ggml_dims(const std::vector<int64_t>& shape) {
  int n = static_cast<int>(shape.size());
  while (n > 1 && shape[static_cast<size_t>(shape.size() - static_cast<size_t>(n))] == 1) --n;
  return n;
}

// llama.cpp's tensor_allows_quantization: 2-D and 3-D weights, except norms, small or special
// tensors of various architectures (routers, convolutions, position and token-type embeddings).
bool allows_quantization(const MixTensor& t) {
  if (ggml_dims(t.shape) < 2) return false;
  const std::string_view name = t.name;
  if (name.size() < 6 || name.substr(name.size() - 6) != "weight") return false;
  if (name == "position_embd.weight" || name == "token_types.weight") return false;
  static constexpr std::string_view kExcluded[] = {
      "_norm.weight",
      "ffn_gate_inp.weight",
      "ffn_gate_tid2eid.weight",
      "altup",
      "laurel",
      "per_layer_model_proj",
      "ssm_conv1d",
      "shortconv.conv.weight",
      "indexer.k_proj.weight",
      "indexer.q_proj.weight",
      "time_mix_first.weight",
      "time_mix_w0.weight",
      "time_mix_w1.weight",
      "time_mix_w2.weight",
      "time_mix_v0.weight",
      "time_mix_v1.weight",
      "time_mix_v2.weight",
      "time_mix_a0.weight",
      "time_mix_a1.weight",
      "time_mix_a2.weight",
      "time_mix_g1.weight",
      "time_mix_g2.weight",
      "time_mix_decay_w1.weight",
      "time_mix_decay_w2.weight",
      "time_mix_lerp_fused.weight",
      "attn_rel_b.weight",
      ".position_embd",
      "sam.pos_embd",
      "sam.neck.",
      "sam.net_",
      ".rel_pos",
      ".patch_embd",
      ".patch_merger",
      "a.rvq.codebook",
      "mm.a.code_embd",
  };
  for (std::string_view part : kExcluded)
    if (contains(name, part)) return false;
  return true;
}

// The N of "blk.N." (as sscanf("blk.%d.") reads it), or -1.
int layer_of(std::string_view name) {
  if (name.substr(0, 4) != "blk.") return -1;
  size_t i = 4;
  bool negative = false;
  if (i < name.size() && (name[i] == '-' || name[i] == '+')) negative = name[i++] == '-';
  int64_t v = 0;
  const size_t start = i;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) && v < (1 << 24))
    v = v * 10 + (name[i++] - '0');
  if (i == start) return -1;
  return static_cast<int>(negative ? -v : v);
}

// llama.cpp spends more bits on the first and last eighth of the layers and every third between.
bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

struct Counters {
  int64_t n_attn_v = 0, i_attn_v = 0;
  int64_t n_ffn = 0, i_ffn_down = 0, i_ffn_gate = 0, i_ffn_up = 0;
  bool tied = true;  // no output.weight: token_embd doubles as the LM head
};

// The layer a per-layer rule is about: the running count, or for mixture-of-experts models (whose
// expert tensors are not one per layer) the number in the name.
Result<int64_t> layer_for(const MixModel& m, int64_t counter, const std::string& name) {
  if (m.n_experts <= 1) return counter;
  const int layer = layer_of(name);
  if (layer < 0 || layer >= m.n_layers)
    return make_error(
        ErrorCode::InvalidFile,
        fmt::format("quantize: tensor '{}': no layer number in [0, {}) in its name", name, m.n_layers));
  return static_cast<int64_t>(layer);
}

// llama_tensor_get_type_impl for the K-quant, legacy and 4-bit i-quant file types.
Result<DType> mix_type(const MixModel& m, Counters& c, const MixTensor& t, Category cat, FileType ft,
                       DType type) {
  using F = FileType;
  const bool falcon = m.arch == "falcon";
  const int64_t n_gqa = m.n_kv_heads > 0 ? m.n_heads / m.n_kv_heads : 0;
  // llama.cpp's LLM_TYPE_70B (llama with 80 layers and GQA): its attn_v is 8x smaller than attn_q.
  const bool is_70b = m.arch == "llama" && m.n_layers == 80 && m.n_heads != m.n_kv_heads;
  const bool iq4 = ft == F::IQ4_NL || ft == F::IQ4_XS;
  if (cat == Category::Output || (c.tied && cat == Category::TokenEmbd)) {
    if (ft == F::MXFP4_MOE) return DType::Q8_0;
    if (falcon || t.shape.back() % graph::traits(type).block_size != 0) return DType::Q8_0;
    return type != DType::Q8_0 ? DType::Q6_K : type;
  }
  if (ft == F::MXFP4_MOE) {  // the experts (3-D, several) MXFP4, every other matrix Q8_0
    const bool experts = t.shape.size() >= 3 && t.shape[t.shape.size() - 3] > 1;
    const bool expert_role = cat == Category::FfnUp || cat == Category::FfnGate || cat == Category::FfnDown;
    return experts && (m.arch != "bailingmoe3" || expert_role) ? DType::MXFP4 : DType::Q8_0;
  }
  if (cat == Category::TokenEmbd) return type;
  if (is_attn_v_like(cat)) {
    if (ft == F::Q2_K) {
      type = n_gqa >= 4 ? DType::Q4_K : DType::Q3_K;
    } else if (ft == F::Q3_K_M) {
      type = c.i_attn_v < 2 ? DType::Q5_K : DType::Q4_K;
    } else if (ft == F::Q3_K_L) {
      type = DType::Q5_K;
    } else if (iq4 && n_gqa >= 4) {
      type = DType::Q5_K;
    } else if ((ft == F::Q4_K_M || ft == F::Q5_K_M) && use_more_bits(c.i_attn_v, c.n_attn_v)) {
      type = DType::Q6_K;
    } else if (ft == F::Q4_K_S && c.i_attn_v < 4) {
      type = DType::Q5_K;
    }
    if (is_70b && (type == DType::Q3_K || type == DType::Q4_K)) type = DType::Q5_K;
    if (m.n_experts == 8) type = DType::Q8_0;
    ++c.i_attn_v;
    return type;
  }
  if (cat == Category::AttnK) return m.n_experts == 8 ? DType::Q8_0 : type;
  if (cat == Category::FfnDown) {
    auto layer = layer_for(m, c.i_ffn_down, t.name);
    if (!layer.ok()) return layer.error();
    const int64_t i = *layer, n = c.n_ffn;
    if (ft == F::Q2_K) {
      type = DType::Q3_K;
    } else if (ft == F::Q3_K_M) {
      type = i < n / 16 ? DType::Q5_K : (!falcon || use_more_bits(i, n)) ? DType::Q4_K : DType::Q3_K;
    } else if (ft == F::Q3_K_L) {
      type = falcon ? DType::Q4_K : DType::Q5_K;
    } else if (ft == F::Q4_K_M) {
      if (falcon) {
        type = i < n / 16 ? DType::Q6_K : use_more_bits(i, n) ? DType::Q5_K : DType::Q4_K;
      } else if (use_more_bits(i, n)) {
        type = DType::Q6_K;
      }
    } else if (iq4 && i < n / 8) {  // llama.cpp: only without an importance matrix (glass has none yet)
      type = DType::Q5_K;
    } else if (ft == F::Q5_K_M && use_more_bits(i, n)) {
      type = DType::Q6_K;
    } else if (ft == F::Q4_K_S && !falcon && i < n / 8) {
      type = DType::Q5_K;
    }
    ++c.i_ffn_down;
    return type;
  }
  if (cat == Category::AttnOutput) {
    if (falcon) return ft == F::Q3_K_L ? DType::Q4_K : type;
    if (m.n_experts == 8) {
      const bool raise =
          ft == F::Q2_K || ft == F::Q3_K_S || ft == F::Q3_K_M || ft == F::Q4_K_S || ft == F::Q4_K_M || iq4;
      return raise ? DType::Q5_K : type;
    }
    if (ft == F::Q2_K) return DType::Q3_K;
    if (ft == F::Q3_K_M) return DType::Q4_K;
    if (ft == F::Q3_K_L) return DType::Q5_K;
    return type;
  }
  if (cat == Category::FfnGate || cat == Category::FfnUp) {
    int64_t& counter = cat == Category::FfnGate ? c.i_ffn_gate : c.i_ffn_up;
    auto layer = layer_for(m, counter, t.name);  // only validates here: no rule for these file types
    if (!layer.ok()) return layer.error();
    ++counter;
  }
  return type;
}

// llama.cpp's tensor_type_fallback: the K-types and IQ4_XS need rows of 256; the fallback has 32-blocks.
Result<DType> fallback(const MixTensor& t, DType type, std::string& note) {
  const int64_t ncols = t.shape.back();
  if (ncols % graph::traits(type).block_size == 0) return type;
  DType to = type;
  switch (type) {
    case DType::Q2_K:
    case DType::Q3_K:
      to = DType::Q4_0;
      break;
    case DType::Q4_K:
      to = DType::Q5_0;
      break;
    case DType::Q5_K:
      to = DType::Q5_1;
      break;
    case DType::Q6_K:
      to = DType::Q8_0;
      break;
    case DType::IQ4_XS:
      to = DType::IQ4_NL;
      break;
    default:
      return make_error(
          ErrorCode::Unsupported,
          fmt::format("quantize: tensor '{}': rows of {} are not a multiple of {}'s block of {}, and "
                      "there is no fallback for {} (llama-quantize refuses this too)",
                      t.name, ncols, graph::dtype_name(type), graph::traits(type).block_size,
                      graph::dtype_name(type)));
  }
  if (ncols % graph::traits(to).block_size != 0) to = DType::F16;
  note = fmt::format("rows of {} not divisible by {} ({}): falling back to {}", ncols,
                     graph::traits(type).block_size, graph::dtype_name(type), graph::dtype_name(to));
  return to;
}

}  // namespace

const std::vector<FileTypeInfo>& file_types() { return table(); }

const FileTypeInfo& file_type_info(FileType ftype) {
  for (const FileTypeInfo& i : table())
    if (i.ftype == ftype) return i;
  return table().front();  // unreachable for the enum's values
}

std::optional<FileType> file_type_from_name(std::string_view name) {
  std::string lower(name);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower == "q3_k") return FileType::Q3_K_M;
  if (lower == "q4_k") return FileType::Q4_K_M;
  if (lower == "q5_k") return FileType::Q5_K_M;
  for (const FileTypeInfo& i : table())
    if (i.name == lower) return i.ftype;
  return std::nullopt;
}

Result<std::vector<TypeChoice>> choose_types(const MixModel& model, const std::vector<MixTensor>& tensors,
                                             FileType ftype, bool pure) {
  const DType base = file_type_info(ftype).base;
  Counters c;
  c.n_ffn = model.n_layers;
  for (const MixTensor& t : tensors) {
    const Category cat = category_of(t.name);
    if (is_attn_v_like(cat)) ++c.n_attn_v;
    if (cat == Category::Output) c.tied = false;
  }
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
    return la != lb ? la < lb : tensors[a].name < tensors[b].name;
  });
  std::vector<TypeChoice> out(tensors.size());
  for (size_t i : order) {
    const MixTensor& t = tensors[i];
    TypeChoice& choice = out[i];
    choice.quantizable = allows_quantization(t);
    if (!choice.quantizable) {
      choice.dtype = t.dtype;
      continue;
    }
    if (!graph::traits(base).quantized) {
      choice.dtype = base;
      continue;
    }
    DType type = base;
    if (!pure) {
      auto mixed = mix_type(model, c, t, category_of(t.name), ftype, base);
      if (!mixed.ok()) return mixed.error();
      type = *mixed;
    }
    auto fitted = fallback(t, type, choice.fallback);
    if (!fitted.ok()) return fitted.error();
    choice.dtype = *fitted;
  }
  return out;
}

}  // namespace glass::formats
