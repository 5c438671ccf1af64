// Single-file and sharded safetensors checkpoints (see safetensors_checkpoint.h).
#include "formats/safetensors_checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/read_file.h"
#include "formats/gguf_detail.h"
#include "formats/json_strict.h"

namespace glass::formats {
namespace {

// Bounded and regular files only (core/read_file.h): an index is a few hundred KB at most.
Result<std::string> read_text(const std::filesystem::path& path) {
  return read_file_bounded(path, kMaxTextFileBytes, "safetensors");
}

// A shard name from the index must stay inside the checkpoint directory.
bool plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
}

std::string quoted(const std::string& s) { return fmt::format("'{}'", gguf_detail::printable(s)); }

}  // namespace

uint64_t SafetensorsCheckpoint::file_bytes() const {
  uint64_t n = 0;
  for (const SafetensorsFile& f : shards_) n += f.file_size();
  return n;
}

Result<SafetensorsCheckpoint> SafetensorsCheckpoint::open(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(dir / kSafetensorsSingle, ec)) {
    auto f = SafetensorsFile::open(dir / kSafetensorsSingle);
    if (!f) return f.error();
    SafetensorsCheckpoint c;
    c.shards_.push_back(std::move(*f));
    for (const SafetensorsTensor& t : c.shards_.front().tensors()) c.tensors_.emplace(t.name, &t);
    return c;
  }
  if (std::filesystem::is_regular_file(dir / kSafetensorsIndex, ec))
    return open_index(dir / kSafetensorsIndex);
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors") found.push_back(e.path().filename().string());
  std::sort(found.begin(), found.end());
  if (found.empty())
    return make_error(
        ErrorCode::InvalidFile,
        fmt::format("{}: directory has config.json but no *.safetensors (glass reads safetensors "
                    "weights only; pytorch_model.bin pickles are not read)",
                    dir.string()));
  return make_error(ErrorCode::InvalidFile,
                    fmt::format("{}: directory has {} but neither {} nor {}", dir.string(),
                                fmt::join(found, ", "), kSafetensorsSingle, kSafetensorsIndex));
}

Result<SafetensorsCheckpoint> SafetensorsCheckpoint::open_index(const std::filesystem::path& index) {
  const std::string where = "safetensors: " + index.string();
  auto bad = [&](const std::string& what) { return make_error(ErrorCode::InvalidFile, where + ": " + what); };
  auto text = read_text(index);
  if (!text) return text.error();
  auto j = parse_json_strict(*text, where);
  if (!j) return j.error();  // a tensor listed twice in weight_map is a repeated key, named there
  if (!j->is_object()) return bad("not a JSON object");
  const auto wm = j->find("weight_map");
  if (wm == j->end() || !wm->is_object()) return bad("'weight_map' is missing or not an object");

  // weight_map: tensor -> shard, shard names checked.
  std::map<std::string, std::string> listed;
  std::set<std::string> shard_names;
  for (const auto& [name, shard] : wm->items()) {
    if (!shard.is_string()) return bad(fmt::format("weight_map[{}] is not a string", quoted(name)));
    const std::string s = shard.get<std::string>();
    if (!plain_file_name(s))
      return bad(fmt::format("weight_map[{}] = {} is not a plain file name in the checkpoint directory",
                             quoted(name), quoted(s)));
    listed.emplace(name, s);
    shard_names.insert(s);
  }
  if (listed.empty()) return bad("'weight_map' lists no tensors");

  const std::filesystem::path dir = index.parent_path();
  std::vector<std::string> missing_shards;
  std::error_code ec;
  for (const std::string& s : shard_names)
    if (!std::filesystem::is_regular_file(dir / s, ec)) missing_shards.push_back(s);
  if (!missing_shards.empty())
    return bad(fmt::format("{} of {} shard files named by weight_map are missing: {}", missing_shards.size(),
                           shard_names.size(), fmt::join(missing_shards, ", ")));

  SafetensorsCheckpoint c;
  c.shards_.reserve(shard_names.size());  // tensors_ points into the shards: no reallocation
  std::map<std::string, size_t> shard_index;
  for (const std::string& s : shard_names) {
    auto f = SafetensorsFile::open(dir / s);
    if (!f) return f.error();
    shard_index.emplace(s, c.shards_.size());
    c.shards_.push_back(std::move(*f));
  }

  // Coverage, every problem collected before reporting.
  std::vector<std::string> problems;
  std::map<std::string, std::string> stored_in;  // tensor -> first shard holding it
  for (const SafetensorsFile& f : c.shards_) {
    const std::string shard = std::filesystem::path(f.path()).filename().string();
    for (const SafetensorsTensor& t : f.tensors()) {
      const auto [it, fresh] = stored_in.emplace(t.name, shard);
      if (!fresh) {
        problems.push_back(
            fmt::format("{} is stored twice, in {} and {}", quoted(t.name), it->second, shard));
        continue;
      }
      const auto l = listed.find(t.name);
      if (l == listed.end()) {
        problems.push_back(fmt::format("{} in {} is not listed in weight_map", quoted(t.name), shard));
      } else if (l->second != shard) {
        problems.push_back(
            fmt::format("{} is in {} but weight_map says {}", quoted(t.name), shard, l->second));
      } else {
        c.tensors_.emplace(t.name, &t);
      }
    }
  }
  uint64_t total = 0;
  for (const auto& [name, shard] : listed) {
    if (stored_in.count(name) == 0) {
      problems.push_back(fmt::format("{} is listed for {} but no shard holds it", quoted(name), shard));
      continue;
    }
    const SafetensorsTensor* t = c.shards_[shard_index.at(shard)].find(name);
    if (t != nullptr) total += t->nbytes;
  }
  if (!problems.empty())
    return bad(fmt::format("weight_map and shards disagree ({} problems): {}", problems.size(),
                           fmt::join(problems, "; ")));

  // metadata.total_size: the bytes of all tensors, as transformers writes it.
  if (const auto meta = j->find("metadata"); meta != j->end() && !meta->is_null()) {
    if (!meta->is_object()) return bad("'metadata' is not an object");
    if (const auto ts = meta->find("total_size"); ts != meta->end()) {
      // Some writers store it as a float (1171200.0): accept any exact non-negative integer value.
      const bool integral =
          ts->is_number_unsigned() ||
          (ts->is_number_float() && ts->get<double>() >= 0 && ts->get<double>() < 1.8e19 &&
           ts->get<double>() == static_cast<double>(static_cast<uint64_t>(ts->get<double>())));
      if (!integral)
        return bad(fmt::format("metadata.total_size = {} is not a non-negative integer", ts->dump()));
      const uint64_t claimed =
          ts->is_number_unsigned() ? ts->get<uint64_t>() : static_cast<uint64_t>(ts->get<double>());
      if (claimed != total)
        return bad(
            fmt::format("metadata.total_size is {} but the listed tensors hold {} bytes", claimed, total));
    }
  }
  return c;
}

}  // namespace glass::formats
