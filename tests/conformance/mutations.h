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

// Features of the issue-8 families, each removed by a rewrite: the synthetic-arch references must
// then fail (tests/conformance/feature_test.cpp), so each feature is shown to matter.
Mutation qkv_bias_removed();          // Qwen2: the q/k/v projection biases dropped
Mutation rope_base_default();         // RoPE base 1e4 instead of the file's rope.freq_base
Mutation qk_norm_removed();           // Qwen3 / Qwen3-MoE: q and k heads not RMS-normed
Mutation partial_rotary_ignored();    // Phi-3: every head dimension rotated (rope.dimension_count ignored)
Mutation fused_gate_up_swapped();     // Phi-3: the [gate | up] halves of ffn_up read the other way round
Mutation experts_top1();              // Qwen3-MoE: one expert per token instead of expert_used_count
Mutation experts_all();               // Qwen3-MoE: every expert (dense) instead of the top-k
Mutation experts_not_renormalised();  // Qwen3-MoE: top-k probabilities used without renormalising

}  // namespace glass::conformance
