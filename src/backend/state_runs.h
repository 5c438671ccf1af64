#pragma once
// A step's tokens as runs of one sequence each, for the ops over a sequence's state slot
// (graph/ops/delta_net.cpp): each run's tokens [first, end) and the slot slots[q_seq[first]]. Every
// backend checks the step inputs the same way before it reads a state: a sequence id outside the
// slots' table, a slot outside the pool, or a sequence whose tokens are not consecutive is an
// InvalidArgument naming the op, never a read out of bounds.
#include <fmt/format.h>

#include <cstdint>
#include <string_view>

#include "glass/result.h"
#include "graph/graph.h"

namespace glass::backend {

struct StateRun {
  int64_t first = 0, end = 0;
  int32_t slot = 0;
};

// Calls on_run(StateRun) for each run in step order; errors name `backend` ("ref: ", or empty) and
// the node (formatted only then: the step allocates nothing). O(T^2) in the worst case only when a
// step interleaves sequences, which is an error.
template <class OnRun>
Status for_each_state_run(const int32_t* q_seq, int64_t T, const int32_t* slots, int64_t N, int64_t R,
                          const graph::Node& node, std::string_view backend, OnRun&& on_run) {
  auto who = [&] { return fmt::format("{}{} '{}'", backend, graph::op_name(node.op), node.name); };
  for (int64_t t0 = 0; t0 < T;) {
    const int32_t seq = q_seq[t0];
    int64_t t1 = t0 + 1;
    while (t1 < T && q_seq[t1] == seq) ++t1;
    if (seq < 0 || seq >= N || slots[seq] < 0 || slots[seq] >= R)
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("{}: token {} of sequence {} has no state slot among the {} sequences and {} slots",
                      who(), t0, seq, N, R));
    for (int64_t t = t1; t < T; ++t)
      if (q_seq[t] == seq)
        return make_error(
            ErrorCode::InvalidArgument,
            fmt::format("{}: sequence {}'s tokens are not consecutive in the step", who(), seq));
    if (Status st = on_run(StateRun{t0, t1, slots[seq]}); !st) return st;
    t0 = t1;
  }
  return {};
}

}  // namespace glass::backend
