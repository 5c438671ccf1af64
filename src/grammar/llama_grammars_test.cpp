// llama.cpp's grammars/ folder (testdata/gbnf, unchanged) parse, and accept and reject strings as
// their syntax says.
#include <gtest/gtest.h>

#include "core/read_file.h"
#include "grammar/automaton.h"
#include "grammar/gbnf.h"
#include "grammar/matches_test_support.h"
#include "support/fixtures.h"

namespace glass::grammar {
namespace {

using support::matches;

struct Case {
  const char* file;
  std::vector<std::string> accept, reject;
};

TEST(LlamaGrammars, AcceptAndReject) {
  const std::vector<Case> cases = {
      {"arithmetic",
       {"1+2=3\n", "x*(y +2)=z\n", "a=b\nc=d\n", "foo_1/2=3\n"},
       {"1+2=3", "=3\n", "1++2=3\n", "A=1\n", "(1=2\n"}},
      {"c",
       {"", "int main(){return 0;}", "int f(int x){x = x+1;return x;}",
        "float g(){while(a<b){a = a+1;}if(a==b){return a;}else{return b;}}", "char h(){// hi\n}",
        "int k(){/* a * b */for(i = 0; i<10; i = i+1){f (i);}}"},
       {"int main(){return 0}", "int main{}", "main(){}", "int f(){x = ;}", "int f(){/* open }"}},
      {"chess",
       {"1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n3. O-O Qxd8+\n", "1. e8=Q Kh1#\n10. a1 h8\n"},
       {"1. e4 e5\n", "1. e9 e5\n2. a1 a2\n", "2. e4 e5\n3. a1 a2\n", "1. e4 e5\n0. a1 a2\n",
        "1. Zf3 e5\n2. a1 a2\n"}},
      {"json",
       {"{}", "{\"a\": 1}", "{\"a\":[1, 2.5, -3e12, true, false, null], \"b\": {\"c\": \"x\\n\\u00e9\"}}",
        "{ \"k\" : \"é\" }\n", "{\"x\":-0.5E+12}"},
       {"[]", "{\"a\":}", "{\"a\" 1}", "{a: 1}", "{\"a\": 01}", "{\"a\": \"\x01\"}", "{\"a\": \"\\x\"}",
        "{\"a\": 1,}", "{\"a\": tru}"}},
      {"json_arr", {"[\n]", "[\n1,\n\"a\",\n{\"b\": [1, 2]}]", "[\n true]"}, {"[]", "[1]", "[\n1,]", "{}"}},
      {"list", {"- a\n", "- milk\n- eggs\n"}, {"", "- \n", "- a", "* a\n", "- a\r\n"}},
      {"japanese",
       {"こんにちは", "カタカナ ひらがな\n漢字。", "日本語"},
       {"", "hello", "こんにちは ", " こんにちは", "日本a"}},
  };
  for (const Case& c : cases) {
    const auto path = test::source_dir() / "src/grammar/testdata/gbnf" / (std::string(c.file) + ".gbnf");
    auto text = read_file_bounded(path, kMaxTextFileBytes, "grammar test");
    ASSERT_TRUE(text.ok()) << path;
    auto g = compile_gbnf(*text);
    ASSERT_TRUE(g.ok()) << c.file << ": " << g.error().message;
    for (const std::string& s : c.accept) EXPECT_TRUE(matches(*g, s)) << c.file << " should accept: " << s;
    for (const std::string& s : c.reject) EXPECT_FALSE(matches(*g, s)) << c.file << " should reject: " << s;
  }
}

}  // namespace
}  // namespace glass::grammar
