// The command line's progress indicator (drawn on terminals only, after a delay) and its text escaping.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <thread>

#include "../../tools/progress.hpp"
#include "../../tools/text_escape.hpp"

namespace onyx::cli {
namespace ONYX_TEST_FILE {

using namespace std::chrono_literals;

// A pseudo-terminal: `terminal` is the side a program writes to (isatty is true there), `reader` the other.
struct Pty {
  int reader = -1, terminal = -1;
  Pty() {
    reader = posix_openpt(O_RDWR | O_NOCTTY);
    if (reader < 0 || grantpt(reader) != 0 || unlockpt(reader) != 0) return;
    terminal = open(ptsname(reader), O_RDWR | O_NOCTTY);
  }
  ~Pty() {
    if (terminal >= 0) close(terminal);
    if (reader >= 0) close(reader);
  }
  // Everything written so far.
  std::string drain() const {
    std::string out;
    char buf[4096];
    pollfd p{reader, POLLIN, 0};
    while (poll(&p, 1, 50) > 0) {
      ssize_t n = read(reader, buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
};

TEST(Progress, SilentWhenTheWorkEndsWithinTheDelay) {
  Pty pty;
  ASSERT_GE(pty.terminal, 0) << "no pseudo-terminal";
  {
    Progress p("quick", pty.terminal);
    p.set(1, 2, "item");
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_EQ(pty.drain(), "");
}

TEST(Progress, DrawsInPlaceOnATerminalAfterTheDelayAndClearsAtTheEnd) {
  Pty pty;
  ASSERT_GE(pty.terminal, 0) << "no pseudo-terminal";
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  {
    Progress shown("onyx test", pty.terminal, 200ms);
    Progress hidden("onyx test", pipe_fds[1], 200ms);  // not a terminal: never draws
    shown.set(3, 7, "node/test_abs\033[2J");
    hidden.set(3, 7, "node/test_abs");
    std::this_thread::sleep_for(700ms);
    shown.above([] {});  // clears the line for ordinary output
  }
  close(pipe_fds[1]);
  char c;
  EXPECT_EQ(read(pipe_fds[0], &c, 1), 0);  // end of file: nothing was written
  close(pipe_fds[0]);
  std::string out = pty.drain();
  EXPECT_EQ(out.rfind("\ronyx test: [3/7] node/test_abs?[2J  ", 0), 0u) << out;  // the escape is defused
  EXPECT_EQ(out.find('\033' + std::string("[2J")), std::string::npos) << out;
  EXPECT_NE(out.find("\r\033[K"), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.size() - 4), "\r\033[K") << out;  // the last thing left is a cleared line
}

TEST(Progress, WaitsASecondByDefault) {
  Pty pty;
  ASSERT_GE(pty.terminal, 0) << "no pseudo-terminal";
  Progress p("slow", pty.terminal);
  p.set_item("step");
  std::this_thread::sleep_for(700ms);
  EXPECT_EQ(pty.drain(), "");
  std::this_thread::sleep_for(600ms);
  EXPECT_EQ(pty.drain().rfind("\rslow: step  ", 0), 0u);  // then "1 s" (or more on a busy machine)
}

TEST(TextEscape, ValidUtf8ReplacesEveryInvalidSequence) {
  EXPECT_EQ(valid_utf8("plain \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "plain \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  const std::string bad = "\xEF\xBF\xBD";
  EXPECT_EQ(valid_utf8("a\x80" "b"), "a" + bad + "b");            // stray continuation byte
  EXPECT_EQ(valid_utf8("\xC0\xAF"), bad + bad);                   // overlong '/'
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), bad + bad + bad);         // a UTF-16 surrogate
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), bad + bad + bad + bad);  // past U+10FFFF
  EXPECT_EQ(valid_utf8("ab\xE2\x82"), "ab" + bad + bad);          // cut short
}

TEST(TextEscape, JsonAndDotQuoting) {
  EXPECT_EQ(json_quote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
  EXPECT_EQ(json_quote("\xFF"), "\"\xEF\xBF\xBD\"");
  EXPECT_EQ(dot_quote("say \"hi\""), "\"say \\\"hi\\\"\"");
  EXPECT_EQ(dot_quote("ends with \\"), "\"ends with \\\\\"");  // the closing quote stays a closing quote
  EXPECT_EQ(dot_quote("\\N & \\G"), "\"\\\\N &amp; \\\\G\"");
  EXPECT_EQ(dot_quote("two\nlines\ttab"), "\"two\\nlines tab\"");
  EXPECT_EQ(printable("a\033[2Jb\x7f"), "a?[2Jb?");
}

}  // namespace
}  // namespace onyx::cli
