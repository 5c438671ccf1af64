#include "graph/shape.h"

#include <fmt/format.h>

namespace glass::graph {

std::string_view sym_name(Sym s) {
  switch (s) {
    case Sym::T:
      return "T";
    case Sym::S:
      return "S";
    case Sym::O:
      return "O";
    case Sym::C:
      return "C";
    case Sym::W:
      return "W";
    case Sym::N:
      return "N";
    case Sym::M:
      return "M";
    case Sym::R:
      return "R";
    default:
      return "";
  }
}

std::optional<Sym> sym_from_name(std::string_view name) {
  if (name == "T") return Sym::T;
  if (name == "S") return Sym::S;
  if (name == "O") return Sym::O;
  if (name == "C") return Sym::C;
  if (name == "W") return Sym::W;
  if (name == "N") return Sym::N;
  if (name == "M") return Sym::M;
  if (name == "R") return Sym::R;
  return std::nullopt;
}

std::string dim_to_string(const Dim& d) {
  return d.is_symbolic() ? std::string(sym_name(d.sym)) : std::to_string(d.value);
}

std::string shape_to_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + dim_to_string(s[i]);
  return out + "]";
}

Shape make_shape(std::initializer_list<int64_t> dims) {
  Shape s;
  for (auto d : dims) s.push_back(Dim::constant(d));
  return s;
}

int64_t resolve(const Dim& d, const Bindings& b) { return d.is_symbolic() ? b[d.sym] : d.value; }

Extents resolve(const Shape& s, const Bindings& b) {
  Extents e;
  e.rank = static_cast<int>(s.size());
  for (size_t i = 0; i < s.size(); ++i) e.dims[i] = resolve(s[i], b);
  return e;
}

int64_t Extents::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

}  // namespace glass::graph
