#include "tokenizer/pre_tokenizer.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace glass::tokenizer {
namespace {

// A run of a word: [begin, end) and whether the pattern matched it.
struct Segment {
  size_t begin;
  size_t end;
  bool match;
};

// Segments covering `n` bytes from sorted, non-overlapping matches (HF Pattern::find_matches).
std::vector<Segment> cover(size_t n, const std::vector<std::pair<size_t, size_t>>& matches) {
  std::vector<Segment> segs;
  size_t prev = 0;
  for (const auto& [b, e] : matches) {
    if (prev != b) segs.push_back({prev, b, false});
    segs.push_back({b, e, true});
    prev = e;
  }
  if (prev != n) segs.push_back({prev, n, false});
  return segs;
}

// Every character `pred` accepts is a match of its own (HF's Fn(char) -> bool pattern).
template <typename Pred>
std::vector<Segment> char_segments(std::string_view s, Pred pred) {
  std::vector<Segment> segs;
  size_t last = 0;
  for (size_t i = 0; i < s.size();) {
    const unicode::Char c = unicode::decode(s, i);
    if (c.valid && pred(c.cp)) {
      if (last < i) segs.push_back({last, i, false});
      segs.push_back({i, i + c.len, true});
      last = i + c.len;
    }
    i += c.len;
  }
  if (last < s.size()) segs.push_back({last, s.size(), false});
  return segs;
}

// HF NormalizedString::split: the pieces a behavior keeps.
std::vector<std::pair<size_t, size_t>> apply_behavior(const std::vector<Segment>& segs, SplitBehavior b) {
  std::vector<std::pair<size_t, size_t>> out;
  bool previous = false;
  switch (b) {
    case SplitBehavior::Isolated:
      for (const Segment& s : segs) out.emplace_back(s.begin, s.end);
      break;
    case SplitBehavior::Removed:
      for (const Segment& s : segs) {
        if (!s.match) out.emplace_back(s.begin, s.end);
      }
      break;
    case SplitBehavior::Contiguous:
      for (const Segment& s : segs) {
        if (s.match == previous && !out.empty()) {
          out.back().second = s.end;
        } else {
          out.emplace_back(s.begin, s.end);
        }
        previous = s.match;
      }
      break;
    case SplitBehavior::MergedWithPrevious:
      for (const Segment& s : segs) {
        if (s.match && !previous && !out.empty()) {
          out.back().second = s.end;
        } else {
          out.emplace_back(s.begin, s.end);
        }
        previous = s.match;
      }
      break;
    case SplitBehavior::MergedWithNext:
      for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
        if (it->match && !previous && !out.empty()) {
          out.back().first = it->begin;
        } else {
          out.emplace_back(it->begin, it->end);
        }
        previous = it->match;
      }
      std::reverse(out.begin(), out.end());
      break;
  }
  return out;
}

// Appends the non-empty pieces of `w` to `out`; only a piece at offset 0 keeps at_text_start.
void emit(const Word& w, const std::vector<std::pair<size_t, size_t>>& pieces, std::vector<Word>& out) {
  for (const auto& [b, e] : pieces) {
    if (e > b) out.push_back({w.text.substr(b, e - b), w.at_text_start && b == 0});
  }
}

Status regex_segments(const Regex& re, std::string_view s, bool invert, std::vector<Segment>& segs) {
  std::vector<std::pair<size_t, size_t>> matches;
  if (Status st = re.find_all(s, matches); !st) return st;
  segs = cover(s.size(), matches);
  if (invert) {
    for (Segment& seg : segs) seg.match = !seg.match;
  }
  return {};
}

// One step over one word.
struct Split {
  const Word& w;
  std::vector<Word>& out;

  Status operator()(const SplitRegex& s) {
    if (w.text.empty()) return {};
    std::vector<Segment> segs;
    if (Status st = regex_segments(s.pattern, w.text, s.invert, segs); !st) return st;
    emit(w, apply_behavior(segs, s.behavior), out);
    return {};
  }
  Status operator()(const ByteLevelSplit& s) {
    Word prefixed = w;
    if (s.add_prefix_space && (prefixed.text.empty() || prefixed.text[0] != ' '))
      prefixed.text = " " + prefixed.text;
    std::vector<Word> pieces;
    if (s.use_regex && !prefixed.text.empty()) {
      std::vector<Segment> segs;
      if (Status st = regex_segments(s.gpt2, prefixed.text, false, segs); !st) return st;
      emit(prefixed, apply_behavior(segs, SplitBehavior::Isolated), pieces);
    } else if (!prefixed.text.empty()) {
      pieces.push_back(std::move(prefixed));
    }
    for (Word& p : pieces) out.push_back({unicode::bytes_to_chars(p.text), p.at_text_start});
    return {};
  }
  Status operator()(const MetaspaceSplit& m) {
    Word r{replace_spaces(w.text, m.replacement), w.at_text_start};
    const bool starts = r.text.compare(0, m.replacement.size(), m.replacement) == 0;
    if (!starts &&
        (m.prepend == PrependScheme::Always || (m.prepend == PrependScheme::First && w.at_text_start))) {
      r.text.insert(0, m.replacement);
    }
    if (!m.split) {
      if (!r.text.empty()) out.push_back(std::move(r));
      return {};
    }
    std::vector<Segment> segs;
    size_t last = 0;
    for (size_t pos = r.text.find(m.replacement); pos != std::string::npos;
         pos = r.text.find(m.replacement, pos + m.replacement.size())) {
      if (last < pos) segs.push_back({last, pos, false});
      segs.push_back({pos, pos + m.replacement.size(), true});
      last = pos + m.replacement.size();
    }
    if (last < r.text.size()) segs.push_back({last, r.text.size(), false});
    emit(r, apply_behavior(segs, SplitBehavior::MergedWithNext), out);
    return {};
  }
  Status operator()(const WhitespaceSplit& ws) {
    if (ws.only_spaces) {
      emit(w, apply_behavior(char_segments(w.text, unicode::is_white_space), SplitBehavior::Removed), out);
      return {};
    }
    // Runs of word characters and runs of other non-space characters; whitespace is dropped.
    enum Kind { kNone, kWord, kOther };
    std::vector<std::pair<size_t, size_t>> pieces;
    Kind current = kNone;
    for (size_t i = 0; i < w.text.size();) {
      const unicode::Char c = unicode::decode(w.text, i);
      const Kind k = !c.valid                        ? kOther
                     : unicode::is_word(c.cp)        ? kWord
                     : unicode::is_white_space(c.cp) ? kNone
                                                     : kOther;
      if (k != kNone) {
        if (k == current) {
          pieces.back().second = i + c.len;
        } else {
          pieces.emplace_back(i, i + c.len);
        }
      }
      current = k;
      i += c.len;
    }
    emit(w, pieces, out);
    return {};
  }
  Status operator()(const DigitsSplit& d) {
    const auto segs = char_segments(w.text, unicode::is_number);
    emit(w, apply_behavior(segs, d.individual ? SplitBehavior::Isolated : SplitBehavior::Contiguous), out);
    return {};
  }
  Status operator()(const PunctuationSplit& p) {
    emit(w, apply_behavior(char_segments(w.text, unicode::is_bert_punctuation), p.behavior), out);
    return {};
  }
  Status operator()(const BertSplit&) {
    std::vector<Word> words;
    emit(w, apply_behavior(char_segments(w.text, unicode::is_white_space), SplitBehavior::Removed), words);
    for (const Word& x : words) {
      emit(x, apply_behavior(char_segments(x.text, unicode::is_bert_punctuation), SplitBehavior::Isolated),
           out);
    }
    return {};
  }
  Status operator()(const CharDelimiterSplit& c) {
    const uint32_t d = c.delimiter;
    emit(w,
         apply_behavior(char_segments(w.text, [d](uint32_t cp) { return cp == d; }), SplitBehavior::Removed),
         out);
    return {};
  }

  static std::string replace_spaces(std::string_view s, std::string_view replacement) {
    std::string r;
    r.reserve(s.size() + 8);
    for (char c : s) {
      if (c == ' ') {
        r += replacement;
      } else {
        r += c;
      }
    }
    return r;
  }
};

}  // namespace

Status PreTokenizer::apply(std::vector<Word>& words) const {
  std::vector<Word> next;
  for (const PreTokenizerStep& step : steps_) {
    next.clear();
    next.reserve(words.size() * 2);
    for (const Word& w : words) {
      if (Status s = std::visit(Split{w, next}, step); !s) return s;
    }
    words.swap(next);
  }
  // Steps that pass a word through unchanged may leave an empty one (an empty input).
  std::erase_if(words, [](const Word& w) { return w.text.empty(); });
  return {};
}

Result<ByteLevelSplit> make_byte_level(bool add_prefix_space, bool use_regex) {
  Result<Regex> re =
      Regex::compile("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+");
  if (!re) return re.error();
  return ByteLevelSplit{add_prefix_space, use_regex, std::move(re).value()};
}

}  // namespace glass::tokenizer
