#pragma once
// The bounded JSON parser is public (glass/json.h, where it is documented); this header names it
// for the modules.
#include "glass/json.h"
