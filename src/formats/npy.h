#pragma once
// NumPy .npy files of float32: public (glass/files.h, where they are documented); formats:: names
// them for the modules and tests that read and write references.
#include "glass/files.h"

namespace glass::formats {

using glass::NpyArray;
using glass::parse_npy_f32;
using glass::read_npy_f32;
using glass::write_npy_f32;

}  // namespace glass::formats
