#pragma once
// The command line before CLI11 reads it. llama.cpp spells some options with one dash and several
// letters (-ngl, -sys, -cnv, -npl); CLI11 would read those as a short flag and its value ("-ngl 99"
// as "-n gl 99"), a misleading error or a silent misreading. So: llama.cpp's spellings become
// glass's long names, GPU-only options are accepted with a note (this build has no GPU backend),
// and any other one-dash word of several letters where an option is expected is an unknown option.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "glass/result.h"

namespace glass::cli {

// The arguments to parse (argv[0] first), or the error naming the unknown option. `app` holds the
// subcommands with their options (to tell an option's value from an option).
Result<std::vector<std::string>> normalize_args(CLI::App& app, int argc, const char* const* argv);

}  // namespace glass::cli
