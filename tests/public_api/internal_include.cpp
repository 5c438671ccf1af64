// Compiled by PublicApi.InternalHeaderDoesNotCompile with the glass command's include path: a
// program over the public API that reaches into src/ must not compile. (Never built otherwise.)
#include "cli/common.h"       // found: the command's own headers
#include "glass/llm.h"        // found: include/
#include "runtime/sampler.h"  // not found: src/ is not on the path
