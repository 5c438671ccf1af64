// glass_server_load: streaming load against an OpenAI-compatible server (glass serve, llama-server),
// the same requests and table as scripts/server_load.py's bench, from a client that costs little.
// On a two-core machine the client shares the cores with the server's compute threads: the Python
// client spends ~0.35 ms of CPU per streamed token (http.client's chunked reading), which the server
// then lacks; this one spends a few microseconds, so the table measures the server.
//   glass_server_load URL [-n 16] [--max-tokens 128] [-c 1,4,8,16] [--ban-token ID]... [--temperature T]
//                         [--prompt TEXT] [--api-key K] [--model NAME] [--label L] [--timeout S]
//                         [--level-seconds S] [--distinct-prompts]
// Each request is a new connection (as the Python client makes them) to /v1/completions with
// "stream": true, "stream_options": {"include_usage": true}, "ignore_eos": true, a seed per request
// and, per --ban-token, a logit_bias of -100; with --distinct-prompts each prompt starts with its
// request's number, so that no request's prompt is found in a prefix cache. Tokens counted: the usage's
// completion_tokens, else the content chunks. TTFT: request sent to first content chunk; inter-token latency:
// the gaps between content chunks. Exit 1 if any request failed.
#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string host;
  int port = 80;
  int requests = 16;
  int max_tokens = 128;
  std::vector<int> levels{1, 4, 8, 16};
  std::vector<int> ban;
  double temperature = 0.8;
  std::string prompt = "Once upon a time";
  std::string api_key, model, label, url;
  double timeout_s = 120;
  double level_seconds = 300;
  bool distinct_prompts = false;
};

struct Outcome {
  bool ok = false;
  int64_t tokens = 0;
  std::optional<double> ttft_s;
  std::vector<double> gaps_s;
  std::string error;
};

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const double k = static_cast<double>(v.size() - 1) * p / 100.0;
  const auto lo = static_cast<size_t>(k);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (k - static_cast<double>(lo));
}

std::string request_body(const Options& o, int seed) {
  nlohmann::json b = {{"prompt", o.distinct_prompts ? fmt::format("{}. {}", seed, o.prompt) : o.prompt},
                      {"max_tokens", o.max_tokens},
                      {"temperature", o.temperature},
                      {"seed", seed},
                      {"stream", true},
                      {"stream_options", {{"include_usage", true}}},
                      {"ignore_eos", true}};
  if (!o.model.empty()) b["model"] = o.model;
  if (!o.ban.empty()) {
    nlohmann::json bias = nlohmann::json::object();
    for (int t : o.ban) bias[std::to_string(t)] = -100;
    b["logit_bias"] = bias;
  }
  return b.dump();
}

// Reads server-sent events out of the body as it arrives: one "data: ..." line per event.
class EventReader {
 public:
  EventReader(Outcome& out, Clock::time_point sent) : out_(out), sent_(sent) {}

  bool feed(const char* data, size_t n) {
    buf_.append(data, n);
    size_t start = 0;
    for (size_t nl; (nl = buf_.find('\n', start)) != std::string::npos; start = nl + 1)
      if (!line(std::string_view(buf_).substr(start, nl - start))) return false;
    buf_.erase(0, start);
    return true;
  }

  bool done() const { return done_; }
  std::optional<int64_t> usage_tokens() const { return usage_; }
  int64_t chunks() const { return chunks_; }

 private:
  bool line(std::string_view l) {
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.substr(0, 6) != "data: ") return true;
    l.remove_prefix(6);
    if (l == "[DONE]") {
      done_ = true;
      return false;
    }
    const auto ev = nlohmann::json::parse(l, nullptr, /*allow_exceptions=*/false);
    if (ev.is_discarded()) {
      out_.error = "an event is not JSON";
      return false;
    }
    if (auto u = ev.find("usage"); u != ev.end() && u->is_object() && u->contains("completion_tokens"))
      usage_ = (*u)["completion_tokens"].get<int64_t>();
    bool text = false;
    if (auto c = ev.find("choices"); c != ev.end() && c->is_array())
      for (const auto& choice : *c)
        if (auto t = choice.find("text");
            t != choice.end() && t->is_string() && !t->get_ref<const std::string&>().empty())
          text = true;
    if (!text) return true;
    const auto now = Clock::now();
    if (!last_)
      out_.ttft_s = seconds(sent_, now);
    else
      out_.gaps_s.push_back(seconds(*last_, now));
    last_ = now;
    ++chunks_;
    return true;
  }

  Outcome& out_;
  Clock::time_point sent_;
  std::optional<Clock::time_point> last_;
  std::string buf_;
  bool done_ = false;
  std::optional<int64_t> usage_;
  int64_t chunks_ = 0;
};

Outcome stream_one(const Options& o, int seed) {
  Outcome out;
  httplib::Client cli(o.host, o.port);
  const auto t = std::chrono::duration<double>(o.timeout_s);
  cli.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(t));
  cli.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(t));
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = request_body(o, seed);
  req.set_header("Content-Type", "application/json");
  if (!o.api_key.empty()) req.set_header("Authorization", "Bearer " + o.api_key);
  const auto sent = Clock::now();
  EventReader events(out, sent);
  std::string error_body;
  int status = 0;
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (status != 200) {
      error_body.append(data, std::min<size_t>(n, 300 - std::min<size_t>(300, error_body.size())));
      return true;
    }
    return events.feed(data, n);
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool sent_ok = cli.send(req, res, err);
  if (status != 0 && status != 200) {
    out.error = fmt::format("HTTP {}: {}", status, error_body);
    return out;
  }
  if (!out.error.empty()) return out;
  // Ending the read at [DONE] reports Canceled: that is the normal end here.
  if (!sent_ok && !(events.done() && err == httplib::Error::Canceled)) {
    out.error = fmt::format("request failed: {}", httplib::to_string(err));
    return out;
  }
  out.tokens = events.usage_tokens().value_or(events.chunks());
  out.ok = events.done();
  if (!out.ok) out.error = "the stream ended without [DONE]";
  return out;
}

struct Row {
  int level = 0;
  size_t n = 0, ok = 0;
  int64_t tokens = 0;
  double wall = 0, ttft50 = 0, ttft95 = 0, itl50 = 0, itl95 = 0;
};

Row run_level(const Options& o, int level) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(o.level_seconds));
  std::mutex mu;
  std::vector<Outcome> results;
  std::atomic<int> next{1};
  const auto t0 = Clock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < level; ++w)
    workers.emplace_back([&] {
      while (Clock::now() < deadline) {
        const int seed = next.fetch_add(1);
        if (seed > o.requests) return;
        Outcome r = stream_one(o, seed);
        std::lock_guard lk(mu);
        results.push_back(std::move(r));
      }
    });
  for (auto& w : workers) w.join();
  Row row{.level = level, .n = results.size(), .wall = seconds(t0, Clock::now())};
  std::vector<double> ttft, gaps;
  std::string first_error;
  size_t failed = 0;
  for (const Outcome& r : results) {
    if (!r.ok) {
      ++failed;
      if (first_error.empty()) first_error = r.error;
      continue;
    }
    ++row.ok;
    row.tokens += r.tokens;
    if (r.ttft_s) ttft.push_back(*r.ttft_s);
    gaps.insert(gaps.end(), r.gaps_s.begin(), r.gaps_s.end());
  }
  row.ttft50 = percentile(ttft, 50) * 1e3;
  row.ttft95 = percentile(ttft, 95) * 1e3;
  row.itl50 = percentile(gaps, 50) * 1e3;
  row.itl95 = percentile(gaps, 95) * 1e3;
  if (failed > 0) fmt::print(stderr, "level {}: {} failed, first: {}\n", level, failed, first_error);
  if (results.size() < static_cast<size_t>(o.requests))
    fmt::print(stderr, "level {}: {} s deadline hit after {} of {} requests\n", level, o.level_seconds,
               results.size(), o.requests);
  return row;
}

[[noreturn]] void usage(const char* why) {
  fmt::print(stderr,
             "glass_server_load: {}\nusage: glass_server_load URL [-n 16] [--max-tokens 128] [-c 1,4,8,16] "
             "[--ban-token ID]... [--temperature T] [--prompt TEXT] [--api-key K] [--model NAME] [--label L] "
             "[--timeout S] [--level-seconds S] [--distinct-prompts]\n",
             why);
  std::exit(2);
}

int to_int(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < 0 || x > 1000000)
    usage(fmt::format("{}: not a count: '{}'", flag, v).c_str());
  return static_cast<int>(x);
}

double to_double(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(x >= 0)) usage(fmt::format("{}: not a number: '{}'", flag, v).c_str());
  return x;
}

Options parse(int argc, char** argv) {
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) usage(fmt::format("{} needs a value", a).c_str());
      return args[++i];
    };
    if (a == "-n" || a == "--requests")
      o.requests = to_int(a, value());
    else if (a == "--max-tokens")
      o.max_tokens = to_int(a, value());
    else if (a == "-c" || a == "--concurrency") {
      o.levels.clear();
      const std::string& v = value();
      for (size_t p = 0; p <= v.size();) {
        const size_t comma = std::min(v.find(',', p), v.size());
        if (comma > p) o.levels.push_back(std::max(1, to_int(a, v.substr(p, comma - p))));
        p = comma + 1;
      }
    } else if (a == "--ban-token")
      o.ban.push_back(to_int(a, value()));
    else if (a == "--temperature")
      o.temperature = to_double(a, value());
    else if (a == "--prompt")
      o.prompt = value();
    else if (a == "--api-key")
      o.api_key = value();
    else if (a == "--model")
      o.model = value();
    else if (a == "--label")
      o.label = value();
    else if (a == "--timeout")
      o.timeout_s = to_double(a, value());
    else if (a == "--distinct-prompts")
      o.distinct_prompts = true;
    else if (a == "--level-seconds")
      o.level_seconds = to_double(a, value());
    else if (o.url.empty() && a.rfind("http://", 0) == 0)
      o.url = a;
    else
      usage(fmt::format("unknown argument '{}'", a).c_str());
  }
  if (o.url.empty()) usage("want an http://host:port URL");
  std::string rest = o.url.substr(7);
  if (const size_t slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  if (const size_t colon = rest.rfind(':'); colon != std::string::npos) {
    o.port = to_int("URL port", rest.substr(colon + 1));
    rest.resize(colon);
  }
  o.host = rest;
  if (o.host.empty() || o.levels.empty()) usage("want an http://host:port URL and at least one level");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  {  // One short request first, so that no level pays for a cold start.
    Options warm = o;
    warm.max_tokens = 4;
    (void)stream_one(warm, 0);
  }
  std::vector<Row> rows;
  for (int level : o.levels) rows.push_back(run_level(o, level));
  fmt::print("\n{} streamed requests x {} tokens per level{}, {} (glass_server_load)\n\n", o.requests,
             o.max_tokens, o.label.empty() ? "" : fmt::format(" ({})", o.label), o.url);
  fmt::print(
      "| concurrency | requests | ok | tokens | tokens/request | wall s | gen tok/s | TTFT p50 ms | TTFT p95 "
      "ms | "
      "ITL p50 ms | ITL p95 ms |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  bool all_ok = true;
  for (const Row& r : rows) {
    const double per = r.ok ? static_cast<double>(r.tokens) / static_cast<double>(r.ok) : 0;
    const double tps = r.wall > 0 ? static_cast<double>(r.tokens) / r.wall : 0;
    fmt::print("| {} | {} | {} | {} | {:.1f} | {:.2f} | {:.1f} | {:.1f} | {:.1f} | {:.2f} | {:.2f} |\n",
               r.level, r.n, r.ok, r.tokens, per, r.wall, tps, r.ttft50, r.ttft95, r.itl50, r.itl95);
    all_ok = all_ok && r.n > 0 && r.ok == r.n;
  }
  return all_ok ? 0 : 1;
}
