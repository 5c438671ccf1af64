// The public tools API (glass/tools.h, glass/files.h, glass::validate): what the glass command uses
// instead of the modules' internals, called as an outside program would.
#include "glass/tools.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "glass/half.h"
#include "glass/llm.h"
#include "support/fixtures.h"
#include "support/safetensors_writer.h"

namespace glass {
namespace {

std::string bundled() { return (test::source_dir() / "models/stories260K.gguf").string(); }

TEST(PublicSampling, ValidateNamesTheFieldAndValue) {
  EXPECT_TRUE(validate(SamplingConfig{}).ok());
  SamplingConfig c;
  c.top_p = 1.5f;
  Status st = validate(c);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::InvalidArgument);
  EXPECT_NE(st.error().message.find("top_p"), std::string::npos) << st.error().message;

  c = {};
  c.order = {"top_k", "nonsense"};
  st = validate(c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("nonsense"), std::string::npos) << st.error().message;
}

TEST(PublicSampling, TokenIdsAndWindowsWaitForTheModel) {
  SamplingConfig c;
  c.logit_bias = {{100, 1.0f}};
  c.penalty_last_n = -1;                    // the context size
  EXPECT_TRUE(validate(c).ok());            // neither is known yet
  EXPECT_TRUE(validate(c, 101, 64).ok());   // both fit
  EXPECT_FALSE(validate(c, 100, 64).ok());  // id 100 of 100 tokens
  c.logit_bias = {{-1, 1.0f}};
  EXPECT_FALSE(validate(c).ok());  // never an id
  c.logit_bias = {{1, NAN}};
  EXPECT_FALSE(validate(c).ok());                     // a value is checked without a model
  EXPECT_FALSE(validate(SamplingConfig{}, -1).ok());  // a size is never negative
}

TEST(PublicSampling, DescribesTheChain) {
  SamplingConfig c;
  c.seed = 1;
  auto d = describe_sampler_chain(c, 8, 0);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(*d, "top_k -> top_p -> min_p -> temperature -> dist");
  EXPECT_FALSE(describe_sampler_chain(c, 0, 0).ok());
}

TEST(PublicTools, KernelTiersBestFirstScalarAlwaysRuns) {
  const auto tiers = cpu_kernel_tiers();
  ASSERT_EQ(tiers.size(), 4u);
  EXPECT_EQ(tiers[0].name, "avx512bf16");
  EXPECT_EQ(tiers[1].name, "avx512");
  EXPECT_EQ(tiers[2].name, "avx2");
  EXPECT_EQ(tiers[3].name, "scalar");
  EXPECT_TRUE(tiers[3].runs_here);
  for (size_t i = 0; i + 1 < tiers.size(); ++i)
    if (tiers[i].runs_here) {
      EXPECT_TRUE(tiers[i + 1].runs_here) << tiers[i].name;
    }
}

TEST(PublicTools, ReadBandwidth) {
  auto bw = measure_read_bandwidth(size_t{4} << 20, 1, 1);
  ASSERT_TRUE(bw.ok()) << bw.error().message;
  EXPECT_GE(bw->bytes, size_t{4} << 20);
  EXPECT_EQ(bw->passes, 1);
  EXPECT_EQ(bw->n_threads, 1);
  EXPECT_GT(bw->best_gbs, 0.0);
  EXPECT_NE(bw->checksum, 0u);
}

TEST(PublicTools, QuantizeTypesAndErrors) {
  const auto names = quantize_type_names();
  for (const char* t : {"q4_0", "q8_0", "q4_k_m", "f16"})
    EXPECT_NE(std::find(names.begin(), names.end(), t), names.end()) << t;
  QuantizeOptions o;
  o.type = "q9_z";
  auto r = quantize_model(bundled(), (test::make_temp_dir("public_quantize") / "out.gguf").string(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument);
  EXPECT_NE(r.error().message.find("unknown type 'q9_z'"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("q4_k_m"), std::string::npos) << r.error().message;
}

TEST(PublicTools, QuantizesAGguf) {
  // stories260K's FFN rows (172) fit no quantized block: f16 converts every matrix.
  const auto out = test::make_temp_dir("public_quantize_ok") / "f16.gguf";
  QuantizeOptions o;
  o.type = "f16";
  o.n_threads = 2;
  size_t seen = 0;
  o.on_tensor = [&](const QuantizedTensorInfo&) { ++seen; };
  auto r = quantize_model(bundled(), out.string(), o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->type, "f16");
  EXPECT_LT(r->bytes_out, r->bytes_in);
  EXPECT_EQ(seen, r->tensors.size());
  EXPECT_EQ(r->n_threads, 2);
  EXPECT_GT(r->bytes_out, 0u);
  EXPECT_TRUE(load_llm(out.string(), {.backend = "ref"}).ok());
}

TEST(PublicTools, TokenizerAlone) {
  auto tok = TextTokenizer::load(bundled());
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  auto model = load_llm(bundled(), {.backend = "ref"});
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto ids = (*tok)->tokenize("Once upon a time");
  ASSERT_TRUE(ids.ok()) << ids.error().message;
  EXPECT_EQ(*ids, *(*model)->tokenize("Once upon a time"));
  EXPECT_EQ((*tok)->vocab_size(), (*model)->info().vocab_size);
  auto text = (*tok)->detokenize(*ids);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_NE(text->find("Once upon a time"), std::string::npos) << *text;
  const int32_t out_of_range = static_cast<int32_t>((*tok)->vocab_size());
  auto bad = (*tok)->detokenize(std::vector<int32_t>{out_of_range});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::InvalidArgument);

  auto missing = TextTokenizer::load("/nonexistent/model.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/model.gguf"), std::string::npos)
      << missing.error().message;
}

TEST(PublicTools, ChatTemplateRenderedAlone) {
  const std::string tmpl =
      "{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
      "{% if add_generation_prompt %}assistant:{% endif %}";
  const std::string context =
      R"({"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": true})";
  ChatTemplateRender r;
  r.variables = {{"bos_token", "<s>"}};
  auto text = render_chat_template(tmpl, context, r);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, "<s>user: hi\nassistant:");
  r.overrides_json = R"({"bos_token": "[B]"})";
  text = render_chat_template(tmpl, context, r);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, "[B]user: hi\nassistant:");

  auto bad = render_chat_template(tmpl, "{not json", r);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("context"), std::string::npos) << bad.error().message;
  r.overrides_json = "[1]";
  bad = render_chat_template(tmpl, context, r);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("overrides"), std::string::npos) << bad.error().message;
}

TEST(PublicTools, ChatTemplateFromAnHfDirectory) {
  const auto dir = test::make_temp_dir("public_chat_template");
  test::write_text(dir / "tokenizer_config.json",
                   R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>", "chat_template": "T"})");
  auto src = load_chat_template(dir.string());
  ASSERT_TRUE(src.ok()) << src.error().message;
  EXPECT_EQ(src->text, "T");
  const std::vector<std::pair<std::string, std::string>> vars = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  EXPECT_EQ(src->variables, vars);
  test::write_text(dir / "chat_template.jinja", "J");  // transformers prefers the file
  src = load_chat_template((dir / "tokenizer.json").string());
  ASSERT_TRUE(src.ok()) << src.error().message;
  EXPECT_EQ(src->text, "J");

  const auto empty = test::make_temp_dir("public_chat_template_none");
  auto none = load_chat_template(empty.string());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("has no chat template"), std::string::npos) << none.error().message;
}

TEST(PublicFiles, NpyRoundTripAndBoundedReads) {
  const auto dir = test::make_temp_dir("public_files");
  const std::vector<float> data = {1.0f, -2.5f, 3.25f, 0.0f, 5.0f, 6.0f};
  ASSERT_TRUE(write_npy_f32(dir / "a.npy", data.data(), {2, 3}).ok());
  auto a = read_npy_f32(dir / "a.npy");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->data, data);

  auto out = OutputFile::create(dir / "b.txt", "test");
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_TRUE(out->write("hello", 5).ok());
  ASSERT_TRUE(out->commit().ok());
  auto text = read_file_bounded(dir / "b.txt", kMaxTextFileBytes, "test");
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, "hello");
  auto big = read_file_bounded(dir / "b.txt", 4, "test");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, ErrorCode::CapacityExceeded);

  EXPECT_TRUE(check_json_depth("[[1]]", "t", 2).ok());
  EXPECT_FALSE(check_json_depth("[[[1]]]", "t", 2).ok());
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.5f)), 1.5f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(-2.0f)), -2.0f);
}

}  // namespace
}  // namespace glass
