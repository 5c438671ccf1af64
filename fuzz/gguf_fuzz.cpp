// GGUF: header, metadata, tensor directory (formats/gguf.h), every value printed, then what loading
// a model does with a file that parses: the vocabulary and tokenizer from tokenizer.ggml.*, the
// architecture's hyper-parameters and its graph built against the tensor directory. No weight is
// read: the graph is only built, as load_llm does before compiling.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "formats/gguf.h"
#include "formats/gguf_vocab.h"
#include "models/architecture.h"
#include "tokenizer/tokenizer.h"

using namespace glass;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto mapped = formats::MappedFile::from_bytes("fuzz.gguf", std::vector<uint8_t>(data, data + size));
  auto file = formats::GgufFile::parse(mapped);
  if (!file.ok()) return 0;
  for (const auto& [key, value] : file->metadata()) (void)formats::gguf_value_to_string(value);
  if (auto vocab = formats::vocab_from_gguf(*file); vocab.ok()) {
    if (auto tok = tokenizer::Tokenizer::create(std::move(*vocab)); tok.ok()) {
      auto ids = tok->encode("Hello world <s>\n 123", true, true);
      if (ids.ok()) (void)tok->decode(*ids, true);
    }
  }
  auto arch_name = file->get_string("general.architecture");
  if (!arch_name.ok()) return 0;
  const models::Architecture* arch = models::find_architecture(*arch_name);
  if (arch == nullptr) return 0;
  models::WeightIndex weights;
  for (const formats::GgufTensorInfo& t : file->tensors())
    weights.emplace(t.name, models::WeightInfo{t.shape, t.dtype, t.data});
  // A small context, as a caller choosing -c would (the graph's cache sizes are symbols a session
  // binds; nothing here may follow the file's claimed context length).
  models::BuildOptions build;
  build.n_ctx = 64;
  (void)arch->from_gguf(*file, weights, build);
  return 0;
}
