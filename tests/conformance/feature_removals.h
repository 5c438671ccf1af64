#pragma once
// Test-only rewrites that take one feature out of a model (issue 8's "remove one feature and show
// the reference check fails"): each returns the graph of the same weights with that feature gone.
// Never linked into glass.
#include <string>
#include <vector>

#include "mutations.h"

namespace glass::conformance {

Mutation sliding_window_removed();       // every attention sees the whole causal prefix
Mutation attention_softcap_removed();    // attention scores uncapped
Mutation final_softcap_removed();        // softcap nodes become the identity
Mutation rope_base_per_kind_removed();   // every layer rotates with the largest (global) base
Mutation altup_correction_removed();     // AltUp streams keep their predictions
Mutation laurel_removed();               // LAuReL's output is its (normed) input only
Mutation activation_sparsity_removed();  // the MLP gate stays dense in every layer
Mutation per_layer_inputs_removed();     // nothing is added to the non-active streams after a layer
// Gemma 3n rebuilt with every layer owning its K/V (layer 20 computes its own instead of reusing
// layer 18's). Rebuilds the graph from `model_path`'s config with n_kv_layers = n_layers.
Mutation kv_sharing_removed(const std::string& model_path);
// SmolLM3 rebuilt with RoPE in every layer (its NoPE layers rotate too).
Mutation nope_removed(const std::string& model_path);
// Every short convolution sees its own token only: no earlier positions, no state between steps.
Mutation conv_history_removed();
// Qwen 3.5: the delta rule's decay exp(g) becomes 1 (g = 0); the attention's sigmoid output gate is
// skipped.
Mutation delta_decay_removed();
Mutation attention_output_gate_removed();
// Gemma 4: global layers rotate every pair (rope_freqs ignored); V is not RMS-normalised; nothing is
// added from the per-layer inputs; layer_output_scale is 1.
Mutation proportional_rope_removed();
Mutation v_norm_removed();
Mutation gemma4_per_layer_inputs_removed();
Mutation layer_output_scale_removed();
// Gemma 4 MoE: the experts' branch contributes nothing; each expert's output scale is 1; the
// experts use plain SwiGLU instead of their own activation (GeGLU; gpt-oss: the clamped SwiGLU).
Mutation experts_removed();
Mutation expert_scale_removed();
Mutation expert_activation_swapped();
// gpt-oss: attention without its sink logits.
Mutation attention_sinks_removed();

}  // namespace glass::conformance
