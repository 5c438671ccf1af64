// llama.cpp's tokenizer configurations as data: the pre-tokenizer regexes and flags for every
// tokenizer.ggml.pre value (llama_vocab::impl::load and llm_tokenizer_bpe, llama.cpp commit 3f545bec),
// and the pipeline of each GGUF tokenizer model. Where llama.cpp rewrote an HF pattern for its
// std::regex engine, the original HF pattern (kept in llama.cpp's comments) is used here: PCRE2 runs
// it as written, and HF tokenizers is the reference both aim at.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "tokenizer/pipeline.h"
#include "tokenizer/tokenizer.h"

namespace glass::tokenizer {
namespace {

constexpr std::string_view kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr std::string_view kLlama3 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen2 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kGpt4o =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'"
    "ve|'m|'ll|'d)?|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'"
    "ve|'m|'ll|'d)?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kSplitLines = "[^\\n]+|[\\n]+";
// CJK ideographs, Samaritan..CJK, Hangul (deepseek); CJK with kana (deepseek-v3).
constexpr std::string_view kCjk = "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+";
constexpr std::string_view kCjkKana = "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+";
constexpr std::string_view kBloom =
    " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+";

struct PreFamily {
  std::vector<std::string_view> names;
  std::vector<std::string_view> regexes;
  bool byte_encode = true;
  bool ignore_merges = false;
  bool clean_spaces = true;
  bool add_bos = false;
  bool add_sep = false;
};

// One row per llama.cpp LLAMA_VOCAB_PRE_TYPE, with the .pre values that select it.
std::vector<PreFamily> families() {
  return {
      {{"default", ""}, {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
        "jina-v5-nano"},
       {kLlama3},
       true,
       true,
       true,
       true},
      {{"dbrx", "smaug-bpe", "glm4", "chatglm-bpe"}, {kLlama3}},
      {{"jais-2"},
       {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
        "\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|"
        "\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}"}},
      {{"deepseek-llm"},
       {"[\r\n]",
        "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}"
        "\\x{295}-"
        "\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}"
        "\\x{38E}-"
        "\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{"
        "13A0}-"
        "\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{"
        "1D77}"
        "\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{"
        "1F50}-"
        "\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{"
        "1FBE}"
        "\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{"
        "1FF2}-"
        "\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{"
        "2124}"
        "\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{"
        "2149}"
        "\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{"
        "2CF3}"
        "\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{"
        "AB70}-"
        "\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{"
        "1044F}"
        "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{"
        "118DF}"
        "\\x{1E900}-\\x{1E943}]+",
        "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+", "\\s+$",
        kCjk, "\\p{N}+"},
       true,
       false,
       false},
      {{"deepseek-v3", "hunyuan-dense", "joyai-llm"},
       {"\\p{N}{1,3}", kCjkKana,
        "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
        "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"},
       true,
       false,
       false},
      {{"youtu"},
       {"[\\x{AC00}-\\x{D7A3}\\x{3131}-\\x{318E}]+|[\\x{FF01}\\x{2026}\\x{201C}\\x{201D}\\x{2018}\\x{2019}"
        "\\x{2014}"
        "\\x{FF1A}\\x{FF1B}\\x{FF0C}\\x{3001}-\\x{303F}\\x{FE30}-\\x{FE4F}]+|[\\x{3105}-\\x{312F}]+|"
        "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'"
        "re|'ve|'m|'"
        "ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?"
        "i:'s|'t|'re|'"
        "ve|'m|'ll|'d)?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       true,
       true,
       false},
      {{"deepseek-coder"}, {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"}, true, false, false},
      {{"falcon"}, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"}},
      {{"starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"}, {"\\p{N}", kGpt2}},
      {{"command-r", "smollm"}, {"\\p{N}", kGpt2}, true, false, false},
      {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
        "modern-bert", "mpt", "olmo", "jais", "exaone4"},
       {kGpt2}},
      {{"jina-v1-en", "jina-v2-code", "roberta-bpe"}, {kGpt2}, true, false, true, false, true},
      {{"trillion", "granite-docling"}, {kGpt2}, true, false, false},
      {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open", "grok-2"},
       {kQwen2},
       true,
       false,
       false},
      {{"stablelm2", "megrez"}, {kQwen2}},
      {{"qwen35"},
       {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| "
        "?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|"
        "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       true,
       false,
       false},
      {{"poro-chat"}, {kBloom}, true, false, false},
      {{"bloom", "gpt3-finnish"}, {kBloom}},
      {{"viking"}, {kBloom, "\\p{N}"}, true, false, false},
      {{"tekken"},
       {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^"
        "\\r\\n\\p{L}\\p{N}]?"
        "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*"
        "[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       true,
       true,
       false,
       true},
      {{"chameleon"},
       {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
        "[\\p{P}!-/:-@\\[-`{-~]", kGpt2},
       true,
       false,
       false,
       true},
      {{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {kGpt4o}, true, false, false},
      {{"granite-embed-multi-97m"},
       {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?i:'s|'t|'re|'ve|'"
        "m|'ll|'d)?|"
        "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?i:'s|'t|'re|'ve|'"
        "m|'ll|'d)?|"
        "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       true,
       true,
       false},
      {{"tiny_aya", "cohere2moe"},
       {"\\d{1,3}(?=(?:\\d{3})*\\b)",
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'"
        "re|'ve|'m|'"
        "ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?"
        "i:'s|'t|'re|'"
        "ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       true,
       false,
       false},
      {{"superbpe"}, {"\\p{N}+", "(?=(\\d{3})+(?!\\d))"}, true, false, false},
      {{"bailingmoe", "bailingmoe2", "llada-moe"},
       {"'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}| "
        "?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|"
        "\\s+(?!\\S)|\\s+"},
       true,
       false,
       false},
      {{"seed-coder"},
       {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| "
        "?[^\\s\\p{L}\\p{N}\r\n]+|\\s*[\r\n]+|"
        "\\s+(?!\\S)|\\s+"},
       true,
       false,
       false},
      {{"laguna"}, {kSplitLines, kQwen2}, true, false, false},
      {{"exaone-moe"},
       {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"}},
      {{"gemma4", "granite-embed-multi-311m"}, {kSplitLines}, false, false, true, true},
      {{"sarvam-moe"}, {kSplitLines}, false, false, false},
      {{"minicpm5"},
       {"\\p{N}{1,3}",
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
        "\\s+(?!\\S)|\\s+"},
       true,
       true},
      {{"whitespace"}, {"\\S+"}, false},
  };
}

Error invalid(std::string message) { return make_error(ErrorCode::InvalidArgument, "tokenizer: " + message); }

}  // namespace

Result<LlamaPre> llama_pre(std::string_view pre) {
  if (pre == "kimi-k2" || pre == "afmoe") {
    return make_error(ErrorCode::Unsupported,
                      fmt::format("tokenizer: pre-tokenizer '{}' (llama.cpp's hand-written splitter) is not "
                                  "supported",
                                  pre));
  }
  for (const PreFamily& f : families()) {
    if (std::find(f.names.begin(), f.names.end(), pre) == f.names.end()) continue;
    LlamaPre p;
    for (std::string_view r : f.regexes) p.regexes.emplace_back(r);
    p.byte_encode = f.byte_encode;
    p.ignore_merges = f.ignore_merges;
    p.clean_spaces = f.clean_spaces;
    p.add_bos = f.add_bos;
    p.add_sep = f.add_sep;
    return p;
  }
  return make_error(ErrorCode::Unsupported, fmt::format("tokenizer: unknown pre-tokenizer type '{}'", pre));
}

std::vector<std::string> llama_pre_names() {
  std::vector<std::string> names;
  for (const PreFamily& f : families()) names.insert(names.end(), f.names.begin(), f.names.end());
  return names;
}

Result<Pipeline> llama_cpp_pipeline(const Vocab& v) {
  Pipeline p;
  p.flavor = Flavor::LlamaCpp;
  const int32_t n = static_cast<int32_t>(v.tokens.size());
  auto in_range = [n](int32_t id) { return id >= 0 && id < n; };
  if (v.model == "llama") {
    p.model = ModelKind::Spm;
    p.pieces = PieceStyle::Metaspace;
  } else if (v.model == "gpt2" || v.model == "gemma4") {
    Result<LlamaPre> pre = llama_pre(v.model == "gemma4" ? "gemma4" : v.pre);
    if (!pre) return pre.error();
    std::vector<PreTokenizerStep> steps;
    for (const std::string& r : pre->regexes) {
      Result<Regex> re = Regex::compile(r);
      if (!re) return re.error();
      steps.emplace_back(SplitRegex{std::move(re).value(), SplitBehavior::Isolated, false});
    }
    if (pre->byte_encode) {
      Result<ByteLevelSplit> bl = make_byte_level(false, false);
      if (!bl) return bl.error();
      steps.emplace_back(std::move(bl).value());
      p.pieces = PieceStyle::ByteLevel;
    } else {
      p.normalizer = Normalizer({ReplaceText{" ", "\xE2\x96\x81"}});  // llama.cpp's escape_whitespaces
      p.pieces = PieceStyle::Metaspace;
    }
    p.pre_tokenizer = PreTokenizer(std::move(steps));
    p.model = ModelKind::Bpe;
    p.bpe.ignore_merges = pre->ignore_merges;
    p.bpe.llama_cpp = true;
    p.clean_up = pre->clean_spaces ? CleanUp::LlamaCpp : CleanUp::None;
    if (v.merges.empty()) return invalid("a BPE vocabulary needs merges (tokenizer.ggml.merges)");
  } else if (v.model == "bert") {
    p.model = ModelKind::Wpm;
    p.pieces = PieceStyle::Metaspace;
    p.wpm_lowercase = v.normalizer_lowercase;
    p.wpm_strip_accents = v.normalizer_strip_accents;
    p.clean_up = CleanUp::LlamaCpp;
  } else {
    if (Status s = check_supported_model(v.model); !s) return s.error();
    return invalid(fmt::format("model '{}' has no llama.cpp pipeline", v.model));
  }

  // add_special: BOS first when the vocabulary asks for it (WordPiece: always its CLS/BOS), EOS / SEP
  // last (llama_vocab::impl::tokenize).
  if (p.model == ModelKind::Wpm) {
    if (in_range(v.bos_id)) p.prefix.push_back(v.bos_id);
    if (in_range(v.sep_id)) p.suffix.push_back(v.sep_id);
  } else {
    if (v.add_bos && in_range(v.bos_id)) p.prefix.push_back(v.bos_id);  // validation names a missing one
    if (v.add_eos && in_range(v.eos_id)) p.suffix.push_back(v.eos_id);
    if (v.add_sep && in_range(v.sep_id)) p.suffix.push_back(v.sep_id);
  }
  return p;
}

}  // namespace glass::tokenizer
