// glass bench: prompt processing and generation speed with llama-bench's test definitions, so the
// two are compared on the same file: "pp N" evaluates N prompt tokens in one batch, "tg N" runs N
// one-token decode steps from an empty cache; neither includes tokenization or sampling. Each test
// runs once to warm up, then -r times from an empty cache; the result is the mean and standard
// deviation of tokens/s over the repetitions. Output: a markdown table (default) or, with -o json,
// a JSON array with llama-bench's field names plus backend and peak_rss_bytes.
// With --npl it runs llama-batched-bench's test instead (cmd_bench_batched.cpp).
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "cli/cmd_bench_batched.h"
#include "cli/common.h"
#include "glass/tools.h"

namespace glass::cli {
namespace {

struct BenchOptions {
  ModelOptions model;
  std::vector<int> n_prompt{512};
  std::vector<int> n_gen{128};
  std::vector<int> n_depth{0};
  int reps = 5;
  std::string output = "md";
  uint32_t seed = 1;
  bool bandwidth = false;
  bool profile = false;
  std::vector<int> npp{128}, ntg{128}, npl;  // --npl: llama-batched-bench's test instead
};

struct TestResult {
  int n_prompt = 0, n_gen = 0, n_depth = 0;
  std::vector<double> ns;  // per repetition
  double avg_ts = 0, stddev_ts = 0, avg_ns = 0, stddev_ns = 0;
  std::vector<double> ts;
  std::string time;
  std::vector<KernelTime> profile;  // summed over the repetitions (--profile)
  // --bandwidth, tg tests: the read bandwidth measured just before each repetition, and that
  // repetition's weight bytes per second over it (the host's bandwidth drifts by minutes).
  std::vector<double> read_gbs, of_read;
};

uint64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void stats(const std::vector<double>& v, double& mean, double& sd) {
  mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  sd = 0;
  for (double x : v) sd += (x - mean) * (x - mean);
  sd = v.size() > 1 ? std::sqrt(sd / static_cast<double>(v.size() - 1)) : 0.0;
}

// One repetition: the elapsed nanoseconds of the test's eval calls, after n_depth tokens already
// in the cache (llama-bench's -d: evaluated first, untimed, in batches of the prompt buffer's size).
// With `profile`, only the test's evals are profiled.
Result<double> run_once(Session& session, int n_depth, int n_prompt, int n_gen, std::mt19937& rng,
                        int64_t vocab, std::vector<int32_t>& tokens, bool profile = false) {
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(vocab - 1));
  session.reset();
  session.set_profiling(false);
  for (int done = 0; done < n_depth;) {
    const int n = std::min(n_depth - done, static_cast<int>(tokens.size()));
    for (int i = 0; i < n; ++i) tokens[static_cast<size_t>(i)] = pick(rng);
    if (auto st = session.eval(std::span<const int32_t>(tokens.data(), static_cast<size_t>(n))); !st)
      return st.error();
    done += n;
  }
  for (int i = 0; i < n_prompt; ++i) tokens[static_cast<size_t>(i)] = pick(rng);
  int32_t token = pick(rng);
  session.set_profiling(profile);
  const auto t0 = std::chrono::steady_clock::now();
  if (n_prompt > 0)
    if (auto st = session.eval(std::span<const int32_t>(tokens.data(), static_cast<size_t>(n_prompt))); !st)
      return st.error();
  for (int i = 0; i < n_gen; ++i) {
    if (auto st = session.eval(std::span<const int32_t>(&token, 1)); !st) return st.error();
    token = pick(rng);  // llama-bench feeds random tokens: no sampling in the timed loop
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  session.set_profiling(false);
  return ns;
}

std::string human_params(uint64_t n) {
  return n >= 1000000000 ? fmt::format("{:.2f} B", static_cast<double>(n) / 1e9)
                         : fmt::format("{:.2f} M", static_cast<double>(n) / 1e6);
}

std::string model_type(const ModelInfo& info) {
  const double p = static_cast<double>(info.n_params);
  const std::string size = p >= 1e9   ? fmt::format("{:.1f}B", p / 1e9)
                           : p >= 1e6 ? fmt::format("{:.0f}M", p / 1e6)
                                      : fmt::format("{:.0f}K", p / 1e3);
  return fmt::format("{} {} {}", info.architecture, size, info.file_type);
}

// llama-bench's test names: "pp512", "tg128", "tg128 @ d4096".
std::string test_name(const TestResult& r) {
  std::string name = r.n_prompt > 0 ? fmt::format("pp{}", r.n_prompt) : fmt::format("tg{}", r.n_gen);
  return r.n_depth > 0 ? fmt::format("{} @ d{}", name, r.n_depth) : name;
}

// Per token of the test: each kernel kind's calls, microseconds and share of the test's time, and
// for matmuls the rate at which they read their weights; "(between kernels)" is the rest of the
// eval time (input setup, output copies, the session's bookkeeping).
void print_profile(const TestResult& r, int reps) {
  const double tokens = static_cast<double>(r.n_prompt + r.n_gen) * reps;
  double total_s = 0, kernels_s = 0;
  for (double ns : r.ns) total_s += ns * 1e-9;
  fmt::print(
      "\nprofile of {} (per token, {} repetitions; kernel times include the thread pool's dispatch and "
      "wait)\n",
      test_name(r), reps);
  fmt::print(
      "| {:<34} | {:>8} | {:>10} | {:>6} | {:>12} |\n| {:-<34} | {:->7}: | {:->9}: | {:->5}: | {:->11}: |\n",
      "kernel", "calls", "us", "share", "weights GB/s", "", "", "", "", "");
  auto row = [&](const std::string& name, double calls, double s, uint64_t bytes) {
    fmt::print("| {:<34} | {:>8.1f} | {:>10.1f} | {:>5.1f}% | {:>12} |\n", name, calls / tokens,
               s * 1e6 / tokens, 100.0 * s / total_s,
               bytes > 0 ? fmt::format("{:.1f}", static_cast<double>(bytes) / s * 1e-9) : "");
  };
  for (const KernelTime& k : r.profile) {
    row(k.kernel, static_cast<double>(k.calls), k.seconds, k.weight_bytes);
    kernels_s += k.seconds;
  }
  row("(between kernels)", 0.0, total_s - kernels_s, 0);
}

int bench(BenchOptions o) {
  if (!o.npl.empty()) return bench_batched({o.model, o.npp, o.ntg, o.npl, o.output, o.seed});
  if (o.reps < 1) return report(make_error(ErrorCode::InvalidArgument, "bench: -r must be at least 1"));
  if (o.output != "md" && o.output != "json")
    return report(
        make_error(ErrorCode::InvalidArgument, fmt::format("bench: -o '{}' (md or json)", o.output)));
  int max_p = 0, max_n = 0, max_d = 0;
  for (int p : o.n_prompt) max_p = std::max(max_p, p);
  for (int n : o.n_gen) max_n = std::max(max_n, n);
  for (int d : o.n_depth) max_d = std::max(max_d, d);
  if (std::any_of(o.n_depth.begin(), o.n_depth.end(), [](int d) { return d < 0; }))
    return report(make_error(ErrorCode::InvalidArgument, "bench: -d must not be negative"));
  // pp N is one batch: the prefill plan takes N tokens; the cache holds the longest test.
  // (and fills the cache of a -d test in batches of up to 512).
  if (o.model.load.n_batch == 0) o.model.load.n_batch = std::max({max_p, std::min(max_d, 512), 1});
  // As llama-bench: a cache just large enough for the longest test (not the model's full context).
  if (o.model.load.n_ctx == 0) o.model.load.n_ctx = max_d + std::max(max_p, max_n) + 1;
  int load_rc = 1;
  auto model = load_or_report(o.model, load_rc);
  if (!model) return load_rc;
  auto session = model->new_session();
  if (!session) return report(session.error());
  const ModelInfo& info = model->info();
  const int threads = o.model.load.n_threads > 0 ? o.model.load.n_threads
                                                 : static_cast<int>(std::thread::hardware_concurrency());
  std::vector<int32_t> tokens(static_cast<size_t>(std::max<int64_t>(max_p, o.model.load.n_batch)));
  std::mt19937 rng(o.seed);
  std::vector<TestResult> results;
  struct Test {
    int p, n, d;
  };
  std::vector<Test> tests;
  for (int d : o.n_depth) {
    for (int p : o.n_prompt)
      if (p > 0) tests.push_back({p, 0, d});
    for (int n : o.n_gen)
      if (n > 0) tests.push_back({0, n, d});
  }
  for (auto [p, n, depth] : tests) {
    TestResult r;
    r.n_prompt = p;
    r.n_gen = n;
    r.n_depth = depth;
    r.time = now_iso();
    if (auto w = run_once(**session, depth, p, std::min(n, 1), rng, info.vocab_size, tokens); !w)
      return report(w.error());
    (*session)->clear_profile();
    for (int i = 0; i < o.reps; ++i) {
      if (o.bandwidth && n > 0) {
        auto measured = measure_read_bandwidth(size_t{256} << 20, 2, threads);
        if (!measured) return report(measured.error());
        r.read_gbs.push_back(measured->best_gbs);
      }
      auto ns = run_once(**session, depth, p, n, rng, info.vocab_size, tokens, o.profile);
      if (!ns) return report(ns.error());
      r.ns.push_back(*ns);
      r.ts.push_back(static_cast<double>(p + n) * 1e9 / *ns);
      if (!r.read_gbs.empty())
        r.of_read.push_back(static_cast<double>(info.weight_bytes) * r.ts.back() / 1e9 / r.read_gbs.back());
    }
    r.profile = (*session)->profile();
    stats(r.ns, r.avg_ns, r.stddev_ns);
    stats(r.ts, r.avg_ts, r.stddev_ts);
    results.push_back(r);
    if (o.output == "md" && results.size() == 1)
      fmt::print(
          "| model                          |       size |     params | backend    | threads |            "
          "test |                  t/s |\n"
          "| ------------------------------ | ---------: | ---------: | ---------- | ------: | "
          "--------------: | -------------------: |\n");
    if (o.output == "md") {
      const double gib = static_cast<double>(info.weight_bytes) / (1024.0 * 1024.0 * 1024.0);
      const std::string size =
          gib >= 1.0 ? fmt::format("{:.2f} GiB", gib) : fmt::format("{:.2f} MiB", gib * 1024.0);
      fmt::print("| {:<30} | {:>10} | {:>10} | {:<10} | {:>7} | {:>15} | {:>20} |\n", model_type(info), size,
                 human_params(info.n_params), o.model.load.backend, threads, test_name(r),
                 fmt::format("{:.2f} ± {:.2f}", r.avg_ts, r.stddev_ts));
      std::fflush(stdout);
    }
  }
  // The decode ceiling: weight bytes per token x tokens/s against the measured read bandwidth.
  ReadBandwidth bw;
  if (o.bandwidth) {
    auto measured = measure_read_bandwidth(size_t{1} << 30, 5, threads);
    if (!measured) return report(measured.error());
    bw = *measured;
  }
  auto weight_gbs = [&](const TestResult& r) {
    return static_cast<double>(info.weight_bytes) * r.avg_ts / 1e9;
  };
  if (o.output == "md" && o.bandwidth) {
    fmt::print(
        "\nread bandwidth: {:.1f} GB/s best, {:.1f} mean (four streams per thread; one stream per thread: "
        "{:.1f} "
        "best; {} passes each over {:.2f} GiB, {} threads)\n",
        bw.best_gbs, bw.mean_gbs, bw.one_stream_best_gbs, bw.passes,
        static_cast<double>(bw.bytes) / (1 << 30), threads);
    for (const TestResult& r : results)
      if (r.n_gen > 0) {
        double mean_of = 0, lo = r.read_gbs[0], hi = r.read_gbs[0];
        for (size_t i = 0; i < r.of_read.size(); ++i) {
          mean_of += r.of_read[i] / static_cast<double>(r.of_read.size());
          lo = std::min(lo, r.read_gbs[i]);
          hi = std::max(hi, r.read_gbs[i]);
        }
        fmt::print(
            "{}: {:.1f} GB/s of weights ({:.2f} GiB x {:.2f} t/s) = {:.0f}% of the best read bandwidth; "
            "{:.0f}% of the read measured just before each repetition ({:.1f}-{:.1f} GB/s)\n",
            test_name(r), weight_gbs(r), static_cast<double>(info.weight_bytes) / (1 << 30), r.avg_ts,
            100.0 * weight_gbs(r) / bw.best_gbs, 100.0 * mean_of, lo, hi);
      }
  }
  if (o.output == "md" && o.profile)
    for (const TestResult& r : results) print_profile(r, o.reps);
  if (o.output == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const TestResult& r : results)
      out.push_back({{"model_filename", info.path},
                     {"model_type", model_type(info)},
                     {"model_size", info.weight_bytes},
                     {"model_n_params", info.n_params},
                     {"backend", o.model.load.backend},
                     {"n_threads", threads},
                     {"n_batch", info.n_batch},
                     {"n_prompt", r.n_prompt},
                     {"n_gen", r.n_gen},
                     {"n_depth", r.n_depth},
                     {"test_time", r.time},
                     {"avg_ns", static_cast<uint64_t>(r.avg_ns)},
                     {"stddev_ns", static_cast<uint64_t>(r.stddev_ns)},
                     {"avg_ts", r.avg_ts},
                     {"stddev_ts", r.stddev_ts},
                     {"samples_ns", std::vector<uint64_t>(r.ns.begin(), r.ns.end())},
                     {"samples_ts", r.ts},
                     {"peak_rss_bytes", peak_rss_bytes()}});
    if (o.profile)
      for (size_t i = 0; i < results.size(); ++i) {
        nlohmann::json& prof = out[i]["profile"] = nlohmann::json::array();
        for (const KernelTime& k : results[i].profile)
          prof.push_back({{"kernel", k.kernel},
                          {"calls", k.calls},
                          {"seconds", k.seconds},
                          {"weight_bytes", k.weight_bytes}});
      }
    if (o.bandwidth)
      for (size_t i = 0; i < results.size(); ++i) {
        out[i]["read_bandwidth_gbs"] = bw.best_gbs;
        if (results[i].n_gen > 0) {
          out[i]["weight_read_gbs"] = weight_gbs(results[i]);
          out[i]["read_gbs_before_each"] = results[i].read_gbs;
          out[i]["of_read_before_each"] = results[i].of_read;
        }
      }
    fmt::print("{}\n", out.dump(2));
  }
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd =
      app.add_subcommand("bench", "prompt processing (pp) and generation (tg) speed, llama-bench style");
  add_model_options(*cmd, o->model);
  cmd->get_option("--backend")->default_val("cpu");
  cmd->add_option("-p,--n-prompt", o->n_prompt, "prompt tokens per pp test (comma-separated list)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-n,--n-gen", o->n_gen, "generated tokens per tg test (comma-separated list)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-d,--n-depth", o->n_depth,
                  "tokens already in the cache before each test (comma-separated list)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("-r,--repetitions", o->reps, "repetitions of each test")->capture_default_str();
  cmd->add_option("-o,--output", o->output, "md or json (with --npl: md or jsonl)")->capture_default_str();
  cmd->add_option("--npl", o->npl,
                  "llama-batched-bench's test (-npl also reads): this many sequences in parallel, aggregate "
                  "t/s for prompt, decode and total (comma-separated list)")
      ->delimiter(',');
  cmd->add_option("--npp", o->npp, "with --npl: prompt tokens per sequence (comma-separated list)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--ntg", o->ntg, "with --npl: generated tokens per sequence (comma-separated list)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of the random token ids")->capture_default_str();
  cmd->add_flag("--bandwidth", o->bandwidth,
                "also measure the read bandwidth (1 GiB buffer, -t threads, the decode matvec's split) and "
                "report each tg test's weight bytes per second against it");
  cmd->add_flag(
      "--profile", o->profile,
      "time every kernel in the timed repetitions and print each kind's share per token (the timing "
      "costs a little speed)");
  cmd->callback([o, &exit_code] { exit_code = bench(*o); });
}

}  // namespace glass::cli
