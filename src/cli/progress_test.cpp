// The progress bar's output, with a clock the test moves: redrawn in place on a terminal, a line per
// quarter otherwise, nothing for a short operation, no 100% when the operation failed.
#include "cli/progress.h"

#include <gtest/gtest.h>

#include <string>

namespace glass::cli {
namespace {

struct Fake {
  std::string written;
  Progress::Clock::time_point now{};
  Progress::Output output(bool terminal, double delay) {
    return {[this](std::string_view s) { written += s; }, [this] { return now; }, terminal, delay};
  }
  void advance(int ms) { now += std::chrono::milliseconds(ms); }
};

TEST(Progress, PlainLinesAtEachQuarterOnceTheDelayHasPassed) {
  Fake f;
  {
    Progress p("quantize", Progress::Unit::Count, "tensors", f.output(false, 0.5));
    p.update(10, 100);  // within the delay: nothing yet
    EXPECT_EQ(f.written, "");
    f.advance(600);
    p.update(30, 100);
    p.update(40, 100);  // same quarter
    p.update(55, 100);
    p.update(99, 100);
    p.finish();
  }
  EXPECT_EQ(f.written,
            "glass: quantize: 30% (30/100 tensors)\n"
            "glass: quantize: 55% (55/100 tensors)\n"
            "glass: quantize: 99% (99/100 tensors)\n"
            "glass: quantize: 100% (100/100 tensors)\n");
}

TEST(Progress, ATerminalRedrawsOneLineAtMostTenTimesASecond) {
  Fake f;
  Progress p("synth", Progress::Unit::Bytes, "", f.output(true, 0));
  p.update(0, 4 << 20);
  p.update(1 << 20, 4 << 20);  // within 100 ms of the last draw
  f.advance(150);
  p.update(2 << 20, 4 << 20);
  p.finish();
  EXPECT_EQ(f.written,
            "\rglass: synth [                              ]   0% 0.0/4.0 MiB\033[K"
            "\rglass: synth [###############               ]  50% 2.0/4.0 MiB\033[K"
            "\rglass: synth [##############################] 100% 4.0/4.0 MiB\033[K\n");
}

// A long load that repacked nothing never reported: no "100% (0.0/0.0 MiB)".
TEST(Progress, AnOperationThatNeverReportedPrintsNothing) {
  Fake f;
  {
    Progress p("load: repacking weights", Progress::Unit::Bytes, "", f.output(false, 0.5));
    f.advance(3000);
    p.finish();
  }
  EXPECT_EQ(f.written, "");
}

TEST(Progress, AShortOperationPrintsNothing) {
  Fake f;
  {
    Progress p("load", Progress::Unit::Bytes, "", f.output(true, 0.5));
    p.update(1, 2);
    f.advance(100);
    p.update(2, 2);
    p.finish();
  }
  EXPECT_EQ(f.written, "");
}

TEST(Progress, AFailedOperationEndsTheLineWithoutClaimingCompletion) {
  Fake f;
  {
    Progress p("quantize", Progress::Unit::Count, "tensors", f.output(true, 0));
    p.update(3, 10);
  }  // no finish(): the operation failed
  EXPECT_EQ(f.written, "\rglass: quantize [#########                     ]  30% 3/10 tensors\033[K\n");
}

}  // namespace
}  // namespace glass::cli
