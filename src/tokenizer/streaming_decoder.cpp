#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

namespace glass::tokenizer {
namespace {

bool is_continuation(uint8_t c) { return (c & 0xC0) == 0x80; }

// The length of the UTF-8 sequence lead byte `c` starts (RFC 3629), or 0 for a byte that cannot start a
// multi-byte sequence.
size_t sequence_length(uint8_t c) {
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

// Whether `second` may follow lead byte `lead` (excludes overlongs, surrogates and > U+10FFFF).
bool valid_second(uint8_t lead, uint8_t second) {
  if (lead == 0xE0) return second >= 0xA0 && second <= 0xBF;
  if (lead == 0xED) return second >= 0x80 && second <= 0x9F;
  if (lead == 0xF0) return second >= 0x90 && second <= 0xBF;
  if (lead == 0xF4) return second >= 0x80 && second <= 0x8F;
  return is_continuation(second);
}

// How many bytes at the end of `s` form the valid beginning of an unfinished UTF-8 sequence.
size_t incomplete_tail(const std::string& s) {
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto c = static_cast<uint8_t>(s[n - back]);
    if (is_continuation(c)) continue;
    const size_t len = sequence_length(c);
    if (len <= back) return 0;  // complete, or not a lead byte at all
    for (size_t k = 1; k < back; ++k) {
      const auto next = static_cast<uint8_t>(s[n - back + k]);
      if (k == 1 ? !valid_second(c, next) : !is_continuation(next)) return 0;
    }
    return back;
  }
  return 0;
}

bool ends_with_replacement(const std::string& s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

}  // namespace

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, StreamOptions options)
    : tokenizer_(tokenizer), options_(options), first_(!options.continuation) {
  reset();
}

void StreamingDecoder::reset() {
  first_ = !options_.continuation;
  ids_.clear();
  prefix_.clear();
  prefix_index_ = 0;
  const int32_t context = tokenizer_.impl_->stream_context;
  if (tokenizer_.flavor() == Flavor::HuggingFace && options_.continuation && context >= 0) {
    ids_.push_back(context);
    prefix_ = tokenizer_.hf_decode(ids_, options_.special);
    prefix_index_ = 1;
  }
}

std::string StreamingDecoder::push(int32_t id) {
  if (tokenizer_.flavor() == Flavor::HuggingFace) return push_hf(id);
  std::string piece = tokenizer_.token_to_piece(id, options_.special);
  // Same first-token rule as Tokenizer::decode.
  if (first_ && tokenizer_.add_space_prefix() && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
  first_ = false;
  pending_ += piece;
  const size_t hold = incomplete_tail(pending_);
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

// More ids than any character's bytes need (UTF-8: 4), fewer than make re-decoding them costly.
constexpr size_t kMaxHeldIds = 16;

// HF tokenizers' step_decode_stream: decode the ids since the anchor; once the text grows past the
// anchor's text and does not end in U+FFFD (an unfinished byte sequence), return the new suffix and
// move the anchor to the ids that produced the previous output.
std::string StreamingDecoder::push_hf(int32_t id) {
  if (prefix_.empty() && !ids_.empty()) {
    std::string p = tokenizer_.hf_decode(ids_, options_.special);
    if (!ends_with_replacement(p)) {
      prefix_ = std::move(p);
      prefix_index_ = ids_.size();
    }
  }
  ids_.push_back(id);
  const std::string text = tokenizer_.hf_decode(ids_, options_.special);
  // A text that keeps ending in U+FFFD (bytes that never complete a character, as a hostile model
  // can generate) would be decoded again at every push, quadratic in the stream: past
  // kMaxHeldIds ids since the anchor it is emitted as it is, replacement characters included,
  // which is what decoding the whole stream gives. A character needs at most 4 byte tokens.
  const bool held_too_long = ids_.size() - prefix_index_ > kMaxHeldIds;
  if (text.size() <= prefix_.size()) {
    // Ids that add nothing (special tokens decoded without `special`) would pile up the same way:
    // they change no text, so they leave the window.
    if (held_too_long) ids_.resize(prefix_index_);
    return {};
  }
  if (ends_with_replacement(text) && !held_too_long) return {};
  size_t common = 0;  // HF fails on a text that does not extend the anchor's; this returns what differs
  while (common < prefix_.size() && text[common] == prefix_[common]) ++common;
  std::string out = text.substr(common);
  const size_t new_prefix_index = ids_.size() - prefix_index_;
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<ptrdiff_t>(prefix_index_));
  prefix_ = tokenizer_.hf_decode(ids_, options_.special);
  prefix_index_ = new_prefix_index;
  return out;
}

std::string StreamingDecoder::flush() {
  std::string out;
  if (tokenizer_.flavor() == Flavor::HuggingFace) {
    const std::string text = tokenizer_.hf_decode(ids_, options_.special);
    if (text.size() > prefix_.size() && text.compare(0, prefix_.size(), prefix_) == 0)
      out = text.substr(prefix_.size());
  } else {
    out.swap(pending_);
  }
  reset();
  return out;
}

}  // namespace glass::tokenizer
