#pragma once
// Output files written through an exclusive temporary file renamed over the target when complete:
// glass::OutputFile is public (glass/files.h, where it is documented); formats:: names it for the
// GGUF and npy writers.
#include "glass/files.h"

namespace glass::formats {

using glass::OutputFile;

}  // namespace glass::formats
