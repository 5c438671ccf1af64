#pragma once
// Test-only graph rewrites that plant the classic transformer bugs, so the conformance suite can
// prove it catches each one. Never linked into glass.
#include <string>
#include <vector>

#include "runtime/model_impl.h"

namespace glass::conformance {

struct Mutation {
  std::string name;
  GraphRewrite rewrite;
};

Mutation rope_pairs_swapped();         // normal <-> NeoX pairing
Mutation mask_polarity_flipped();      // kv_pos <= q_pos becomes q_pos <= kv_pos
Mutation frontier_one_too_many();      // query t also sees position t + 1
Mutation frontier_one_too_few();       // query t no longer sees its own position
Mutation gqa_heads_mapped_wrong();     // q head h reads kv head h % n_kv instead of h / group
Mutation rms_norm_eps_ignored();       // eps = 0
Mutation qk_projections_transposed();  // x W instead of x W^T for square q/k projections

std::vector<Mutation> all_mutations();

}  // namespace glass::conformance
