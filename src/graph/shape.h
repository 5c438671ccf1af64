#pragma once
// Tensor shapes whose dimensions are constants or named symbols. `T` is the number of tokens in a
// step, `S` the number of cache rows an attention reads (past + new) and `O` the number of the
// step's tokens whose outputs (logits) are wanted: usually 1, the last prompt token, as llama.cpp
// computes only the rows a batch asks for. The sequence state's sizes are symbols too, so one graph
// serves caches of any size (bound per session, kv/state.h): `C` the rows of the full-attention
// pool, `W` the rows of the sliding-window layers' pool, `N` the sequence ids a step may name (rows
// of a block table) and `M` the blocks a sequence's table holds. One compiled plan serves every
// value of the symbols within its bucket; they are bound per step.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glass::graph {

enum class Sym : uint8_t { None, T, S, O, C, W, N, M, R, kSentinel };

std::string_view sym_name(Sym s);
std::optional<Sym> sym_from_name(std::string_view name);

struct Dim {
  Sym sym = Sym::None;
  int64_t value = 0;  // the size when sym == None

  static Dim constant(int64_t v) { return Dim{Sym::None, v}; }
  static Dim symbol(Sym s) { return Dim{s, 0}; }
  bool is_symbolic() const { return sym != Sym::None; }
  bool operator==(const Dim&) const = default;
};

inline constexpr int kMaxRank = 4;

using Shape = std::vector<Dim>;

std::string dim_to_string(const Dim& d);
std::string shape_to_string(const Shape& s);
Shape make_shape(std::initializer_list<int64_t> dims);

// Values of the symbols for one step (or the maxima of a bucket).
struct Bindings {
  std::array<int64_t, static_cast<size_t>(Sym::kSentinel)> values{};
  int64_t& operator[](Sym s) { return values[static_cast<size_t>(s)]; }
  int64_t operator[](Sym s) const { return values[static_cast<size_t>(s)]; }
};

int64_t resolve(const Dim& d, const Bindings& b);
// Concrete extents, row-major, outermost first.
struct Extents {
  std::array<int64_t, kMaxRank> dims{};
  int rank = 0;
  int64_t numel() const;
};
Extents resolve(const Shape& s, const Bindings& b);

}  // namespace glass::graph
