// glass chat (and run -cnv) driven through stdin as a script drives it, and through a
// pseudo-terminal for what only a terminal sees: turns that go on past a full context, /clear,
// /save, /load, /help, the exit status, the newline before exit.
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_test_support.h"

namespace glass {
namespace {

// A template the bundled model (which has none) can chat with.
constexpr const char* kTemplate =
    "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}";

class Chat : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    std::ofstream(path("t.jinja")) << kTemplate;
  }
  nlohmann::json saved(const std::string& name) const { return nlohmann::json::parse(read_all(path(name))); }
};

TEST_F(Chat, KeepsGoingWhenTheContextFillsDroppingTheOldestExchanges) {
  std::string input;
  for (int i = 0; i < 8; ++i)
    input += "Tom and Lily went to the park " + std::to_string(i) + " and they played with a big red ball\n";
  input += "/save conv.json\n";
  const Ran r = glass("chat --chat-template-file t.jinja -sys 'Be kind.' -c 128 -n 12 --temp 0 -t 1", input);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("dropped the"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("error"), std::string::npos) << r.err;
  const auto messages = saved("conv.json")["messages"];
  ASSERT_GE(messages.size(), 3u);
  EXPECT_LT(messages.size(), 17u);  // some exchanges were dropped
  EXPECT_EQ(messages[0]["role"], "system");
  EXPECT_EQ(messages[0]["content"], "Be kind.");  // the system prompt stays
  EXPECT_EQ(messages[messages.size() - 2]["content"],
            "Tom and Lily went to the park 7 and they played with a big red ball");
  EXPECT_EQ(messages.back()["role"], "assistant");
  // --keep -1 pins the first exchange as well.
  input.replace(input.find("/save conv.json"), 15, "/save kept.json");
  const Ran k =
      glass("chat --chat-template-file t.jinja -sys 'Be kind.' -c 128 -n 12 --temp 0 -t 1 --keep -1", input);
  ASSERT_EQ(k.status, 0) << k.err;
  const auto kept = saved("kept.json")["messages"];
  ASSERT_GE(kept.size(), 5u);
  EXPECT_EQ(kept[1]["content"], "Tom and Lily went to the park 0 and they played with a big red ball");
}

// llama-cli's input habits: a trailing backslash continues the message; with -mli every line does and
// a trailing '/' sends it.
TEST_F(Chat, BackslashAndMultilineInputJoinLines) {
  const Ran r =
      glass("chat --chat-template-file t.jinja -n 2 --temp 0 -t 1", "Once upon\\\na time\n/save a.json\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(saved("a.json")["messages"][0]["content"], "Once upon\na time");
  const Ran m = glass("chat --chat-template-file t.jinja -n 2 --temp 0 -t 1 -mli",
                      "Once\nupon\na time/\n/save m.json\n");
  ASSERT_EQ(m.status, 0) << m.err;
  const auto msgs = saved("m.json")["messages"];
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0]["content"], "Once\nupon\na time");
}

TEST_F(Chat, ClearSaveLoadAndHelp) {
  const Ran r =
      glass("chat --chat-template-file t.jinja -n 4 --temp 0 -t 1",
            "/help\nhello\n/save one.json\n/clear\n/save none.json\n/load one.json\nagain\n/save two.json\n"
            "/nope\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("/save FILE"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("unknown command /nope"), std::string::npos) << r.err;
  const auto one = saved("one.json")["messages"];
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[0]["content"], "hello");
  EXPECT_EQ(saved("none.json")["messages"].size(), 0u);
  const auto two = saved("two.json")["messages"];
  ASSERT_EQ(two.size(), 4u);  // the loaded exchange, then the new one
  EXPECT_EQ(two[0]["content"], "hello");
  EXPECT_EQ(two[2]["content"], "again");
  const Ran bad = glass("chat --chat-template-file t.jinja -n 4 -t 1", "/load missing.json\n");
  EXPECT_NE(bad.err.find("missing.json"), std::string::npos) << bad.err;
}

TEST_F(Chat, NoSuccessfulTurnIsANonZeroExit) {
  std::string long_line;
  for (int i = 0; i < 200; ++i) long_line += "ball ";
  const Ran r = glass("chat --chat-template-file t.jinja -c 64 -n 4 -t 1", long_line + "\n");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("context is 64"), std::string::npos) << r.err;
  const Ran none = glass("chat --chat-template-file t.jinja -n 4 -t 1", "");  // nothing asked: no failure
  EXPECT_EQ(none.status, 0) << none.err;
}

// llama.cpp's conversation mode on `run`: -cnv / -i chat, -sys the system prompt, -p the first turn,
// -st one turn and exit.
TEST_F(Chat, RunConversationModeIsTheChat) {
  const Ran cnv = glass("run -cnv --chat-template-file t.jinja -n 4 --temp 0 -t 1", "hello\n/save c.json\n");
  ASSERT_EQ(cnv.status, 0) << cnv.err;
  EXPECT_EQ(saved("c.json")["messages"].size(), 2u);
  const Ran st =
      glass("run -sys 'Be kind.' -p hi -st --chat-template-file t.jinja -n 4 --temp 0 -t 1", "ignored\n");
  ASSERT_EQ(st.status, 0) << st.err;
  EXPECT_FALSE(st.out.empty());
  const Ran i = glass("run -i --chat-template-file t.jinja -n 4 --temp 0 -t 1 -p hello -st");
  ASSERT_EQ(i.status, 0) << i.err;
}

// On a terminal: the prompt, and a newline after Ctrl-D so the shell's prompt starts its own line.
TEST_F(Chat, OnATerminalCtrlDEndsWithANewline) {
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string t = path("t.jinja").string();
    execl(GLASS_BINARY, GLASS_BINARY, "chat", "--chat-template-file", t.c_str(), "-n", "2", "-t", "1",
          "--log-disable", static_cast<char*>(nullptr));
    _exit(127);
  }
  const char eot = 4;  // Ctrl-D at the start of a line: end of input
  ASSERT_EQ(write(master, &eot, 1), 1);
  std::string seen;
  char buf[256];
  for (ssize_t n; (n = read(master, buf, sizeof buf)) > 0;) seen.append(buf, static_cast<size_t>(n));
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << seen;
  EXPECT_NE(seen.find("> "), std::string::npos) << seen;
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), '\n') << seen;
  close(master);
}

}  // namespace
}  // namespace glass
