// GgufShards: a split GGUF's shards found by name and checked against each other; the model file of
// a folder. The format is llama.cpp's gguf-split (examples/gguf-split): shard i is
// PREFIX-{i+1:05}-of-{n:05}.gguf with split.no = i and split.count = n in its metadata.
#include "formats/gguf_shards.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <string>
#include <unordered_map>

#include "formats/gguf_detail.h"

namespace glass::formats {
namespace fs = std::filesystem;
namespace {

Error invalid(const std::string& message) { return make_error(ErrorCode::InvalidFile, "gguf: " + message); }

// All of `s` as a decimal number.
std::optional<uint32_t> parse_number(std::string_view s) {
  uint32_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// How messages name a split set: PREFIX-*-of-00003.gguf.
std::string split_set(const fs::path& prefix, uint32_t count) {
  return fmt::format("{}-*-of-{:05d}.gguf", prefix.string(), count);
}

// `file`'s split keys say it is shard `expect.no` of `expect.count`, as its name does.
Status check_shard(const GgufFile& file, const SplitName& expect) {
  auto count = file.get_u32(kSplitCount);
  if (!count) return count.error();
  if (*count != expect.count)
    return invalid(fmt::format("{}: {} is {}, but the shards of {} are {}", file.path(), kSplitCount, *count,
                               split_set(expect.prefix, expect.count), expect.count));
  auto no = file.get_u32(kSplitNo);
  if (!no) return no.error();
  if (*no != expect.no) {
    const std::string other =
        *no < expect.count
            ? fmt::format(", which is {}'s number", split_path(expect.prefix, *no, expect.count).string())
            : std::string();
    return invalid(fmt::format("{}: {} is {}{}, but its name makes it shard {} of {} ({} {})", file.path(),
                               kSplitNo, *no, other, expect.no + 1, expect.count, kSplitNo, expect.no));
  }
  return {};
}

// The tensors of all shards: each name in one shard only, as many as split.tensors.count says.
Status check_tensors(const std::vector<GgufFile>& shards, const SplitName& split) {
  auto total = shards.front().get_u32(kSplitTensorsCount);
  if (!total) return total.error();
  for (const GgufFile& f : shards)
    if (f.find(kSplitTensorsCount) != nullptr)
      if (auto n = f.get_u32(kSplitTensorsCount); !n || *n != *total)
        return invalid(fmt::format("{}: {} is not {}, the first shard's ({})", f.path(), kSplitTensorsCount,
                                   *total, shards.front().path()));
  std::unordered_map<std::string_view, const GgufFile*> owner;
  uint64_t n = 0;
  for (const GgufFile& f : shards) {
    for (const GgufTensorInfo& t : f.tensors()) {
      const auto [it, fresh] = owner.emplace(t.name, &f);
      if (!fresh)
        return invalid(fmt::format("tensor '{}' is in two shards of {}: {} and {}",
                                   gguf_detail::printable(t.name), split_set(split.prefix, split.count),
                                   it->second->path(), f.path()));
    }
    n += f.tensors().size();
  }
  if (n != *total)
    return invalid(fmt::format("{}: its {} shards hold {} tensors, but {} (in {}) is {}",
                               split_set(split.prefix, split.count), split.count, n, kSplitTensorsCount,
                               shards.front().path(), *total));
  return {};
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

std::optional<SplitName> parse_split_name(const fs::path& path) {
  const std::string name = path.filename().string();
  constexpr std::string_view kExt = ".gguf", kOf = "-of-";
  if (!name.ends_with(kExt)) return std::nullopt;
  const std::string_view stem = std::string_view(name).substr(0, name.size() - kExt.size());
  const size_t of = stem.rfind(kOf);
  if (of == std::string_view::npos || of == 0) return std::nullopt;
  const size_t dash = stem.rfind('-', of - 1);
  if (dash == std::string_view::npos) return std::nullopt;
  const auto number = parse_number(stem.substr(dash + 1, of - dash - 1));
  const auto count = parse_number(stem.substr(of + kOf.size()));
  if (!number || !count || *number == 0 || *number > *count) return std::nullopt;
  SplitName s{path.parent_path() / std::string(stem.substr(0, dash)), *number - 1, *count};
  if (split_path(s.prefix, s.no, s.count).filename() != path.filename()) return std::nullopt;  // 001, +1, ...
  return s;
}

fs::path split_path(const fs::path& prefix, uint32_t no, uint32_t count) {
  return fs::path(prefix).concat(fmt::format("-{:05d}-of-{:05d}.gguf", no + 1, count));
}

Result<GgufShards> GgufShards::open(const fs::path& path) {
  std::error_code ec;
  fs::path file = path;
  if (fs::is_directory(path, ec)) {
    auto found = find_gguf_model(path);
    if (!found) return found.error();
    file = std::move(*found);
  }
  auto given = GgufFile::open(file);
  if (!given) return given.error();
  std::vector<GgufFile> shards;
  if (given->find(kSplitCount) == nullptr) {
    shards.push_back(std::move(*given));
    return GgufShards(std::move(shards));
  }
  auto count = given->get_u32(kSplitCount);
  if (!count) return count.error();
  if (*count <= 1) {  // one file, whatever its split keys say
    shards.push_back(std::move(*given));
    return GgufShards(std::move(shards));
  }
  const auto split = parse_split_name(file);
  if (!split)
    return invalid(
        fmt::format("{}: {} is {}, but the file is not named as a shard (PREFIX-00001-of-{:05d}.gguf): "
                    "glass finds the other shards by their names",
                    file.string(), kSplitCount, *count, *count));
  if (Status st = check_shard(*given, *split); !st) return st.error();
  for (uint32_t k = 0; k < split->count; ++k) {
    if (k == split->no) {
      shards.push_back(std::move(*given));
      continue;
    }
    const fs::path p = split_path(split->prefix, k, split->count);
    if (!fs::exists(p, ec))
      return invalid(fmt::format("{}: shard {} of {} is missing: expected {}",
                                 split_set(split->prefix, split->count), k + 1, split->count, p.string()));
    auto shard = GgufFile::open(p);
    if (!shard) return shard.error();
    if (Status st = check_shard(*shard, SplitName{split->prefix, k, split->count}); !st) return st.error();
    shards.push_back(std::move(*shard));
  }
  if (Status st = check_tensors(shards, *split); !st) return st.error();
  return GgufShards(std::move(shards));
}

std::vector<const GgufTensorInfo*> GgufShards::tensors() const {
  std::vector<const GgufTensorInfo*> all;
  for (const GgufFile& f : shards_)
    for (const GgufTensorInfo& t : f.tensors()) all.push_back(&t);
  return all;
}

std::vector<std::shared_ptr<const MappedFile>> GgufShards::mappings() const {
  std::vector<std::shared_ptr<const MappedFile>> all;
  for (const GgufFile& f : shards_) all.push_back(f.mapping());
  return all;
}

uint64_t GgufShards::file_bytes() const {
  uint64_t n = 0;
  for (const GgufFile& f : shards_) n += f.mapping()->size();
  return n;
}

namespace {

// How far and how wide a folder is searched: hub snapshots keep a model one or two folders down
// (Q4_K_M/, BF16/); a path such as $HOME must not turn into a walk of the disk.
constexpr int kMaxDepth = 4;
constexpr size_t kMaxEntries = 20000;

struct Candidate {
  fs::path path;
  uint32_t no = 0;
};

// The candidates among one folder's files, keyed by their name relative to the searched folder (one
// per unsplit file and per split set, named by its lowest shard present: opening it names any shard
// missing); its subfolders (not hidden, not links) go to `next`.
Status scan_folder(const fs::path& root, const fs::path& folder, std::map<std::string, Candidate>& candidates,
                   std::vector<fs::path>& next, size_t& entries) {
  std::error_code ec;
  fs::directory_iterator it(folder, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (++entries > kMaxEntries)
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("gguf: the folder {} holds more than {} entries within {} levels; pass the "
                      "model file or the folder holding it",
                      root.string(), kMaxEntries, kMaxDepth));
    const fs::path& p = it->path();
    std::error_code kind_ec;
    const std::string file = p.filename().string();
    if (fs::is_directory(p, kind_ec)) {
      if (!file.starts_with(".") && !fs::is_symlink(p, kind_ec)) next.push_back(p);
      continue;
    }
    const std::string name = lower(file);
    if (!name.ends_with(".gguf") || name.find("mmproj") != std::string::npos ||
        !fs::is_regular_file(p, kind_ec))
      continue;
    const fs::path rel = p.lexically_relative(root);
    const auto split = parse_split_name(p);
    if (!split) {
      candidates.try_emplace(rel.string(), Candidate{p, 0});
      continue;
    }
    const auto [c, fresh] = candidates.try_emplace(
        (rel.parent_path() / split_set(split->prefix.filename(), split->count)).string(),
        Candidate{p, split->no});
    if (!fresh && split->no < c->second.no) c->second = Candidate{p, split->no};
  }
  if (ec)
    return make_error(ErrorCode::Io,
                      fmt::format("gguf: cannot list the folder {}: {}", folder.string(), ec.message()));
  return {};
}

}  // namespace

Result<fs::path> find_gguf_model(const fs::path& dir) {
  // Level by level: the shallowest level holding a model decides (a snapshot's top-level file wins
  // over copies in subfolders).
  std::vector<fs::path> level{dir};
  size_t entries = 0;
  for (int depth = 0; depth <= kMaxDepth && !level.empty(); ++depth) {
    std::map<std::string, Candidate> candidates;  // by relative name, for a sorted listing
    std::vector<fs::path> next;
    for (const fs::path& folder : level)
      if (Status st = scan_folder(dir, folder, candidates, next, entries); !st) return st.error();
    if (candidates.size() == 1) return candidates.begin()->second.path;
    if (!candidates.empty()) {
      std::vector<std::string> names;
      for (const auto& [name, c] : candidates) names.push_back(name);
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("gguf: the folder {} holds {} GGUF models ({}): pass the file to load, e.g. {}",
                      dir.string(), candidates.size(), fmt::join(names, ", "),
                      candidates.begin()->second.path.string()));
    }
    level = std::move(next);
  }
  return make_error(
      ErrorCode::InvalidArgument,
      fmt::format("gguf: the folder {} holds no model: no config.json, no *.gguf file within {} "
                  "levels of subfolders (mmproj* vision projectors are not models)",
                  dir.string(), kMaxDepth));
}

}  // namespace glass::formats
