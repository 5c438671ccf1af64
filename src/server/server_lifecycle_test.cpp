// glass serve's operational behaviour (server_test_support.h): draining on shutdown (running streams
// finish, new requests get 503, /health says "draining", what outlives the grace is cancelled), a
// non-streamed request cancelled when its client leaves, and the real `glass serve` binary draining
// on SIGTERM and exiting 0. Every wait is bounded; a child process left running is killed.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/server_test_support.h"

extern char** environ;

namespace glass::server {
namespace {

using namespace test_http;  // NOLINT(google-build-using-namespace)
using Json = nlohmann::json;
using namespace std::chrono_literals;

// A request that holds every engine step back by `step` in its callback, so the others advance at
// that pace and a test can act while they run.
std::shared_ptr<RequestHandle> pace(Engine& engine, std::atomic<bool>& pacing,
                                    std::chrono::milliseconds step) {
  GenerateConfig cfg = greedy(250);
  cfg.stop_at_end_of_generation = false;
  auto h = engine.submit({*model()->tokenize("Once"), cfg}, [&pacing, step](std::string_view) {
    if (pacing.load()) std::this_thread::sleep_for(step);
    return true;
  });
  EXPECT_TRUE(h.ok());
  return h.ok() ? *h : nullptr;
}

// A streamed completion read on its own thread; `first` opens at its first bytes (or its failure).
struct StreamReader {
  std::string received;
  std::mutex mu;
  Gate first;
  std::thread thread;

  StreamReader(int port, int max_tokens) {
    thread = std::thread([this, port, max_tokens] {
      httplib::Client c("127.0.0.1", port);
      c.set_connection_timeout(5);
      c.set_read_timeout(30);
      httplib::Request req = streamed_completion_request(max_tokens);
      req.content_receiver = [this](const char* data, size_t n, uint64_t, uint64_t) {
        {
          std::lock_guard lk(mu);
          received.append(data, n);
        }
        first.open();
        return true;
      };
      c.send(req);
      first.open();
    });
  }
  ~StreamReader() {
    if (thread.joinable()) thread.join();
  }
  std::string text() {
    thread.join();
    return received;
  }
};

TEST(ServerLifecycle, ShutdownLetsRunningStreamsFinishAndRefusesNewRequests) {
  std::atomic<bool> pacing{true};  // before the server: its engine's callbacks read it
  auto s = start();
  ASSERT_TRUE(s);
  auto pacer = pace(*s->engine(), pacing, 2ms);
  ASSERT_TRUE(pacer);
  StreamReader stream(s->port(), 100);
  ASSERT_TRUE(stream.first.wait());
  EXPECT_EQ(s->active_requests(), 1u);

  size_t left = 99;
  std::thread stopper([&] { left = s->shutdown(20s); });
  const bool draining = eventually([&] { return get(*s, "/health").status == 503; });
  EXPECT_TRUE(draining);
  if (draining) {
    const Reply health = get(*s, "/health");
    EXPECT_EQ(health.json["status"], "draining") << health.body;
    auto c = client(*s);
    c.set_keep_alive(true);  // so that only the server asks for the connection to close
    const Reply refused = to_reply(
        c.Post("/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 2}}.dump(), "application/json"),
        "drain");
    expect_error(refused, 503, "", "while draining");
    EXPECT_EQ(refused.headers.count("Connection"), 1u);
    if (refused.headers.count("Connection") == 1) {
      EXPECT_EQ(refused.headers.find("Connection")->second, "close");
    }
    EXPECT_EQ(get(*s, "/metrics").status, 200);  // the rest still answers while the stream drains
  }
  stopper.join();
  EXPECT_EQ(left, 0u);
  const std::string body = stream.text();
  const auto events = sse_data(body);
  ASSERT_GE(events.size(), 2u) << body;
  EXPECT_EQ(events.back(), "[DONE]");
  const Json last = Json::parse(events[events.size() - 2], nullptr, false);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length") << events[events.size() - 2];
  pacing = false;
  EXPECT_TRUE(pacer->wait().ok());
}

TEST(ServerLifecycle, ShutdownCancelsWhatOutlivesItsGrace) {
  std::atomic<bool> pacing{true};
  auto s = start();
  ASSERT_TRUE(s);
  auto pacer = pace(*s->engine(), pacing, 20ms);  // 200 tokens would take 4 s
  ASSERT_TRUE(pacer);
  StreamReader stream(s->port(), 200);
  ASSERT_TRUE(stream.first.wait());
  const auto t0 = std::chrono::steady_clock::now();
  const size_t left = s->shutdown(300ms);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(left, 1u);
  EXPECT_GE(seconds, 0.29);
  EXPECT_LT(seconds, 3.0);
  const std::string body = stream.text();
  EXPECT_EQ(body.rfind("data: ", 0), 0u) << body;
  EXPECT_EQ(body.find("[DONE]"), std::string::npos);
  pacing = false;
  EXPECT_EQ(pacer->wait()->finish, FinishReason::Cancelled);  // the engine stopped under it
}

// A connected TCP socket to 127.0.0.1:port, or -1.
int connect_to(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int64_t metric(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stoll(text.substr(at + name.size() + 2));
}

TEST(ServerLifecycle, NonStreamedRequestIsCancelledWhenItsClientLeaves) {
  std::atomic<bool> pacing{true};
  auto s = start();
  ASSERT_TRUE(s);
  Engine& engine = *s->engine();
  auto pacer = pace(engine, pacing, 10ms);  // 200 tokens would take 2 s
  ASSERT_TRUE(pacer);

  const int fd = connect_to(s->port());
  ASSERT_GE(fd, 0);
  const std::string body = Json{{"prompt", "Lily"},
                                {"max_tokens", 200},
                                {"temperature", 0},
                                {"logit_bias", ban_end_of_generation()}}
                               .dump();
  const std::string request =
      "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  const bool two_run = eventually([&] { return engine.stats().running == 2; });
  // One client stays and gets its whole reply: watching connections cancels nobody else.
  Reply stayed;
  std::thread staying([&] {
    stayed = post(*s, "/v1/completions",
                  Json{{"prompt", "Tom"},
                       {"max_tokens", 30},
                       {"temperature", 0},
                       {"logit_bias", ban_end_of_generation()}});
  });
  const bool three_run = eventually([&] { return engine.stats().running == 3; });
  close(fd);
  EXPECT_TRUE(two_run && three_run) << engine.stats().running;
  EXPECT_TRUE(eventually([&] { return engine.stats().cancelled == 1; })) << engine.stats().cancelled;
  EXPECT_FALSE(pacer->done());  // cancelled, not run out
  staying.join();
  ASSERT_EQ(stayed.status, 200) << stayed.body;
  EXPECT_EQ(stayed.json["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(stayed.json["usage"]["completion_tokens"], 30);
  EXPECT_TRUE(eventually([&] {
    return get(*s, "/metrics").body.find("glass_requests_total{status=\"499\"} 1") != std::string::npos;
  }));

  pacing = false;
  pacer->cancel();
  ASSERT_TRUE(pacer->wait().ok());
  EXPECT_TRUE(eventually([&] {
    const auto st = engine.stats();
    return st.running == 0 && st.queued == 0 && st.blocks_used == 0;
  }));
  const std::string metrics = get(*s, "/metrics").body;
  EXPECT_EQ(metric(metrics, "glass_running_sequences"), 0) << metrics;
  EXPECT_EQ(metric(metrics, "glass_kv_blocks_used"), 0) << metrics;
  EXPECT_TRUE(engine.check_invariants().ok());
}

// `glass serve` as a child process, its stderr collected; killed if a test leaves it running.
class ServeProcess {
 public:
  explicit ServeProcess(const std::vector<std::string>& args) {
    int err[2];
    // Close-on-exec, so that no other child holds the write end and wait() can read to its end.
    if (pipe2(err, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&fa, err[0]);
    std::vector<std::string> all{GLASS_BINARY, "serve"};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, GLASS_BINARY, &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    close(err[1]);
    reader_ = std::thread([this, fd = err[0]] {
      char buf[4096];
      for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) {
        std::lock_guard lk(mu_);
        stderr_.append(buf, static_cast<size_t>(n));
      }
      close(fd);
    });
  }
  ~ServeProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (reader_.joinable()) reader_.join();
  }
  bool started() const { return pid_ > 0; }
  std::string err() {
    std::lock_guard lk(mu_);
    return stderr_;
  }
  // The port from "listening on http://127.0.0.1:PORT", within 20 s; 0 if it never says.
  int port() {
    const std::string marker = "listening on http://127.0.0.1:";
    for (int i = 0; i < 2000; ++i) {
      const std::string e = err();
      if (const size_t at = e.find(marker);
          at != std::string::npos && e.find(' ', at + marker.size()) != std::string::npos)
        return std::atoi(e.c_str() + at + marker.size());
      std::this_thread::sleep_for(10ms);
    }
    return 0;
  }
  void signal(int sig) const { kill(pid_, sig); }
  // The exit status if it exits within `limit`, else nullopt.
  std::optional<int> wait(std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        // What it wrote last is read before err() is asked (under load the reader lagged the exit,
        // and "drained in" was missing from a stderr that had it).
        if (reader_.joinable()) reader_.join();
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(10ms);
    }
    return std::nullopt;
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  std::thread reader_;
  std::mutex mu_;
  std::string stderr_;
};

bool healthy(int port) {
  for (int i = 0; i < 200; ++i) {
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(1);
    if (auto r = c.Get("/health"); r && r->status == 200) return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

const std::string kModelPath = (test::source_dir() / "models/stories260K.gguf").string();

TEST(ServerLifecycle, GlassServeDrainsOnSigtermAndExitsZero) {
  ServeProcess serve({"-m", kModelPath, "--port", "0", "-t", "1", "-c", "2048", "--shutdown-timeout", "20"});
  ASSERT_TRUE(serve.started());
  const int port = serve.port();
  ASSERT_GT(port, 0) << serve.err();
  ASSERT_TRUE(healthy(port)) << serve.err();
  // A stream long enough to be running (or still being written) when the signal comes.
  StreamReader stream(port, 1500);
  ASSERT_TRUE(stream.first.wait());
  serve.signal(SIGTERM);
  const auto code = serve.wait(25s);
  ASSERT_TRUE(code.has_value()) << "still running 25 s after SIGTERM\n" << serve.err();
  EXPECT_EQ(*code, 0) << serve.err();
  const std::string body = stream.text();
  const auto events = sse_data(body);
  ASSERT_GE(events.size(), 2u) << body.substr(0, 2000);
  EXPECT_EQ(events.back(), "[DONE]") << serve.err();  // drained: the stream was not cut
  const Json last = Json::parse(events[events.size() - 2], nullptr, false);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_NE(serve.err().find("SIGTERM: draining"), std::string::npos) << serve.err();
  EXPECT_NE(serve.err().find("drained in"), std::string::npos) << serve.err();
}

TEST(ServerLifecycle, IdleGlassServeStopsOnSigintAndExitsZero) {
  ServeProcess serve({"-m", kModelPath, "--port", "0", "-t", "1"});
  ASSERT_TRUE(serve.started());
  const int port = serve.port();
  ASSERT_GT(port, 0) << serve.err();
  ASSERT_TRUE(healthy(port)) << serve.err();
  // -np 4 without --kv-size: the pool holds four full-length sequences.
  EXPECT_NE(serve.err().find("x 4: the context x --parallel"), std::string::npos) << serve.err();
  serve.signal(SIGINT);
  const auto code = serve.wait(5s);
  ASSERT_TRUE(code.has_value()) << serve.err();
  EXPECT_EQ(*code, 0) << serve.err();
}

// -ub 4 splits a prompt of ~40 tokens over ten steps: the completion is still the one generate gives
// alone; an -ub past -b is refused at start, naming both.
TEST(ServerLifecycle, GlassServeUbatchSplitsPromptsAndIsCheckedAgainstTheBatch) {
  {
    ServeProcess serve({"-m", kModelPath, "--port", "0", "-t", "1", "-b", "64", "-ub", "128"});
    ASSERT_TRUE(serve.started());
    const auto code = serve.wait(20s);
    ASSERT_TRUE(code.has_value()) << serve.err();
    EXPECT_NE(*code, 0);
    EXPECT_NE(serve.err().find("-ub 128: more than the batch (64, -b)"), std::string::npos) << serve.err();
  }
  ServeProcess serve({"-m", kModelPath, "--port", "0", "-t", "1", "-ub", "4"});
  ASSERT_TRUE(serve.started());
  const int port = serve.port();
  ASSERT_GT(port, 0) << serve.err();
  ASSERT_TRUE(healthy(port)) << serve.err();
  const std::string prompt =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park";
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60);
  auto r = c.Post("/v1/completions", Json{{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}}.dump(),
                  "application/json");
  ASSERT_TRUE(r) << serve.err();
  ASSERT_EQ(r->status, 200) << r->body;
  const Json body = Json::parse(r->body);
  const GenerateResult alone = solo(prompt, greedy(24));
  const int prompt_tokens = body["usage"]["prompt_tokens"].get<int>();
  EXPECT_GT(prompt_tokens, 16);
  EXPECT_EQ(body["choices"][0]["text"], alone.text);
  // The prompt took a step per 4 tokens, then one step per token after the first.
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m && m->status == 200);
  const std::string key = "\nglass_engine_steps_total ";
  const size_t at = m->body.find(key);
  ASSERT_NE(at, std::string::npos) << m->body;
  EXPECT_EQ(std::atoi(m->body.c_str() + at + key.size()), (prompt_tokens + 3) / 4 + 23) << m->body;
}

}  // namespace
}  // namespace glass::server
