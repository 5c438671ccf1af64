#include "tokenizer/bpe.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>

#include "tokenizer/unicode.h"

namespace glass::tokenizer {
namespace {

// Lowest rank first, then leftmost (a max-heap comparator: "a comes after b").
bool after(const BpeCandidate& a, const BpeCandidate& b) {
  return a.rank > b.rank || (a.rank == b.rank && a.pos > b.pos);
}

uint64_t mix(uint64_t k) {  // splitmix64's finalizer
  k ^= k >> 30;
  k *= 0xbf58476d1ce4e5b9ULL;
  k ^= k >> 27;
  k *= 0x94d049bb133111ebULL;
  return k ^ (k >> 31);
}

}  // namespace

const BpeModel::Slot* BpeModel::find_merge(int32_t a, int32_t b) const {
  const uint64_t k = key(a, b);
  for (uint64_t h = mix(k) & mask_;; h = (h + 1) & mask_) {
    const Slot& s = table_[h];
    if (s.key == k) return &s;
    if (s.key == kEmpty) return nullptr;
  }
}

void BpeModel::add_merge(int32_t a, int32_t b, int32_t rank, int32_t new_id) {
  const uint64_t k = key(a, b);
  uint64_t h = mix(k) & mask_;
  while (table_[h].key != kEmpty && table_[h].key != k) h = (h + 1) & mask_;
  Slot& s = table_[h];
  if (s.key == k && options_.llama_cpp) return;  // llama.cpp: the first rank of a pair wins; HF: the last
  s = {k, rank, new_id};
}

int32_t BpeModel::char_id(std::string_view ch) const {
  const auto b0 = static_cast<uint8_t>(ch[0]);
  if (ch.size() == 1 && b0 < 0x80) return small_char_ids_[b0];
  if (ch.size() == 2 && b0 >= 0xC2 && b0 <= 0xDF && (static_cast<uint8_t>(ch[1]) & 0xC0) == 0x80) {
    return small_char_ids_[((b0 & 0x1Fu) << 6) | (static_cast<uint8_t>(ch[1]) & 0x3Fu)];
  }
  return vocab_.find(ch);
}

Result<BpeModel> BpeModel::build(const MergeList& merges, ModelVocab vocab, BpeOptions options) {
  BpeModel m(std::move(vocab), std::move(options));
  if (merges.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max() / 4)) {
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("tokenizer: {} merges are too many", merges.size()));
  }
  // Every merge is resolved before the table (16 bytes per slot, twice the merges) is allocated, so
  // a file of merges naming no token is refused without it.
  struct Resolved {
    int32_t a, b, merged;
  };
  std::vector<Resolved> resolved;
  const size_t prefix_len = m.options_.continuing_subword_prefix.size();
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto [a, b] = merges[i];
    const int32_t a_id = m.vocab_.find(a);
    const int32_t b_id = m.vocab_.find(b);
    std::string merged(a);
    merged += b.size() >= prefix_len ? b.substr(prefix_len) : b;
    const int32_t new_id = m.vocab_.find(merged);
    if (a_id < 0 || b_id < 0 || new_id < 0) {
      const std::string_view missing = a_id < 0 ? a : b_id < 0 ? b : std::string_view(merged);
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("tokenizer: merge {} ('{}' '{}'): '{}' is not in the vocabulary", i, a, b, missing));
    }
    resolved.push_back({a_id, b_id, new_id});
  }
  size_t capacity = 16;
  while (capacity < merges.size() * 2) capacity *= 2;
  m.table_.assign(capacity, Slot{});
  m.mask_ = capacity - 1;
  for (size_t i = 0; i < resolved.size(); ++i)
    m.add_merge(resolved[i].a, resolved[i].b, static_cast<int32_t>(i), resolved[i].merged);
  m.small_char_ids_.resize(0x800);
  for (uint32_t cp = 0; cp < 0x800; ++cp) {
    std::string ch;
    unicode::append(ch, cp);
    m.small_char_ids_[cp] = m.vocab_.find(ch);
  }
  if (m.options_.byte_fallback) {
    m.byte_ids_.resize(256);
    for (int b = 0; b < 256; ++b)
      m.byte_ids_[static_cast<size_t>(b)] = m.vocab_.find(fmt::format("<0x{:02X}>", b));
  }
  return m;
}

Status BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out, WordWork& work) const {
  if (word.empty()) return {};
  if (word.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("tokenizer: a word of {} bytes is too long to encode", word.size()));
  }
  if (options_.ignore_merges) {
    if (const int32_t id = vocab_.find(word); id >= 0) {
      out.push_back(id);
      return {};
    }
  }

  // One symbol per character (HF merge_word; llama.cpp splits by UTF-8 lead bytes the same way).
  std::vector<BpeSymbol>& syms = work.symbols;
  syms.clear();
  auto add = [&](int32_t id, size_t begin, size_t len) {
    const auto index = static_cast<int32_t>(syms.size());
    syms.push_back({id, index - 1, index + 1, static_cast<uint32_t>(begin), static_cast<uint32_t>(len)});
  };
  int32_t unk_pending = -1;  // HF: an unk not yet added (fuse_unk grows it)
  size_t unk_begin = 0, unk_len = 0;
  auto flush_unk = [&] {
    if (unk_pending >= 0) add(unk_pending, unk_begin, unk_len);
    unk_pending = -1;
  };
  const bool plain = options_.continuing_subword_prefix.empty() && options_.end_of_word_suffix.empty();
  std::string& piece = work.piece;
  for (size_t i = 0; i < word.size();) {
    const size_t n = std::min(unicode::lead_length(word[i]), word.size() - i);
    const std::string_view ch = word.substr(i, n);
    const bool first = i == 0, last = i + n == word.size();
    int32_t id = -1;
    if (plain || ((first || options_.continuing_subword_prefix.empty()) &&
                  (!last || options_.end_of_word_suffix.empty()))) {
      id = char_id(ch);
    } else {
      piece.clear();
      if (!first) piece += options_.continuing_subword_prefix;
      piece += ch;
      if (last) piece += options_.end_of_word_suffix;
      id = vocab_.find(piece);
    }
    if (id >= 0) {
      flush_unk();
      add(id, i, n);
    } else if (options_.byte_fallback && std::all_of(ch.begin(), ch.end(), [&](char c) {
                 return byte_ids_[static_cast<uint8_t>(c)] >= 0;
               })) {
      // HF adds the byte tokens before an unk still pending.
      for (size_t k = 0; k < n; ++k) add(byte_ids_[static_cast<uint8_t>(ch[k])], i + k, 1);
    } else if (options_.unk_id >= 0) {
      if (unk_pending >= 0 && options_.fuse_unk) {
        unk_len += n;
      } else {
        flush_unk();
        unk_pending = options_.unk_id;
        unk_begin = i;
        unk_len = n;
      }
    } else if (options_.llama_cpp) {
      add(-1, i, n);
    }  // else HF drops the character
    i += n;
  }
  flush_unk();
  if (syms.empty()) return {};
  syms.back().next = -1;

  std::vector<BpeCandidate>& heap = work.heap;
  heap.clear();
  auto try_pair = [&](int32_t left) {
    if (left < 0) return;
    const BpeSymbol& l = syms[static_cast<size_t>(left)];
    if (l.next < 0 || l.id < 0) return;
    const BpeSymbol& r = syms[static_cast<size_t>(l.next)];
    if (r.id < 0) return;
    if (const Slot* m = find_merge(l.id, r.id)) {
      heap.push_back({m->rank, left, m->new_id});
      std::push_heap(heap.begin(), heap.end(), after);
    }
  };
  for (size_t i = 0; i + 1 < syms.size(); ++i) try_pair(static_cast<int32_t>(i));

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), after);
    const BpeCandidate top = heap.back();
    heap.pop_back();
    BpeSymbol& l = syms[static_cast<size_t>(top.pos)];
    if (l.len == 0 || l.next < 0) continue;
    BpeSymbol& r = syms[static_cast<size_t>(l.next)];
    // A stale entry: one side has been merged since it was queued.
    const Slot* m = l.id >= 0 && r.id >= 0 ? find_merge(l.id, r.id) : nullptr;
    if (m == nullptr || m->new_id != top.new_id || m->rank != top.rank) continue;
    l.id = top.new_id;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[static_cast<size_t>(r.next)].prev = top.pos;
    try_pair(l.prev);
    try_pair(top.pos);
  }

  for (int32_t i = 0; i >= 0; i = syms[static_cast<size_t>(i)].next) {
    const BpeSymbol& s = syms[static_cast<size_t>(i)];
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    // llama.cpp: each byte's one-byte token, where there is one.
    for (char c : word.substr(s.begin, s.len)) {
      if (const int32_t b = vocab_.find(std::string_view(&c, 1)); b >= 0) out.push_back(b);
    }
  }
  return {};
}

}  // namespace glass::tokenizer
