#pragma once
// The fixture of the glass command's tests: a scratch directory per test and the built binary run
// in it as a user runs it (arguments, stdin, environment), its exit status and output captured.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace glass {

namespace fs = std::filesystem;

struct Ran {
  int status = -1;
  std::string out, err;
};

inline std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A scratch directory per test, removed afterwards.
class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("glass_cli_test_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `glass ARGS` (arguments already shell-quoted where needed) in the scratch directory, with
  // `input` as its stdin and `env` (NAME=VALUE ...) in its environment.
  Ran glass(const std::string& args, const std::string& input = "", const std::string& env = "") const {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt", in = dir_ / "stdin.txt";
    std::ofstream(in, std::ios::binary) << input;
    const std::string cmd = "cd '" + dir_.string() + "' && " + env + " '" + GLASS_BINARY + "' " + args +
                            " <'" + in.string() + "' >'" + out.string() + "' 2>'" + err.string() + "'";
    const int raw = std::system(cmd.c_str());
    Ran r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.out = read_all(out);
    r.err = read_all(err);
    return r;
  }
  fs::path path(const std::string& name) const { return dir_ / name; }

  // synth's tiny llama (64 wide, 2 layers, vocab 512) in f16, quantized to `type` with --pure.
  fs::path tiny_model(const std::string& type) const {
    Ran s = glass("synth --shape tiny --type f16 -o tiny-f16.gguf");
    EXPECT_EQ(s.status, 0) << s.err;
    if (type == "f16") return path("tiny-f16.gguf");
    Ran q = glass("quantize --pure tiny-f16.gguf tiny-" + type + ".gguf " + type);
    EXPECT_EQ(q.status, 0) << q.err;
    return path("tiny-" + type + ".gguf");
  }

 private:
  fs::path dir_;
};

}  // namespace glass
