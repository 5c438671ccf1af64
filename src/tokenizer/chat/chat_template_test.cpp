// Unit tests of the chat-template engine: whitespace control, loops, macros and scopes, Python value
// semantics, errors with their line:column, unsupported constructs, limits on work and memory, and
// the context helpers. Expected texts are what Python Jinja2 3.1.6 renders with transformers' setup.
#include "tokenizer/chat/chat_template.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support/counting_new.h"

namespace glass::tokenizer::chat {
namespace {

using json = nlohmann::ordered_json;

Result<std::string> render(std::string_view source, const json& vars = json::object(),
                           RenderOptions opt = {}) {
  auto t = ChatTemplate::parse(source);
  if (!t) return t.error();
  if (!opt.clock) {
    const std::tm now = *parse_datetime("2026-01-01T00:00:00");
    opt.clock = [now] { return now; };
  }
  return t->render(vars, opt);
}

// Renders and expects success; the error message otherwise, so failures read well.
std::string ok(std::string_view source, const json& vars = json::object(), RenderOptions opt = {}) {
  auto r = render(source, vars, std::move(opt));
  return r ? *r : "ERROR: " + r.error().message;
}

TEST(ChatTemplate, WhitespaceControl) {
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before it goes.
  EXPECT_EQ(ok("a\n  {% if true %}\n  b\n  {% endif %}\nc"), "a\n  b\nc");
  // "-" strips all whitespace on that side, newlines included; "+" keeps it.
  EXPECT_EQ(ok("a\n  {%- if true -%}\n  b\n  {%- endif %}\nc"), "abc");
  EXPECT_EQ(ok("x\n  {%+ if true %}y{% endif +%}\nz"), "x\n  y\nz");
  // Expression tags are not trimmed: only "-" affects them.
  EXPECT_EQ(ok("  {{ 1 }}\n  {{- 2 -}}  \n3"), "  123");
  // Comments are blocks for trimming; one trailing newline of the template is dropped.
  EXPECT_EQ(ok("x  {# c #}\n  y\n\t{# c2 #}  \nz\n"), "x    y\n  \nz");
  // CRLF and lone CR are newlines.
  EXPECT_EQ(ok("{% if true %}\r\nwin\r\n{% endif %}\r\n"), "win\n");
  EXPECT_EQ(ok("{% raw %}{{ not rendered }}{% endraw %}"), "{{ not rendered }}");
}

TEST(ChatTemplate, LoopsMacrosAndScopes) {
  // A set inside a loop body does not leak out (Jinja scoping); namespace() carries state out.
  EXPECT_EQ(ok("{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = i + 5 %}{{ x }}{% endfor %}{{ x }}"),
            "16171");
  EXPECT_EQ(ok("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ "
               "ns.n }}"),
            "6");
  EXPECT_EQ(ok("{% for x in [1, 2, 3] %}{% if x == 2 %}{% continue %}{% endif %}{{ x }}{% endfor %}"), "13");
  EXPECT_EQ(ok("{% for x in [1, 2, 3] %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}"), "1");
  EXPECT_EQ(ok("{% for x in [] %}{{ x }}{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(
      ok("{% for x in [3, 4] %}{{ loop.index }}/{{ loop.length }}{{ ',' if not loop.last }}{% endfor %}"),
      "1/2,2/2");
  EXPECT_EQ(ok("{% macro m(a, b=2) %}{{ a }}{{ b }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1) }}|{{ m(1, "
               "3, 4, c=5) }}"),
            "12(){}|13(4,){'c': 5}");
  EXPECT_EQ(ok("{% macro w() %}[{{ caller(7) }}]{% endmacro %}{% call(x) w() %}<{{ x }}>{% endcall %}"),
            "[<7>]");
  EXPECT_EQ(ok("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"),
            "321");
  EXPECT_EQ(ok("{% filter upper %}a{{ 'b' }}{% endfilter %}"), "AB");
  EXPECT_EQ(ok("{% set x | trim %}  padded  {% endset %}[{{ x }}]"), "[padded]");
  EXPECT_EQ(ok("{% for x in [[1, [2]], 3] recursive %}{% if x is iterable %}({{ loop(x) }}){% else %}{{ x "
               "}}{% endif %}{% endfor %}"),
            "(1(2))3");
}

TEST(ChatTemplate, PythonValueSemantics) {
  const json vars = {{"t", {{"type", "function"}, {"ok", true}, {"none", nullptr}, {"x", 1.5}}}};
  // `| string` is Python's str(dict): single quotes, True/None, insertion order kept.
  EXPECT_EQ(ok("{{ t | string }}", vars), "{'type': 'function', 'ok': True, 'none': None, 'x': 1.5}");
  // transformers' tojson: no HTML escaping, non-ASCII kept, Python's separators and indent.
  EXPECT_EQ(ok("{{ {'a': '<é>', 'b': [1, 2.0]} | tojson }}"), "{\"a\": \"<é>\", \"b\": [1, 2.0]}");
  EXPECT_EQ(ok("{{ {'a': [1]} | tojson(indent=2) }}"), "{\n  \"a\": [\n    1\n  ]\n}");
  EXPECT_EQ(ok("{{ none | trim }}"), "None");
  EXPECT_EQ(ok("{{ 'a</think>b</think>c'.split('</think>')[-1] }}"), "c");
  EXPECT_EQ(ok("{{ [1, 2, 3][::-1] }}{{ 'abc'[1:] }}"), "[3, 2, 1]bc");
  EXPECT_EQ(ok("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ -7 % 3 }}"), "3 -4 3.5 1024 2");
  EXPECT_EQ(ok("{{ 1e16 }} {{ 1e15 }} {{ 0.1 + 0.2 }} {{ 1e-5 }}"),
            "1e+16 1000000000000000.0 0.30000000000000004 1e-05");
  EXPECT_EQ(ok("{{ x is defined }} {{ none is none }} {{ 'a' is string }} {{ true is number }} {{ {} is "
               "mapping }}"),
            "False True True True True");
  EXPECT_EQ(ok("{{ [].append }}|{{ missing }}|{{ missing is undefined }}"), "||True");
}

TEST(ChatTemplate, ClockIsInjectable) {
  RenderOptions opt;
  opt.clock = [] { return *parse_datetime("2024-07-26T13:05:09"); };
  EXPECT_EQ(ok("{{ strftime_now('%d %b %Y|%Y-%m-%d %H:%M:%S|%A %B') }}", json::object(), opt),
            "26 Jul 2024|2024-07-26 13:05:09|Friday July");
  // Without a clock the system time is used: some date renders.
  auto t = ChatTemplate::parse("{{ strftime_now('%Y') }}");
  ASSERT_TRUE(t);
  auto r = t->render(json::object());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->size(), 4u);
}

TEST(ChatTemplate, RaiseExceptionNamesLineAndColumn) {
  auto r = render("line one\n{% if true %}\n  {{ raise_exception('Roles must alternate') }}\n{% endif %}");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument);
  EXPECT_EQ(r.error().message, "chat template:3:6: TemplateError: Roles must alternate");
}

TEST(ChatTemplate, RuntimeErrorsArePythonErrorsWithLocations) {
  const json vars = {{"messages", json::array({{{"role", "user"}, {"content", nullptr}}})}};
  auto concat = render("{{ 'x' +\n  messages[0].content }}", vars);
  ASSERT_FALSE(concat);
  EXPECT_EQ(concat.error().message,
            "chat template:1:8: TypeError: can only concatenate str (not \"NoneType\") to str");
  auto in = render("{% if '</think>' in messages[0].content %}{% endif %}", vars);
  ASSERT_FALSE(in);
  EXPECT_EQ(in.error().message, "chat template:1:32: TypeError: argument of type 'NoneType' is not iterable");
  auto undef = render("{{ nope.attr }}");
  ASSERT_FALSE(undef);
  EXPECT_EQ(undef.error().message, "chat template:1:8: UndefinedError: 'nope' is undefined");
  // The immutable sandbox refuses mutation, as transformers' environment does.
  auto append = render("{% set l = [] %}{{ l.append(1) }}");
  ASSERT_FALSE(append);
  EXPECT_EQ(append.error().message,
            "chat template:1:20: SecurityError: access to attribute 'append' of 'list' object is unsafe.");
}

TEST(ChatTemplate, SyntaxErrorsFailAtParse) {
  auto expect_parse_error = [](std::string_view src, ErrorCode code, const std::string& message) {
    auto t = ChatTemplate::parse(src);
    ASSERT_FALSE(t) << src;
    EXPECT_EQ(t.error().code, code) << src;
    EXPECT_EQ(t.error().message, message) << src;
  };
  expect_parse_error(
      "{% if x %}\n  {% endfor %}", ErrorCode::InvalidArgument,
      "chat template:2:6: syntax error: unexpected 'endfor', expected 'endif' (the 'if' tag opened at 1:1)");
  expect_parse_error("ok\n{% for m in messages %}", ErrorCode::InvalidArgument,
                     "chat template:2:1: syntax error: 'for' tag is never closed (expected 'endfor')");
  expect_parse_error("{{ 'unterminated }}", ErrorCode::InvalidArgument,
                     "chat template:1:4: syntax error: unterminated string literal");
  expect_parse_error("{{ a }\n", ErrorCode::InvalidArgument,
                     "chat template:1:6: syntax error: unexpected '}'");
  expect_parse_error("{% break %}", ErrorCode::InvalidArgument,
                     "chat template:1:1: syntax error: 'break' outside loop");
  expect_parse_error("{{ x | no_such_filter }}", ErrorCode::InvalidArgument,
                     "chat template:1:6: unknown filter 'no_such_filter'");
  expect_parse_error("{{ x is no_such_test }}", ErrorCode::InvalidArgument,
                     "chat template:1:6: unknown test 'no_such_test'");
  expect_parse_error(
      "{% macro m(a=1, b) %}{% endmacro %}", ErrorCode::InvalidArgument,
      "chat template:1:17: syntax error: parameter 'b' without a default follows one with a default");
}

TEST(ChatTemplate, UnsupportedConstructsFailNamingThem) {
  // Never a silent fallback: the construct and its line:column are named, at parse time, even in a
  // branch that a given conversation would not take.
  auto filter = ChatTemplate::parse("{% if false %}\n  {{ x | pprint }}\n{% endif %}");
  ASSERT_FALSE(filter);
  EXPECT_EQ(filter.error().code, ErrorCode::Unsupported);
  EXPECT_EQ(filter.error().message, "chat template:2:8: unsupported: filter 'pprint'");
  auto include = ChatTemplate::parse("a\n{% include 'other.jinja' %}");
  ASSERT_FALSE(include);
  EXPECT_EQ(include.error().code, ErrorCode::Unsupported);
  EXPECT_EQ(include.error().message, "chat template:2:1: unsupported: the '{% include %}' tag");
  auto do_tag = ChatTemplate::parse("{% do x %}");
  ASSERT_FALSE(do_tag);
  EXPECT_EQ(do_tag.error().code, ErrorCode::Unsupported);
}

TEST(ChatTemplate, UnknownFiltersFailWhereJinjaFails) {
  // Directly inside an if (or an inline if), Jinja compiles an unknown filter or test and fails only
  // when that branch runs; anywhere else it fails at compile time. glass does the same.
  EXPECT_EQ(ok("{% if false %}{{ x | from_json }}{% endif %}ok"), "ok");
  auto taken = render("{% if true %}\n{{ x | from_json }}{% endif %}");
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().message,
            "chat template:2:6: TemplateRuntimeError: No filter named 'from_json' found.");
  auto in_loop =
      ChatTemplate::parse("{% if false %}{% for m in x %}{{ m | from_json }}{% endfor %}{% endif %}");
  ASSERT_FALSE(in_loop);
  EXPECT_EQ(in_loop.error().message, "chat template:1:36: unknown filter 'from_json'");
  EXPECT_EQ(ok("{{ 'a' if true else x is custom_test }}"), "a");
}

// Small limits keep these fast under sanitizers; the defaults are far larger.
RenderOptions small_limits() {
  RenderOptions o;
  o.limits.max_steps = 20000;
  o.limits.max_string_bytes = 1 << 16;
  o.limits.max_items = 1 << 12;
  o.limits.max_call_depth = 32;
  return o;
}

TEST(ChatTemplate, EndlessLoopsHitTheStepBudget) {
  auto r = render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                  json::object(), small_limits());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::CapacityExceeded);
  EXPECT_NE(r.error().message.find("rendering took more than 20000 steps"), std::string::npos)
      << r.error().message;
  // Exponential recursion within the depth limit is also stopped by the budget.
  auto fib =
      render("{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}{{ f(30) }}",
             json::object(), small_limits());
  ASSERT_FALSE(fib);
  EXPECT_EQ(fib.error().code, ErrorCode::CapacityExceeded);
}

// Issue 29: each step of a loop may work on a string near the size limit (upper, ~, replace,
// comparisons, methods); such steps pay for the bytes they read and write, so the step budget bounds
// time. Without that, `'x' * 8000000` upper-cased 100000 times ran for hours under the default limits.
TEST(ChatTemplate, LargeOperandsPayForTheirSize) {
  const std::string big = "{% set s = 'x' * 60000 %}";
  for (const char* body :
       {"{% set t = s | upper %}", "{% set t = s ~ 'y' %}", "{% set t = s.replace('x', 'y') %}",
        "{% set t = s.count('x') %}", "{% if s == s %}{% endif %}", "{% set t = s[1:] %}",
        "{% set t = s is string %}", "{% set t = s + 'y' %}"}) {
    const std::string src = big + "{% for i in range(2000) %}" + body + "{% endfor %}";
    auto r = render(src, json::object(), small_limits());
    ASSERT_FALSE(r) << body;
    EXPECT_NE(r.error().message.find("rendering took more than 20000 steps"), std::string::npos)
        << body << ": " << r.error().message;
  }
  // The same loops over a short string stay well within the budget.
  auto small = render(
      "{% set s = 'xyz' %}{% for i in range(2000) %}{% set t = s | upper %}{% set u = s ~ 'y' %}"
      "{% if loop.last %}{{ t }}{{ u }}{% endif %}{% endfor %}",
      json::object(), small_limits());
  ASSERT_TRUE(small) << small.error().message;
  EXPECT_EQ(*small, "XYZxyzy");
}

// A finished loop's items are freed then, not when the render ends: each inner loop of a nested
// pair kept its list alive (100 inner loops over range(100000) held 224 MB under the default
// limits). A loop object the template keeps (in a namespace) stays whole.
TEST(ChatTemplate, FinishedLoopsFreeTheirItems) {
  const auto before = static_cast<int64_t>(test::live_bytes());
  test::reset_peak_bytes();
  auto r = render("{% for i in range(60) %}{% for j in range(20000) %}{% endfor %}{% endfor %}done");
  const int64_t peak = static_cast<int64_t>(test::peak_bytes()) - before;
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "done");
  EXPECT_LE(peak, int64_t{8} << 20) << "peak " << peak << " bytes: the inner lists were kept";
  EXPECT_EQ(ok("{% set ns = namespace(l=none) %}{% for i in range(3) %}{% set ns.l = loop %}{% endfor %}"
               "{{ ns.l.length }} {{ ns.l.last }}"),
            "3 True");
}

// Steps bound the work a render does, not what it keeps: a list of 1 MB strings grown one per
// iteration held ~170 MB when the step budget ran out. What the render's strings, lists and dicts
// hold at once is bounded too, while a long conversation (what the context holds is not the
// render's) renders whole.
TEST(ChatTemplate, WhatARenderKeepsAliveIsBounded) {
  for (std::string_view src :
       {"{% set s = 'x' * 1000000 %}{% set ns = namespace(l=[]) %}{% for i in range(100000) %}"
        "{% set ns.l = ns.l + [s ~ i] %}{% endfor %}{{ ns.l | length }}",
        "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + ['y' * 1000000] %}"
        "{% endfor %}",
        "{% set ns = namespace(d={}) %}{% for i in range(100000) %}{% set ns.d = dict(ns.d, **{('k' ~ i): "
        "'z' * 300000}) %}{% endfor %}"}) {
    const auto before = static_cast<int64_t>(test::live_bytes());
    test::reset_peak_bytes();
    auto r = render(src);
    const int64_t peak = static_cast<int64_t>(test::peak_bytes()) - before;
    ASSERT_FALSE(r) << src;
    EXPECT_EQ(r.error().code, ErrorCode::CapacityExceeded);
    EXPECT_NE(
        r.error().message.find("the strings and lists made while rendering hold more than 33554432 bytes"),
        std::string::npos)
        << r.error().message;
    EXPECT_LE(peak, int64_t{64} << 20) << src;
  }
  // Twelve messages of 1 MB, each trimmed, split and joined again: the output is 12 MB.
  json messages = json::array();
  for (int i = 0; i < 12; ++i)
    messages.push_back({{"role", "user"}, {"content", std::string(1000000, 'a' + i)}});
  auto r = render(
      "{% for m in messages %}{% set c = m.content | trim %}{{ m.role }}: {{ c.split('q') | join('q') }}\n"
      "{% endfor %}",
      {{"messages", messages}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->size(), 12u * (1000000 + 7));
}

TEST(ChatTemplate, RecursionIsBounded) {
  auto r = render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", json::object(), small_limits());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::CapacityExceeded);
  EXPECT_EQ(r.error().message,
            "chat template:1:1: macro calls nested deeper than 32 (a recursive macro?) in 'f'");
  auto loop = render("{% for x in l recursive %}{{ loop(l) }}{% endfor %}", {{"l", {1}}}, small_limits());
  ASSERT_FALSE(loop);
  EXPECT_EQ(loop.error().code, ErrorCode::CapacityExceeded);
  // However deep the blocks inside each call, the stack used is bounded.
  std::string nested = "{% macro f(n) %}";
  for (int i = 0; i < 40; ++i) nested += "{% if true %}";
  nested += "{{ f(n) }}";
  for (int i = 0; i < 40; ++i) nested += "{% endif %}";
  RenderOptions tight = small_limits();
  tight.limits.max_stack_bytes = 64 << 10;
  auto stack = render(nested + "{% endmacro %}{{ f(1) }}", json::object(), tight);
  ASSERT_FALSE(stack);
  EXPECT_EQ(stack.error().code, ErrorCode::CapacityExceeded);
  EXPECT_NE(stack.error().message.find("bytes of stack"), std::string::npos) << stack.error().message;
  // With the default limits too, on the real stack.
  auto deep = render(
      "{% macro f(n) %}{% if n %}{% for i in [1] %}{{ f(n) }}{% endfor %}{% endif %}{% endmacro %}{{ f(1) "
      "}}");
  ASSERT_FALSE(deep);
  EXPECT_EQ(deep.error().code, ErrorCode::CapacityExceeded);
}

// Lists that hold one list twice, doubled 60 times: 61 lists in memory, 2^61 values for a
// comparison, a repr or a sort to walk. Charged by their tree size, each is an error in bounded time,
// not an endless walk; the same lists at a small size still compare and print.
TEST(ChatTemplate, SharedElementsAreChargedAtEveryDepth) {
  auto with = [&](int n, const std::string& use) {
    return render("{% set ns = namespace(a=[0], b=[0]) %}{% for i in range(" + std::to_string(n) +
                      ") %}{% set ns.a = [ns.a, ns.a] %}{% set ns.b = [ns.b, ns.b] %}{% endfor %}" + use,
                  json::object());
  };
  for (const std::string use :
       {"{{ ns.a == ns.b }}", "{{ ns.a < ns.b }}", "{{ ns.a in [ns.b] }}",
        "{{ [ns.a, ns.b] | unique | list | length }}", "{{ ns.a | string | length }}"}) {
    auto big = with(60, use);
    ASSERT_FALSE(big) << use;
    EXPECT_EQ(big.error().code, ErrorCode::CapacityExceeded) << use;
    EXPECT_NE(big.error().message.find("steps"), std::string::npos) << use << ": " << big.error().message;
  }
  auto small = with(3, "{{ ns.a == ns.b }} {{ ns.a < ns.b }} {{ ns.a }}");
  ASSERT_TRUE(small) << small.error().message;
  EXPECT_EQ(*small, "True False [[[[0], [0]], [[0], [0]]], [[[0], [0]], [[0], [0]]]]");
}

TEST(ChatTemplate, MemoryIsBounded) {
  const char* doubling =
      "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}";
  auto str = render(doubling, json::object(), small_limits());
  ASSERT_FALSE(str);
  EXPECT_EQ(str.error().code, ErrorCode::CapacityExceeded);
  auto list = render(
      "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
      json::object(), small_limits());
  ASSERT_FALSE(list);
  EXPECT_EQ(list.error().code, ErrorCode::CapacityExceeded);
  auto repeat = render("{{ 'x' * 10 ** 15 }}");
  ASSERT_FALSE(repeat);
  EXPECT_EQ(repeat.error().code, ErrorCode::CapacityExceeded);
  auto range = render("{{ range(10 ** 9) | length }}");
  ASSERT_FALSE(range);
  EXPECT_NE(range.error().message.find("OverflowError: Range too big"), std::string::npos);
  auto output =
      render("{% for i in range(1000) %}{{ 'x' * 1000 }}{% endfor %}", json::object(), small_limits());
  ASSERT_FALSE(output);
  EXPECT_EQ(output.error().code, ErrorCode::CapacityExceeded);
  // Values nested without bound would make every recursive walk (and destruction) overflow.
  auto nested =
      render("{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}{% endfor %}");
  ASSERT_FALSE(nested);
  EXPECT_EQ(nested.error().code, ErrorCode::CapacityExceeded);
  // A namespace that contains itself is fine to build, print and free.
  EXPECT_EQ(
      ok("{% set ns = namespace() %}{% set ns.me = ns %}{% set ns.l = [ns] %}{{ ns.me.me.l | length }}"),
      "1");
  auto cyclic = render("{% set ns = namespace() %}{% set ns.a = ns %}{% set ns.b = ns %}{{ ns }}",
                       json::object(), small_limits());
  ASSERT_FALSE(cyclic);
  EXPECT_EQ(cyclic.error().code, ErrorCode::CapacityExceeded);
}

// Found by hand: sequences made from a string were not counted against max_items. With the default
// limits a 10 MB string split into 10M strings took 1.2 GB, a 16 MB one listed 1.5 GB, batched 3.2 GB,
// made unique 2.8 GB (15 s); a loop over it 1.8 GB. Each is refused before the items are made.
TEST(ChatTemplate, SequencesAndFiltersOverStringsAreBounded) {
  for (const char* t :
       {"{{ ('x' * 5000).split('x') | length }}", "{{ ('x ' * 5000).split() | length }}",
        "{{ ('x' * 5000).rsplit('x', 10 ** 12) | length }}", "{{ ('x\n' * 5000).splitlines() | length }}",
        "{{ ('x' * 5000) | list | length }}", "{{ ('x' * 5000) | batch(1) | list | length }}",
        "{{ ('x' * 5000) | unique | list | length }}", "{{ ('x' * 5000) | reverse | list | length }}",
        "{% for c in 'x' * 5000 %}{% endfor %}", "{{ dict('x' * 5000) }}", "{% set a, b = 'x' * 5000 %}"}) {
    auto r = render(t, json::object(), small_limits());
    ASSERT_FALSE(r) << t;
    EXPECT_EQ(r.error().code, ErrorCode::CapacityExceeded) << t;
    EXPECT_NE(r.error().message.find("exceeds the limit of 4096"), std::string::npos)
        << t << ": " << r.error().message;
  }
  // A filter map / select apply to each item is charged by size as one written in the template is
  // (mapping upper over [16 MB string] * 1000 made 16 GB for 1000 steps).
  auto mapped = render("{% set s = 'x' * 60000 %}{{ ([s] * 100) | map('upper') | list | length }}",
                       json::object(), small_limits());
  ASSERT_FALSE(mapped);
  EXPECT_NE(mapped.error().message.find("rendering took more than 20000 steps"), std::string::npos)
      << mapped.error().message;
  EXPECT_EQ(render("{% set s = 'x' * 600 %}{{ ([s] * 100) | map('upper') | list | length }}", json::object(),
                   small_limits())
                .value(),
            "100");
  // Sort / min / max / unique keys are folded and compared: charged by size ([1 MB string] * 1000
  // sorted lowered 1 GB for 250 steps).
  for (const char* t : {"{% set s = 'x' * 60000 %}{{ ([s] * 100) | sort | length }}",
                        "{% set s = 'x' * 60000 %}{{ ([s] * 100) | max | length }}",
                        "{% set s = 'x' * 60000 %}{{ ([s] * 100) | unique | list | length }}"}) {
    auto r = render(t, json::object(), small_limits());
    ASSERT_FALSE(r) << t;
    EXPECT_NE(r.error().message.find("rendering took more than 20000 steps"), std::string::npos) << t;
  }
  // unique() looks scalars up (100k distinct ones took 21 s) and charges each comparison of the rest.
  EXPECT_EQ(ok("{{ [1, 1.0, true, '1', none, none, 2.5, 'A', 'a'] | unique | list }}"),
            "[1, '1', None, 2.5, 'A']");
  EXPECT_EQ(ok("{{ [[1], [1], [2], (1,)] | unique | list }}"), "[[1], [2], (1,)]");
  EXPECT_EQ(render("{{ range(3000) | batch(1) | list | length }}", json::object(), small_limits()).value(),
            "3000");
  auto lists =
      render("{{ range(3000) | batch(1) | unique | list | length }}", json::object(), small_limits());
  ASSERT_FALSE(lists);
  EXPECT_NE(lists.error().message.find("rendering took more than 20000 steps"), std::string::npos)
      << lists.error().message;
  // Within the limit they are what Python makes of them.
  EXPECT_EQ(render("{{ ('x' * 4095).split('x') | length }}", json::object(), small_limits()).value(), "4096");
  EXPECT_EQ(render("{{ ('ab' * 2048) | list | length }}", json::object(), small_limits()).value(), "4096");
  EXPECT_EQ(ok("{{ 'a,b,,c'.split(',', 1) }} {{ 'a b  c'.rsplit(None, 1) }} {{ 'x\ny'.splitlines() }}"),
            "['a', 'b,,c'] ['a b', 'c'] ['x', 'y']");
}

TEST(ChatTemplate, HostileSourcesFailCleanly) {
  const std::string parens(5000, '(');
  auto deep = ChatTemplate::parse("{{ " + parens + " }}");
  ASSERT_FALSE(deep);
  std::string chain = "{{ 1";
  for (int i = 0; i < 2000; ++i) chain += " + 1";
  auto sum = ChatTemplate::parse(chain + " }}");
  ASSERT_FALSE(sum);
  std::string blocks;
  for (int i = 0; i < 2000; ++i) blocks += "{% if true %}";
  auto nested = ChatTemplate::parse(blocks);
  ASSERT_FALSE(nested);
  EXPECT_EQ(nested.error().code, ErrorCode::CapacityExceeded);
  auto nots = ChatTemplate::parse("{{ " + std::string(20000, '-') + "1 }}");
  ASSERT_FALSE(nots);
  // Bytes that are not UTF-8 pass through untouched.
  EXPECT_EQ(ok("a\xff{{ 'b\xfe' }}"),
            "a\xff"
            "b\xfe");
}

TEST(ChatTemplate, VariablesMustBeAnObject) {
  auto t = ChatTemplate::parse("x");
  ASSERT_TRUE(t);
  auto r = t->render(json::array());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument);
}

TEST(ChatContext, BuildsVariablesAsTheFixturesDescribe) {
  const json ctx =
      json::parse(R"({"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": true,
                                   "extra": {"enable_thinking": false, "bos_token": "<B>"}})");
  auto vars = variables_from_context(ctx, {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
  ASSERT_TRUE(vars) << vars.error().message;
  EXPECT_TRUE((*vars)["tools"].is_null());
  EXPECT_TRUE((*vars)["documents"].is_null());
  EXPECT_EQ((*vars)["add_generation_prompt"], true);
  EXPECT_EQ((*vars)["bos_token"], "<B>");  // extra wins
  EXPECT_EQ((*vars)["eos_token"], "</s>");
  EXPECT_EQ((*vars)["enable_thinking"], false);
  EXPECT_FALSE(variables_from_context(json::parse(R"({"messages": 3})"), json::object()));
  EXPECT_FALSE(variables_from_context(json::array(), json::object()));
}

TEST(ChatContext, ParsesFixedTimes) {
  auto t = parse_datetime("2026-01-01T00:00:00");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tm_year, 126);
  EXPECT_EQ(t->tm_wday, 4);  // a Thursday
  EXPECT_TRUE(parse_datetime("2026-01-01"));
  EXPECT_TRUE(parse_datetime("2026-01-01 12:30:00"));
  EXPECT_FALSE(parse_datetime("2026-02-30T00:00:00"));
  EXPECT_FALSE(parse_datetime("yesterday"));
  EXPECT_FALSE(parse_datetime("2026-01-01T00:00:00Z"));
}

}  // namespace
}  // namespace glass::tokenizer::chat
