// Safetensors and the files beside it in an HF directory. The first byte chooses the reader:
//   0: a safetensors file (header length, JSON header, dtypes, shapes, data offsets);
//   1: config.json [separator generation_config.json] (formats/hf_config.h), its typed getters and
//      the family adapter's mapping to GGUF keys (models/hf.h) with the hyper-parameter checks;
//   2: model.safetensors.index.json, checked against two small shards this harness writes once.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "formats/safetensors_checkpoint.h"
#include "fuzz_input.h"
#include "models/hf.h"
#include "models/hparam_bounds.h"

using namespace glass;

namespace {

// A safetensors file of F32 tensors of 2 elements each, named `names`.
std::string tiny_shard(const std::vector<std::string>& names) {
  std::string header = "{";
  size_t offset = 0;
  for (const std::string& n : names) {
    if (header.size() > 1) header += ",";
    header += "\"" + n + "\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[" + std::to_string(offset) +
              "," + std::to_string(offset + 8) + "]}";
    offset += 8;
  }
  header += "}";
  std::string out(8, '\0');
  uint64_t len = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>(len >> (8 * i));
  return out + header + std::string(offset, '\0');
}

// The per-process folder holding the shards and the index under test, removed when the process
// exits (libFuzzer's -max_total_time and -runs end with exit(); a crash leaves it for the repro).
std::filesystem::path& checkpoint_path() {
  static std::filesystem::path path;
  return path;
}
void remove_checkpoint_dir() {
  std::error_code ec;
  std::filesystem::remove_all(checkpoint_path(), ec);
}
const std::filesystem::path& checkpoint_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("glass-fuzz-st-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    checkpoint_path() = d;
    std::atexit(remove_checkpoint_dir);
    std::ofstream(d / "model-00001-of-00002.safetensors", std::ios::binary)
        << tiny_shard({"model.embed_tokens.weight", "model.norm.weight"});
    std::ofstream(d / "model-00002-of-00002.safetensors", std::ios::binary) << tiny_shard({"lm_head.weight"});
    return d;
  }();
  return dir;
}

void config(std::string_view text) {
  const auto [config_json, generation_json] =
      fuzz::split2(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  auto c = formats::HfConfig::parse(config_json, generation_json, "fuzz");
  if (!c.ok()) return;
  (void)c->eos_token_ids();
  (void)c->bos_token_id();
  for (const char* key : {"hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"})
    (void)c->config().get_int(key);
  (void)c->config().get_float("rope_theta");
  // config.json -> the GGUF keys the family's from_gguf reads, then its hyper-parameter checks and
  // graph build (which fails at the first weight: this harness has none).
  const models::Architecture* arch = models::find_architecture_for_model_type(c->model_type());
  if (arch == nullptr) return;
  const models::HfAdapter* adapter = models::find_hf_adapter(arch->name);
  if (adapter == nullptr) return;
  // As open_hf_model does with the checkpoint: a fuzz input stands for a 4 MiB one of 64 tensors.
  if (!models::check_hf_config_fits(*c, uint64_t{1} << 20, 64).ok()) return;
  models::HfNormalized normalized;
  if (!adapter->normalize(*c, normalized).ok()) return;
  auto metadata = normalized.metadata.build("fuzz/config.json");
  if (!metadata.ok()) return;
  models::BuildOptions build;
  build.n_ctx = 64;
  (void)arch->from_gguf(*metadata, models::WeightIndex{}, build);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 3) {
    case 0: {
      auto mapped =
          formats::MappedFile::from_bytes("fuzz.safetensors", std::vector<uint8_t>(data + 1, data + size));
      (void)formats::SafetensorsFile::parse(mapped);
      break;
    }
    case 1:
      config(rest);
      break;
    default: {
      const auto index = checkpoint_dir() / formats::kSafetensorsIndex;
      std::ofstream(index, std::ios::binary | std::ios::trunc) << rest;
      (void)formats::SafetensorsCheckpoint::open_index(index);
      break;
    }
  }
  return 0;
}
