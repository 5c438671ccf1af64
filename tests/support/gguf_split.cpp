#include "support/gguf_split.h"

#include <gtest/gtest.h>

#include "formats/gguf.h"
#include "formats/gguf_shards.h"
#include "formats/gguf_writer.h"
#include "support/fixtures.h"

namespace glass::test {
namespace {

formats::GgufValue integer(formats::GgufValueType type, int64_t v) {
  formats::GgufValue x;
  x.type = type;
  if (type == formats::GgufValueType::I32)
    x.i64 = v;
  else
    x.u64 = static_cast<uint64_t>(v);
  return x;
}

}  // namespace

std::vector<std::filesystem::path> write_gguf_split(const std::filesystem::path& in,
                                                    const std::filesystem::path& prefix,
                                                    const SplitSpec& spec) {
  auto file = formats::GgufFile::open(in);
  EXPECT_TRUE(file.ok()) << file.error().message;
  if (!file.ok()) return {};
  const auto& tensors = file->tensors();
  const auto n = static_cast<uint32_t>(spec.starts.size());
  std::vector<std::filesystem::path> paths;
  for (uint32_t i = 0; i < n; ++i) {
    std::vector<std::pair<std::string, formats::GgufValue>> meta;
    if (i == 0) meta = file->metadata();
    if (i > 0)
      if (const formats::GgufValue* a = file->find("general.alignment"))
        meta.emplace_back("general.alignment", *a);
    const auto get = [](const std::map<uint32_t, uint32_t>& m, uint32_t k, uint32_t v) {
      const auto it = m.find(k);
      return it == m.end() ? v : it->second;
    };
    meta.emplace_back("split.no", integer(formats::GgufValueType::U16, get(spec.split_no, i, i)));
    meta.emplace_back("split.count", integer(formats::GgufValueType::U16, get(spec.split_count, i, n)));
    meta.emplace_back("split.tensors.count",
                      integer(formats::GgufValueType::I32,
                              spec.tensors_count.value_or(static_cast<int32_t>(tensors.size()))));
    std::vector<const formats::GgufTensorInfo*> mine;
    const size_t end = i + 1 < n ? spec.starts[i + 1] : tensors.size();
    for (size_t t = spec.starts[i]; t < end; ++t) mine.push_back(&tensors[t]);
    if (const auto it = spec.also.find(i); it != spec.also.end())
      mine.push_back(file->find_tensor(it->second));
    std::vector<formats::GgufTensorSpec> specs;
    for (const auto* t : mine) specs.push_back({t->name, t->shape, t->dtype});
    paths.push_back(formats::split_path(prefix, i, n));
    auto w = formats::GgufWriter::create(paths.back(), meta, std::move(specs), file->alignment());
    EXPECT_TRUE(w.ok()) << w.error().message;
    if (!w.ok()) return {};
    for (const auto* t : mine) EXPECT_TRUE(w->write(t->data, t->nbytes).ok());
    EXPECT_TRUE(w->finish().ok());
  }
  return paths;
}

std::filesystem::path stories260k() { return source_dir() / "models" / "stories260K.gguf"; }

}  // namespace glass::test
