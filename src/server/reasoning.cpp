#include "server/reasoning.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <utility>

#include "server/json_bound.h"

namespace glass::server {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kStart = "<|start|>";
// What ends a harmony message: <|end|> (more may follow), <|call|> / <|return|> (the generation's
// end tokens, present when a client's stop list or a raw completion keeps them), <|start|> (a new
// message without the end marker).
constexpr std::array<std::string_view, 4> kBodyEnds = {"<|end|>", "<|call|>", "<|return|>", "<|start|>"};
// How a harmony header can begin: the channel, a recipient, or (after <|start|>) the role.
constexpr std::array<std::string_view, 4> kHeaderStarts = {"<|channel|>", "to=", " to=", "assistant"};
// A header longer than this without <|message|> is not one: the reply is read as plain text.
constexpr size_t kMaxHeader = 512;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

size_t leading_space(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && is_space(s[n])) ++n;
  return n;
}

// The word after `key` in `header` (up to whitespace or the next marker), or "".
std::string word_after(std::string_view header, std::string_view key) {
  const size_t at = header.find(key);
  if (at == std::string_view::npos) return {};
  std::string_view rest = header.substr(at + key.size());
  size_t end = 0;
  while (end < rest.size() && !is_space(rest[end]) && rest[end] != '<') ++end;
  return std::string(rest.substr(0, end));
}

}  // namespace

std::optional<ReasoningFormat> reasoning_format_named(std::string_view name) {
  if (name == "none") return ReasoningFormat::None;
  if (name == "auto" || name == "deepseek") return ReasoningFormat::Auto;
  return std::nullopt;
}

ReplySyntax reply_syntax(std::string_view chat_template) {
  if (chat_template.find(kChannel) != std::string_view::npos &&
      chat_template.find(kMessage) != std::string_view::npos)
    return ReplySyntax::Harmony;
  if (chat_template.find(kThinkOpen) != std::string_view::npos &&
      chat_template.find(kThinkClose) != std::string_view::npos)
    return ReplySyntax::ThinkTags;
  return ReplySyntax::Plain;
}

ReplyReading reply_reading(ReplySyntax syntax, ReasoningFormat format, std::string_view prompt_text) {
  if (format == ReasoningFormat::None || syntax == ReplySyntax::Plain) return {};
  ReplyReading r{.syntax = syntax};
  if (syntax == ReplySyntax::ThinkTags) {
    while (!prompt_text.empty() && is_space(prompt_text.back())) prompt_text.remove_suffix(1);
    r.starts_in_reasoning = prompt_text.ends_with(kThinkOpen);
  }
  return r;
}

ReasoningSplitter::ReasoningSplitter(ReplyReading reading) : reading_(reading) {
  switch (reading.syntax) {
    case ReplySyntax::Plain:
      state_ = State::Plain;
      break;
    case ReplySyntax::ThinkTags:
      state_ = reading.starts_in_reasoning ? State::Thinking : State::BeforeThink;
      break;
    case ReplySyntax::Harmony:
      state_ = State::Header;
      break;
  }
}

ReplyParts ReasoningSplitter::feed(std::string_view piece) {
  buf_ += piece;
  return run(/*at_end=*/false);
}

ReplyParts ReasoningSplitter::finish() { return run(/*at_end=*/true); }

ReplyParts ReasoningSplitter::run(bool at_end) {
  ReplyParts out;
  for (;;) {
    if (state_ == State::Plain) {
      out.content += buf_;
      buf_.clear();
      return out;
    }
    const bool more =
        reading_.syntax == ReplySyntax::Harmony ? harmony_step(out, at_end) : think_step(out, at_end);
    if (!more) return out;
  }
}

void ReasoningSplitter::emit_trimmed(ReplyParts& out, std::string_view text, bool reasoning) {
  std::string& to = reasoning ? out.reasoning : out.content;
  if (skip_space_) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    if (text.empty()) return;
    skip_space_ = false;
  }
  size_t keep = text.size();
  while (keep > 0 && is_space(text[keep - 1])) --keep;
  if (keep > 0) {
    to += pending_space_;
    pending_space_.clear();
    to += text.substr(0, keep);
  }
  pending_space_ += text.substr(keep);
}

ReasoningSplitter::Opening ReasoningSplitter::take_opening(std::string_view marker, bool at_end) {
  const size_t lead = leading_space(buf_);
  const std::string_view rest = std::string_view(buf_).substr(lead);
  if (rest.starts_with(marker)) {
    buf_.erase(0, lead + marker.size());
    return Opening::Taken;
  }
  if (!at_end && (rest.empty() || marker.starts_with(rest))) return Opening::Undecided;
  return Opening::Absent;
}

void ReasoningSplitter::end_part() {
  pending_space_.clear();
  skip_space_ = true;
}

bool ReasoningSplitter::think_step(ReplyParts& out, bool at_end) {
  switch (state_) {
    case State::BeforeThink:
      switch (take_opening(kThinkOpen, at_end)) {
        case Opening::Taken:
          state_ = State::Thinking;
          end_part();
          return true;
        case Opening::Undecided:
          return false;
        case Opening::Absent:
          state_ = State::Plain;  // the reply does not think: all of it is content, as written
          return true;
      }
      return false;
    case State::Thinking: {
      const size_t close = buf_.find(kThinkClose);
      if (close != std::string::npos) {
        emit_trimmed(out, std::string_view(buf_).substr(0, close), /*reasoning=*/true);
        buf_.erase(0, close + kThinkClose.size());
        end_part();
        state_ = State::AfterThink;
        return true;
      }
      // Cut inside the thoughts (max_tokens): what was written is all thoughts.
      const size_t hold = at_end ? 0 : partial_marker(buf_, kThinkClose);
      emit_trimmed(out, std::string_view(buf_).substr(0, buf_.size() - hold), /*reasoning=*/true);
      buf_.erase(0, buf_.size() - hold);
      return false;
    }
    case State::AfterThink: {
      buf_.erase(0, leading_space(buf_));
      if (buf_.empty()) return false;
      state_ = State::Plain;
      return true;
    }
    default:
      return false;
  }
}

void ReasoningSplitter::open_body() {
  const std::string recipient = word_after(header_, "to=");
  const std::string channel = word_after(header_, kChannel);
  if (!recipient.empty())
    channel_ = Channel::Call;
  else if (channel == "analysis")
    channel_ = Channel::Reasoning;
  else
    channel_ = Channel::Content;  // final, and commentary meant for the user (a preamble)
  call_body_.clear();
  end_part();
  state_ = State::Body;
}

void ReasoningSplitter::close_body(ReplyParts& out) {
  if (channel_ == Channel::Call) {
    std::string name = word_after(header_, "to=");
    if (name.starts_with("functions.")) name.erase(0, std::string_view("functions.").size());
    const auto args = parse_json_or_discarded(call_body_);
    if (!name.empty() && !args.is_discarded() && args.is_object()) {
      calls_.push_back(
          ToolCall{.name = std::move(name),
                   .arguments = args.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)});
    } else {
      end_part();
      emit_trimmed(out, call_body_, /*reasoning=*/false);
    }
  }
  end_part();
  header_.clear();
}

bool ReasoningSplitter::harmony_step(ReplyParts& out, bool at_end) {
  switch (state_) {
    case State::Header: {
      // Decided on the header's own text (up to <|message|>, or up to what may still become it), so
      // that a reply read whole and one read in pieces decide alike: a header must begin as one does.
      const size_t msg = buf_.find(kMessage);
      std::string seen = header_ + buf_.substr(0, msg);
      if (msg == std::string::npos) seen.resize(seen.size() - partial_marker(seen, kMessage));
      const bool fits = seen.size() <= kMaxHeader;
      const auto begins = [&](bool complete) {
        return std::any_of(kHeaderStarts.begin(), kHeaderStarts.end(), [&](std::string_view h) {
          return seen.starts_with(h) || (!complete && h.starts_with(seen));
        });
      };
      if (msg != std::string::npos && fits && begins(/*complete=*/true)) {
        header_ = seen;
        buf_.erase(0, msg + kMessage.size());
        open_body();
        return true;
      }
      if (msg == std::string::npos && fits && begins(/*complete=*/false) && !at_end) return false;
      // Not a harmony message after all: the reply is plain text, kept as written.
      buf_ = header_ + buf_;
      header_.clear();
      state_ = State::Plain;
      return true;
    }
    case State::Body: {
      size_t end = std::string::npos;
      std::string_view marker;
      for (std::string_view m : kBodyEnds) {
        const size_t at = buf_.find(m);
        if (at < end) end = at, marker = m;
      }
      size_t take = end;
      if (end == std::string::npos) {
        size_t hold = 0;
        if (!at_end)
          for (std::string_view m : kBodyEnds) hold = std::max(hold, partial_marker(buf_, m));
        take = buf_.size() - hold;
      }
      const std::string_view text = std::string_view(buf_).substr(0, take);
      if (channel_ == Channel::Call)
        call_body_ += text;
      else
        emit_trimmed(out, text, channel_ == Channel::Reasoning);
      if (end == std::string::npos) {
        buf_.erase(0, take);
        if (at_end) close_body(out);
        return false;
      }
      buf_.erase(0, end + marker.size());
      close_body(out);
      state_ = marker == kStart ? State::Header : State::BetweenMessages;
      return true;
    }
    case State::BetweenMessages:
      switch (take_opening(kStart, at_end)) {
        case Opening::Taken:
          state_ = State::Header;
          return true;
        case Opening::Undecided:
          return false;
        case Opening::Absent:
          break;
      }
      if (leading_space(buf_) == buf_.size()) {  // only whitespace after the last message: dropped
        buf_.clear();
        return false;
      }
      buf_.erase(0, leading_space(buf_));
      state_ = State::Plain;  // text after the messages, outside any: content
      return true;
    default:
      return false;
  }
}

SplitReply split_reply(ReplyReading reading, std::string_view text) {
  ReasoningSplitter s(reading);
  SplitReply r;
  ReplyParts a = s.feed(text);
  ReplyParts b = s.finish();
  r.parts.reasoning = std::move(a.reasoning) + b.reasoning;
  r.parts.content = std::move(a.content) + b.content;
  r.calls = s.calls();
  return r;
}

}  // namespace glass::server
