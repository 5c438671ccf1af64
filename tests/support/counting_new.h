#pragma once
// Counts global allocations in the test binary that calls allocations(): linking this object
// replaces the global operator new / delete (all forms, nothrow included, so a sanitizer never
// pairs its own new with this free) with malloc / free plus a counter.
#include <cstdint>

namespace glass::test {

uint64_t allocations();

}  // namespace glass::test
