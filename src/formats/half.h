#pragma once
// f16 / bf16 <-> f32, bit-exact with ggml's: public (glass/half.h, where they are documented);
// formats:: names them for the modules.
#include "glass/half.h"

namespace glass::formats {

using glass::bf16_to_f32;
using glass::f16_to_f32;
using glass::f32_to_bf16;
using glass::f32_to_f16;

}  // namespace glass::formats
