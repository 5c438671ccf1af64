#pragma once
// The server's counters and latency histograms, and GET /metrics in Prometheus's text exposition
// format (version 0.0.4): the HTTP layer's own counts plus the engine's gauges read at scrape time.
// One mutex guards it all: a request touches it twice (when its reply is written, when it finishes),
// which costs nothing next to a token.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "glass/engine.h"

namespace glass::server {

// A Prometheus histogram: cumulative buckets with upper bounds, their sum and count.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  // n observations of v at once (an average standing for n gaps; see Metrics::request_finished).
  void observe(double v, uint64_t n = 1);
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  // Every HTTP response written, by status code.
  void response_written(int status);
  // A generation request that ran (whatever its end): its tokens and latencies. The engine reports a
  // request's decode time as a whole, so its inter-token gap is observed as decode_ms / (n - 1), once
  // per gap.
  void request_finished(int64_t prompt_tokens, const GenerateResult& result);

  // The exposition text. Without an engine (the model still loading) its gauges are left out.
  std::string render(const std::optional<Engine::Stats>& engine, uint64_t plans_compiled) const;

 private:
  mutable std::mutex mu_;
  std::map<int, uint64_t> responses_;
  uint64_t prompt_tokens_ = 0;
  uint64_t generated_tokens_ = 0;
  uint64_t finished_ = 0;
  Histogram ttft_;
  Histogram inter_token_;
};

}  // namespace glass::server
