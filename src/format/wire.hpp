// Protocol-buffer wire format: a bounds-checked reader over a byte range and an appending writer.
// The reader never allocates and never reads past its range; every malformed input raises onyx::Error.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"

namespace onyx::wire {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

class Reader {
 public:
  // `what` names the source and `message` the message type in errors; `base` is the range's offset in the source.
  Reader(std::string_view bytes, std::string_view what, const char* message = "message", uint64_t base = 0)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()), begin_(p_), what_(what), message_(message), base_(base) {}

  bool done() const { return p_ == end_; }
  std::string_view what() const { return what_; }
  uint64_t offset() const { return base_ + static_cast<uint64_t>(p_ - begin_); }
  const char* pos() const { return p_; }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p_ == end_) error("truncated varint");
      uint8_t b = static_cast<uint8_t>(*p_++);
      if (shift == 63 && (b & 0x7e)) error("varint overflows 64 bits");
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    error("varint longer than 10 bytes");
  }
  // Returns false at the end of the range; a field number of 0 or over 2^29-1 is malformed.
  bool tag(uint32_t& field, WireType& type) {
    if (p_ == end_) return false;
    uint64_t t = varint();
    field = static_cast<uint32_t>(t >> 3);
    type = static_cast<WireType>(t & 7);
    if (t >> 3 == 0 || t >> 3 > 0x1fffffff) error("invalid field number ", t >> 3);
    if (type > kFixed32) error("invalid wire type ", static_cast<int>(type), " for field ", field);
    return true;
  }
  std::string_view bytes() {
    uint64_t n = varint();
    if (n > static_cast<uint64_t>(end_ - p_)) error("length ", n, " runs past the end (", end_ - p_, " bytes left)");
    std::string_view s(p_, n);
    p_ += n;
    return s;
  }
  uint32_t fixed32() {
    if (end_ - p_ < 4) error("truncated fixed32");
    uint32_t v;
    std::memcpy(&v, p_, 4);
    p_ += 4;
    return v;
  }
  uint64_t fixed64() {
    if (end_ - p_ < 8) error("truncated fixed64");
    uint64_t v;
    std::memcpy(&v, p_, 8);
    p_ += 8;
    return v;
  }
  // Skips one field's value; groups are skipped up to a bounded depth.
  void skip(uint32_t field, WireType type, int depth = 0) {
    switch (type) {
      case kVarint: varint(); return;
      case kFixed64: fixed64(); return;
      case kLen: bytes(); return;
      case kFixed32: fixed32(); return;
      case kStartGroup: {
        if (depth > 32) error("groups nested too deeply");
        uint32_t f;
        WireType t;
        while (tag(f, t)) {
          if (t == kEndGroup) {
            if (f != field) error("mismatched end-group for field ", field);
            return;
          }
          skip(f, t, depth + 1);
        }
        error("unterminated group ", field);
      }
      case kEndGroup: error("unexpected end-group for field ", field);
    }
  }
  [[noreturn]] void error(auto&&... args) const { fail(what_, ": malformed ", message_, " at byte ", offset(), ": ", args...); }

 private:
  const char* p_;
  const char* end_;
  const char* begin_;
  std::string_view what_;
  const char* message_;
  uint64_t base_;
};

// Output built as pieces so that large byte fields (tensor data) are referenced, not copied, until written.
class Sink {
 public:
  static constexpr size_t kViewThreshold = 4096;

  void raw(std::string_view s) {
    if (s.size() >= kViewThreshold) {
      flush();
      pieces_.push_back(Piece{{}, s});
    } else {
      cur_.append(s);
    }
    size_ += s.size();
  }
  void varint(uint64_t v) {
    char buf[10];
    int n = 0;
    do {
      uint8_t b = v & 0x7f;
      v >>= 7;
      buf[n++] = static_cast<char>(v ? (b | 0x80) : b);
    } while (v);
    cur_.append(buf, n);
    size_ += n;
  }
  void key(uint32_t field, WireType t) { varint((static_cast<uint64_t>(field) << 3) | t); }
  void fixed32(uint32_t v) {
    cur_.append(reinterpret_cast<const char*>(&v), 4);
    size_ += 4;
  }
  void fixed64(uint64_t v) {
    cur_.append(reinterpret_cast<const char*>(&v), 8);
    size_ += 8;
  }
  void bytes_field(uint32_t field, std::string_view s) {
    key(field, kLen);
    varint(s.size());
    raw(s);
  }
  // Appends a finished nested message as a length-delimited field.
  void message_field(uint32_t field, Sink&& child) {
    key(field, kLen);
    varint(child.size_);
    child.flush();
    for (auto& p : child.pieces_) {
      if (!p.owned.empty() && p.owned.size() < kViewThreshold) {
        cur_.append(p.owned);
      } else {
        flush();
        pieces_.push_back(std::move(p));
      }
    }
    size_ += child.size_;
  }
  uint64_t size() const { return size_; }
  // Calls out(string_view) for each piece in order.
  template <class F>
  void for_each(F&& out) {
    flush();
    for (auto& p : pieces_) out(p.owned.empty() ? p.view : std::string_view(p.owned));
  }
  std::string str() {
    std::string s;
    s.reserve(size_);
    for_each([&](std::string_view v) { s.append(v); });
    return s;
  }

 private:
  struct Piece {
    std::string owned;
    std::string_view view;
  };
  void flush() {
    if (!cur_.empty()) pieces_.push_back(Piece{std::move(cur_), {}});
    cur_.clear();
  }
  std::vector<Piece> pieces_;
  std::string cur_;
  uint64_t size_ = 0;
};

}  // namespace onyx::wire
