#pragma once
// A bound on JSON nesting checked on the text before any parser sees it (nlohmann's DOM is walked
// recursively afterwards): check_json_depth and kMaxJsonDepth are public (glass/files.h, where they
// are documented); this header names them for the modules.
#include "glass/files.h"
