// A one-line progress indicator for commands that may take a while (test-onnx, convert, run, profile, bench).
// It draws on stderr, in place ("\r...\033[K"), only when stderr is a terminal and only once a second has passed:
// quick commands, pipes and log files see nothing. A small thread redraws it, so the elapsed time keeps moving
// while one long step (a big model's write, one slow run) is under way.
#pragma once
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

#include "text_escape.hpp"

namespace onyx::cli {

class Progress {
 public:
  // `task` starts the line ("test-onnx"); `fd` is where it draws (a terminal or nothing); `delay` is how long the
  // work must last before anything shows.
  explicit Progress(std::string task, int fd = STDERR_FILENO,
                    std::chrono::milliseconds delay = std::chrono::milliseconds(1000))
      : task_(std::move(task)), fd_(fd), delay_(delay), began_(std::chrono::steady_clock::now()) {
    if (isatty(fd_)) thread_ = std::thread([this] { loop(); });
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { stop(); }

  // Counted work: "[done/total] item". total 0 shows only the item.
  void set(size_t done, size_t total, const std::string& item = {}) {
    if (!thread_.joinable()) return;
    std::lock_guard<std::mutex> lock(mu_);
    done_ = done;
    total_ = total;
    item_ = item;
  }
  void set_item(const std::string& item) { set(0, 0, item); }

  // Prints ordinary output (stdout or stderr) without tearing the indicator: the line is cleared first and
  // redrawn on the next tick.
  template <class Print>
  void above(Print&& print) {
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    if (thread_.joinable()) {
      lock.lock();
      clear_locked();
    }
    print();
    std::cout.flush();
    std::fflush(stdout);
  }

  // Removes the line and stops redrawing (also done by the destructor).
  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      clear_locked();
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::milliseconds(200));
      if (stopping_) break;
      auto elapsed = std::chrono::steady_clock::now() - began_;
      if (elapsed >= delay_) draw_locked(std::chrono::duration<double>(elapsed).count());
    }
  }

  void draw_locked(double seconds) {
    std::string line = "\r" + task_ + ": ";
    if (total_) line += "[" + std::to_string(done_) + "/" + std::to_string(total_) + "] ";
    line += printable(item_);  // names come from models and file names
    char secs[32];
    std::snprintf(secs, sizeof secs, "  %.0f s", seconds);
    std::string tail = secs;
    // A line longer than the terminal wraps, and "\r" then redraws only its last part: cut it to fit.
    size_t width = 80;
    winsize ws{};
    if (ioctl(fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) width = ws.ws_col;
    size_t room = width > tail.size() + 2 ? width - tail.size() - 2 : 0;
    line = cut_to_columns(line, room + 1) + tail + "\033[K";  // +1: the "\r" takes no column
    write_all(line);
    drawn_ = true;
  }

  void clear_locked() {
    if (!drawn_) return;
    write_all("\r\033[K");
    drawn_ = false;
  }

  void write_all(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = ::write(fd_, s.data() + off, s.size() - off);
      if (n <= 0) return;  // a terminal that refuses writes: the indicator is not worth an error
      off += static_cast<size_t>(n);
    }
  }

  // At most `columns` characters, counting a UTF-8 sequence as one and never cutting one in half.
  static std::string cut_to_columns(const std::string& s, size_t columns) {
    size_t count = 0, i = 0;
    for (; i < s.size(); ++i) {
      if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) continue;  // continuation byte
      if (count == columns) break;
      ++count;
    }
    return s.substr(0, i);
  }

  std::string task_;
  int fd_;
  std::chrono::milliseconds delay_;
  std::chrono::steady_clock::time_point began_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::thread thread_;
  bool stopping_ = false;
  bool drawn_ = false;
  size_t done_ = 0, total_ = 0;
  std::string item_;
};

}  // namespace onyx::cli
