#pragma once
// Counts global allocations in the test binary that calls allocations(): linking this object
// replaces the global operator new / delete (all forms, nothrow included, so a sanitizer never
// pairs its own new with this free) with malloc / free plus counters.
#include <cstdint>

namespace glass::test {

uint64_t allocations();
// Bytes held through operator new (as malloc_usable_size counts them) and the most held at once
// since the last reset_peak_bytes(): for tests that a rejected input costs a bounded amount of
// memory, without timing anything.
uint64_t live_bytes();
uint64_t peak_bytes();
void reset_peak_bytes();

}  // namespace glass::test
