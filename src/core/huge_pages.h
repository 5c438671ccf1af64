#pragma once
// Large buffers filled once at load (a file's text, a vocabulary's tables) fault in a page at a
// time: 25,000 faults for 100 MB of 4 KiB pages, a fifth of a 100 MB tokenizer.json's load on the
// virtual machines glass was measured on. Where transparent huge pages are left to madvise (Debian's
// default), asking for them makes that ~50 faults. A hint: nothing changes where the kernel declines.
#include <cstddef>

namespace glass {

// Asks for transparent huge pages over the 2 MiB-aligned part of [p, p + bytes), before it is first
// written. Buffers under 4 MiB are left alone (no whole huge page to gain, or too little).
void advise_huge_pages(void* p, size_t bytes);

// v.reserve(n) (a std::vector or std::string still to be filled) with that advice on its buffer.
template <class V>
void reserve_huge(V& v, size_t n) {
  v.reserve(n);
  advise_huge_pages(v.data(), v.capacity() * sizeof(*v.data()));
}

}  // namespace glass
