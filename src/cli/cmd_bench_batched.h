#pragma once
// glass bench --npp/--ntg/--npl: llama-batched-bench's test (cmd_bench_batched.cpp).
#include <string>
#include <vector>

#include "cli/common.h"

namespace glass::cli {

struct BatchedBenchOptions {
  ModelOptions model;
  std::vector<int> npp{128}, ntg{128}, npl;
  std::string output = "md";  // md or jsonl
  uint32_t seed = 1;
};

int bench_batched(BatchedBenchOptions o);

}  // namespace glass::cli
