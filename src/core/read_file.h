#pragma once
// Reading a whole small file that a stranger may have made: read_file_bounded and kMaxTextFileBytes
// are public (glass/files.h, where they are documented); this header names them for the modules.
#include "glass/files.h"
