#pragma once
// A forward iterator over a container read by index (c[i] builds the element, e.g. a string_view
// into a packed buffer), for range-for over the compact string tables.
#include <cstddef>
#include <iterator>

namespace glass {

template <class Container, class Value>
class IndexIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = Value;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = Value;

  IndexIterator() = default;
  IndexIterator(const Container* c, size_t i) : c_(c), i_(i) {}
  Value operator*() const { return (*c_)[i_]; }
  IndexIterator& operator++() {
    ++i_;
    return *this;
  }
  IndexIterator operator++(int) {
    IndexIterator old = *this;
    ++i_;
    return old;
  }
  bool operator==(const IndexIterator& o) const { return i_ == o.i_; }

 private:
  const Container* c_ = nullptr;
  size_t i_ = 0;
};

}  // namespace glass
