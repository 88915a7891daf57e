// A regular-expression matcher with RE2's syntax and semantics, for RegexFullMatch: the pattern is parsed into a
// tree, compiled to a small program and run as a Thompson/Pike NFA simulation over the code points of the UTF-8
// text, so matching takes time linear in the text (no backtracking, no recursion over the text).
//
// Supported (as in RE2): literals (UTF-8), `.`, classes `[...]` `[^...]` with ranges, escapes, Perl classes and
// POSIX `[:name:]`/`[:^name:]`; `\d \D \s \S \w \W` (ASCII, \s = [\t\n\f\r ]); `\a \f \t \n \r \v`, `\xHH`,
// `\x{H...}`, octal `\0..`/`\1NN`, `\Q...\E`; escaped punctuation; groups `( )`, `(?: )`, `(?P<name> )`,
// `(?<name> )`; flags `(?imsU)`, `(?imsU: )` with `-` negation; alternation; `* + ? {n} {n,} {n,m}` and their lazy
// forms (laziness does not change whether a full match exists); repeat counts up to 1000; anchors `^ $ \A \z`
// (line anchors under (?m)) and `\b \B` (ASCII word boundaries).
// Refused with an error, as RE2 refuses them: backreferences, lookaround, possessive and doubled repetition
// operators, `\C`, `\Z` and unknown escapes. Also refused: Unicode classes `\p..`/`\P..` (not implemented here).
// Case-insensitive matching folds with the case tables of unicode.hpp. Bytes that are not valid UTF-8 match
// only `.`, negated classes and `\D \S \W`.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "ops/text/unicode.hpp"

namespace onyx::ops::text {

class Regex {
 public:
  explicit Regex(std::string_view pattern) {
    Parser p(*this, pattern);
    std::unique_ptr<Node> root = p.parse();
    size_t need = program_size(*root);
    if (need > kMaxProgram) fail("regex pattern is too large: it needs more than ", kMaxProgram, " instructions");
    prog_.reserve(need + 1);
    emit(*root);
    prog_.push_back(Inst{Op::Match, 0, 0});
  }

  bool full_match(std::string_view s) const {
    std::vector<uint32_t> cps;
    cps.reserve(s.size());
    for (size_t i = 0; i < s.size();) cps.push_back(decode_utf8(s, i));
    const size_t n = cps.size();
    std::vector<int> cur, next, stack;
    std::vector<size_t> mark(prog_.size(), SIZE_MAX);
    size_t gen = 0;
    auto add = [&](std::vector<int>& list, int start, size_t pos) {
      stack.clear();
      stack.push_back(start);
      while (!stack.empty()) {
        int pc = stack.back();
        stack.pop_back();
        if (mark[pc] == gen) continue;
        mark[pc] = gen;
        const Inst& in = prog_[pc];
        switch (in.op) {
          case Op::Jmp: stack.push_back(in.x); break;
          case Op::Split:
            stack.push_back(in.y);
            stack.push_back(in.x);
            break;
          case Op::Assert:
            if (assertion_holds(static_cast<AssertKind>(in.x), cps, pos)) stack.push_back(pc + 1);
            break;
          case Op::Class:
          case Op::Match: list.push_back(pc); break;
        }
      }
    };
    add(cur, 0, 0);
    for (size_t i = 0; i < n; ++i) {
      ++gen;
      next.clear();
      for (int pc : cur) {
        const Inst& in = prog_[pc];
        if (in.op == Op::Class && class_has(classes_[in.x], cps[i])) add(next, pc + 1, i + 1);
      }
      std::swap(cur, next);
      if (cur.empty()) return false;
    }
    for (int pc : cur)
      if (prog_[pc].op == Op::Match) return true;
    return false;
  }

 private:
  static constexpr size_t kMaxProgram = 200000;
  static constexpr int kMaxRepeat = 1000;
  static constexpr int kMaxDepth = 500;
  static constexpr uint32_t kUniverseEnd = kInvalidBase + 0xFF;  // code points and invalid bytes

  using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;
  enum class Op { Class, Split, Jmp, Assert, Match };
  enum class AssertKind { BeginText, EndText, BeginLine, EndLine, WordBoundary, NotWordBoundary };
  struct Inst {
    Op op;
    int x, y;  // Class: class index; Split: both targets; Jmp: target; Assert: kind
  };
  struct Node {
    enum Kind { Empty, Class, Concat, Alt, Repeat, Assert } kind = Empty;
    int value = 0;  // Class: class index; Assert: kind
    int min = 0, max = 0;  // Repeat; max -1: unbounded
    std::vector<std::unique_ptr<Node>> kids;
  };

  std::vector<Inst> prog_;
  std::vector<Ranges> classes_;

  static bool is_word(uint32_t c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  static bool assertion_holds(AssertKind k, const std::vector<uint32_t>& cps, size_t pos) {
    const bool at_begin = pos == 0, at_end = pos == cps.size();
    switch (k) {
      case AssertKind::BeginText: return at_begin;
      case AssertKind::EndText: return at_end;
      case AssertKind::BeginLine: return at_begin || cps[pos - 1] == '\n';
      case AssertKind::EndLine: return at_end || cps[pos] == '\n';
      case AssertKind::WordBoundary:
      case AssertKind::NotWordBoundary: {
        bool a = !at_begin && is_word(cps[pos - 1]);
        bool b = !at_end && is_word(cps[pos]);
        return (a != b) == (k == AssertKind::WordBoundary);
      }
    }
    return false;
  }
  static bool class_has(const Ranges& r, uint32_t c) {
    auto it = std::upper_bound(r.begin(), r.end(), c, [](uint32_t v, const auto& p) { return v < p.first; });
    if (it == r.begin()) return false;
    --it;
    return c <= it->second;
  }
  static void normalize(Ranges& r) {
    std::sort(r.begin(), r.end());
    Ranges out;
    for (const auto& p : r) {
      if (!out.empty() && p.first <= out.back().second + 1) out.back().second = std::max(out.back().second, p.second);
      else out.push_back(p);
    }
    r = std::move(out);
  }
  static Ranges negate(const Ranges& r) {
    Ranges out;
    uint32_t next = 0;
    for (const auto& p : r) {
      if (p.first > next) out.emplace_back(next, p.first - 1);
      next = p.second + 1;
    }
    if (next <= kUniverseEnd) out.emplace_back(next, kUniverseEnd);
    return out;
  }
  // Adds the other cases of every letter in r (mappings exist only below U+10000).
  static void fold(Ranges& r) {
    Ranges extra;
    for (const auto& p : r) {
      uint32_t hi = std::min<uint32_t>(p.second, 0xFFFF);
      for (uint32_t c = p.first; c <= hi; ++c) {
        uint32_t l = to_lower_cp(c), u = to_upper_cp(c);
        if (l != c) extra.emplace_back(l, l);
        if (u != c) extra.emplace_back(u, u);
        if (u != c) {
          uint32_t ul = to_lower_cp(u);
          if (ul != c && ul != l) extra.emplace_back(ul, ul);
        }
      }
    }
    r.insert(r.end(), extra.begin(), extra.end());
    normalize(r);
  }

  static size_t sat_add(size_t a, size_t b) { return a > kMaxProgram * 4 || b > kMaxProgram * 4 ? kMaxProgram * 4 + 1 : a + b; }
  static size_t sat_mul(size_t a, size_t b) {
    if (a == 0 || b == 0) return 0;
    return a > (kMaxProgram * 4) / b ? kMaxProgram * 4 + 1 : a * b;
  }
  size_t program_size(const Node& n) const {
    switch (n.kind) {
      case Node::Empty: return 0;
      case Node::Class:
      case Node::Assert: return 1;
      case Node::Concat: {
        size_t s = 0;
        for (const auto& k : n.kids) s = sat_add(s, program_size(*k));
        return s;
      }
      case Node::Alt: {
        size_t s = 0;
        for (const auto& k : n.kids) s = sat_add(s, sat_add(program_size(*k), 2));
        return s;
      }
      case Node::Repeat: {
        size_t one = program_size(*n.kids[0]);
        size_t copies = n.max < 0 ? static_cast<size_t>(std::max(n.min, 1)) : static_cast<size_t>(n.max);
        return sat_add(sat_mul(sat_add(one, 2), copies), 2);
      }
    }
    return 0;
  }

  int here() const { return static_cast<int>(prog_.size()); }
  void emit(const Node& n) {
    switch (n.kind) {
      case Node::Empty: return;
      case Node::Class: prog_.push_back(Inst{Op::Class, n.value, 0}); return;
      case Node::Assert: prog_.push_back(Inst{Op::Assert, n.value, 0}); return;
      case Node::Concat:
        for (const auto& k : n.kids) emit(*k);
        return;
      case Node::Alt: {
        // split L1, next; L1: e1; jmp end; next: split L2, ... ; last alternative without split.
        std::vector<int> jumps;
        for (size_t i = 0; i < n.kids.size(); ++i) {
          if (i + 1 < n.kids.size()) {
            int split = here();
            prog_.push_back(Inst{Op::Split, split + 1, 0});
            emit(*n.kids[i]);
            jumps.push_back(here());
            prog_.push_back(Inst{Op::Jmp, 0, 0});
            prog_[split].y = here();
          } else {
            emit(*n.kids[i]);
          }
        }
        for (int j : jumps) prog_[j].x = here();
        return;
      }
      case Node::Repeat: {
        const Node& e = *n.kids[0];
        if (n.max < 0) {
          // min copies, the last one looping (x+ = x x*); min 0: a star.
          for (int i = 0; i + 1 < n.min; ++i) emit(e);
          if (n.min >= 1) {
            int top = here();
            emit(e);
            prog_.push_back(Inst{Op::Split, top, here() + 1});
          } else {
            int split = here();
            prog_.push_back(Inst{Op::Split, split + 1, 0});
            emit(e);
            prog_.push_back(Inst{Op::Jmp, split, 0});
            prog_[split].y = here();
          }
          return;
        }
        for (int i = 0; i < n.min; ++i) emit(e);
        // (max - min) optional copies, nested: (e(e(e)?)?)?
        std::vector<int> splits;
        for (int i = n.min; i < n.max; ++i) {
          splits.push_back(here());
          prog_.push_back(Inst{Op::Split, here() + 1, 0});
          emit(e);
        }
        for (int s : splits) prog_[s].y = here();
        return;
      }
    }
  }

  class Parser {
   public:
    Parser(Regex& re, std::string_view pattern) : re_(re), src_(pattern) {
      for (size_t i = 0; i < pattern.size();) {
        uint32_t c = decode_utf8(pattern, i);
        if (c >= kInvalidBase) fail("regex pattern is not valid UTF-8");
        cps_.push_back(c);
      }
    }
    std::unique_ptr<Node> parse() {
      auto n = parse_alt(0);
      if (pos_ < cps_.size()) bad("unexpected )");
      return n;
    }

   private:
    struct Flags {
      bool i = false, m = false, s = false;
    };
    Regex& re_;
    std::string_view src_;
    std::vector<uint32_t> cps_;
    size_t pos_ = 0;
    Flags flags_;

    [[noreturn]] void bad(const std::string& what) const {
      fail("invalid regex pattern '", src_, "': ", what);
    }
    bool more() const { return pos_ < cps_.size(); }
    uint32_t peek(size_t ahead = 0) const { return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : UINT32_MAX; }
    uint32_t take() { return cps_[pos_++]; }

    std::unique_ptr<Node> make(Node::Kind k) {
      auto n = std::make_unique<Node>();
      n->kind = k;
      return n;
    }
    std::unique_ptr<Node> class_node(Ranges r, bool negated = false) {
      normalize(r);
      if (flags_.i) fold(r);
      if (negated) r = negate(r);
      auto n = make(Node::Class);
      n->value = static_cast<int>(re_.classes_.size());
      re_.classes_.push_back(std::move(r));
      return n;
    }
    std::unique_ptr<Node> literal(uint32_t c) { return class_node(Ranges{{c, c}}); }
    std::unique_ptr<Node> assertion(AssertKind k) {
      auto n = make(Node::Assert);
      n->value = static_cast<int>(k);
      return n;
    }

    std::unique_ptr<Node> parse_alt(int depth) {
      if (depth > kMaxDepth) bad("nesting is too deep");
      auto first = parse_concat(depth);
      if (peek() != '|') return first;
      auto alt = make(Node::Alt);
      alt->kids.push_back(std::move(first));
      while (peek() == '|') {
        take();
        alt->kids.push_back(parse_concat(depth));
      }
      return alt;
    }

    std::unique_ptr<Node> parse_concat(int depth) {
      auto cat = make(Node::Concat);
      while (more() && peek() != '|' && peek() != ')') {
        // A flag group without ':' changes the flags for the rest of the enclosing group.
        if (peek() == '(' && peek(1) == '?' && try_flag_group()) continue;
        if (peek() == '\\' && peek(1) == 'Q') {
          pos_ += 2;
          while (more() && !(peek() == '\\' && peek(1) == 'E')) {
            uint32_t c = take();
            if (c == '\\' && peek() == '\\') take();
            cat->kids.push_back(literal(c));
          }
          if (more()) pos_ += 2;
          continue;
        }
        auto atom = parse_atom(depth);
        cat->kids.push_back(parse_repeats(std::move(atom)));
      }
      return cat;
    }

    // (?flags) or (?flags: ...). Returns true for the former (consumed); false leaves the input for parse_atom.
    bool try_flag_group() {
      size_t p = pos_ + 2;
      Flags f = flags_;
      bool neg = false, any = false;
      while (p < cps_.size()) {
        uint32_t c = cps_[p];
        if (c == ')') {
          if (!any && !neg) bad("missing flags in (?)");
          flags_ = f;
          pos_ = p + 1;
          return true;
        }
        if (c == ':') return false;
        if (c == '-') {
          if (neg) bad("bad flag group");
          neg = true;
        } else if (c == 'i') f.i = !neg, any = true;
        else if (c == 'm') f.m = !neg, any = true;
        else if (c == 's') f.s = !neg, any = true;
        else if (c == 'U') any = true;  // ungreedy: no effect on whether a full match exists
        else return false;
        ++p;
      }
      return false;
    }

    std::unique_ptr<Node> parse_group(int depth) {
      take();  // (
      Flags saved = flags_;
      if (peek() == '?') {
        take();
        uint32_t c = peek();
        if (c == 'P' && peek(1) == '<') {
          pos_ += 2;
          parse_group_name();
        } else if (c == '<' && peek(1) != '=' && peek(1) != '!') {
          take();
          parse_group_name();
        } else if (c == '=' || c == '!' || (c == '<' && (peek(1) == '=' || peek(1) == '!'))) {
          bad("lookaround assertions are not supported by RE2");
        } else if (c == 'P' && peek(1) == '=') {
          bad("backreferences are not supported by RE2");
        } else {
          // flags followed by ':'
          bool neg = false;
          while (more() && peek() != ':') {
            uint32_t f = take();
            if (f == '-' && !neg) neg = true;
            else if (f == 'i') flags_.i = !neg;
            else if (f == 'm') flags_.m = !neg;
            else if (f == 's') flags_.s = !neg;
            else if (f == 'U') {
            } else bad("unknown group flag");
          }
          if (!more()) bad("missing )");
          take();  // :
        }
      }
      auto inner = parse_alt(depth + 1);
      if (peek() != ')') bad("missing )");
      take();
      flags_ = saved;
      return inner;
    }
    void parse_group_name() {
      size_t start = pos_;
      while (more() && peek() != '>') {
        uint32_t c = take();
        if (!is_word(c)) bad("invalid group name");
      }
      if (!more() || pos_ == start) bad("invalid group name");
      take();  // >
    }

    std::unique_ptr<Node> parse_atom(int depth) {
      uint32_t c = peek();
      switch (c) {
        case '(': return parse_group(depth);
        case '[': return parse_class();
        case '*':
        case '+':
        case '?': bad("missing argument to repetition operator");
        case '{': {
          size_t save = pos_;
          int lo, hi;
          if (parse_counts(lo, hi)) bad("missing argument to repetition operator");
          pos_ = save;
          take();
          return literal('{');
        }
        case '.': {
          take();
          Ranges r = {{0, kUniverseEnd}};
          if (!flags_.s) r = {{0, '\n' - 1}, {'\n' + 1, kUniverseEnd}};
          auto n = make(Node::Class);
          n->value = static_cast<int>(re_.classes_.size());
          re_.classes_.push_back(std::move(r));
          return n;
        }
        case '^': take(); return assertion(flags_.m ? AssertKind::BeginLine : AssertKind::BeginText);
        case '$': take(); return assertion(flags_.m ? AssertKind::EndLine : AssertKind::EndText);
        case '\\': return parse_escape_atom();
        default: take(); return literal(c);
      }
    }

    // {n}, {n,}, {n,m} at pos_; on success consumes it. Counts above 1000 are an error (as in RE2).
    bool parse_counts(int& lo, int& hi) {
      size_t p = pos_;
      if (p >= cps_.size() || cps_[p] != '{') return false;
      ++p;
      auto number = [&](int& out) {
        size_t start = p;
        long v = 0;
        while (p < cps_.size() && cps_[p] >= '0' && cps_[p] <= '9') {
          v = v * 10 + (cps_[p] - '0');
          if (v > 100000) v = 100000;
          ++p;
        }
        out = static_cast<int>(v);
        return p > start;
      };
      if (!number(lo)) return false;
      if (p < cps_.size() && cps_[p] == ',') {
        ++p;
        if (p < cps_.size() && cps_[p] == '}') hi = -1;
        else if (!number(hi)) return false;
      } else {
        hi = lo;
      }
      if (p >= cps_.size() || cps_[p] != '}') return false;
      pos_ = p + 1;
      if (lo > kMaxRepeat || hi > kMaxRepeat || (hi >= 0 && hi < lo)) bad("bad repetition operator");
      return true;
    }

    std::unique_ptr<Node> parse_repeats(std::unique_ptr<Node> atom) {
      bool repeated = false;
      while (more()) {
        uint32_t c = peek();
        int lo, hi;
        if (c == '*') lo = 0, hi = -1, take();
        else if (c == '+') lo = 1, hi = -1, take();
        else if (c == '?') lo = 0, hi = 1, take();
        else if (c == '{') {
          if (!parse_counts(lo, hi)) break;
        } else break;
        if (repeated) bad("bad repetition operator");
        repeated = true;
        if (peek() == '?') take();  // lazy
        auto r = make(Node::Repeat);
        r->min = lo;
        r->max = hi;
        r->kids.push_back(std::move(atom));
        atom = std::move(r);
        if (peek() == '*' || peek() == '+' || peek() == '?') bad("bad repetition operator");
      }
      return atom;
    }

    static void add_perl_class(uint32_t c, Ranges& r) {
      switch (c) {
        case 'd': r.emplace_back('0', '9'); break;
        case 's':
          r.emplace_back('\t', '\n');
          r.emplace_back('\f', '\r');
          r.emplace_back(' ', ' ');
          break;
        case 'w':
          r.emplace_back('0', '9');
          r.emplace_back('A', 'Z');
          r.emplace_back('_', '_');
          r.emplace_back('a', 'z');
          break;
      }
    }
    static bool is_perl_class(uint32_t c) { return c == 'd' || c == 's' || c == 'w' || c == 'D' || c == 'S' || c == 'W'; }
    static Ranges perl_class(uint32_t c) {
      Ranges r;
      add_perl_class(c | 0x20, r);
      normalize(r);
      if (c == 'D' || c == 'S' || c == 'W') r = negate(r);
      return r;
    }

    static int hex_value(uint32_t c) {
      if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
      if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
      if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
      return -1;
    }

    // After a backslash: a single character escape (not a class or assertion).
    uint32_t parse_char_escape() {
      if (!more()) bad("trailing \\");
      uint32_t c = take();
      switch (c) {
        case 'a': return 7;
        case 'f': return '\f';
        case 't': return '\t';
        case 'n': return '\n';
        case 'r': return '\r';
        case 'v': return '\v';
        case 'x': {
          if (peek() == '{') {
            take();
            uint32_t v = 0;
            int digits = 0;
            while (more() && peek() != '}') {
              int h = hex_value(take());
              if (h < 0) bad("invalid \\x{...} escape");
              v = v * 16 + static_cast<uint32_t>(h);
              if (v > 0x10FFFF) bad("invalid \\x{...} escape");
              ++digits;
            }
            if (!more() || digits == 0) bad("invalid \\x{...} escape");
            take();
            return v;
          }
          int h1 = hex_value(peek()), h2 = hex_value(peek(1));
          if (h1 < 0 || h2 < 0) bad("invalid \\x escape");
          pos_ += 2;
          return static_cast<uint32_t>(h1 * 16 + h2);
        }
        default: break;
      }
      if (c >= '0' && c <= '7') {
        // \1-\7 alone would be a backreference, which RE2 does not support; with more digits it is octal.
        if (c != '0' && !(peek() >= '0' && peek() <= '7')) bad("backreferences are not supported by RE2");
        uint32_t v = c - '0';
        for (int k = 0; k < 2 && peek() >= '0' && peek() <= '7'; ++k) v = v * 8 + (take() - '0');
        return v;
      }
      if (c == '8' || c == '9') bad("backreferences are not supported by RE2");
      if (c == 'p' || c == 'P') bad("Unicode character classes (\\p, \\P) are not supported");
      if (c == 'C') bad("\\C (any byte) is not supported");
      if (c < 0x80 && !is_word(c)) return c;  // escaped punctuation
      bad(cat("invalid escape sequence \\", static_cast<char>(c < 0x80 ? c : '?')));
    }

    std::unique_ptr<Node> parse_escape_atom() {
      take();  // backslash
      uint32_t c = peek();
      if (c == 'b') {
        take();
        return assertion(AssertKind::WordBoundary);
      }
      if (c == 'B') {
        take();
        return assertion(AssertKind::NotWordBoundary);
      }
      if (c == 'A') {
        take();
        return assertion(AssertKind::BeginText);
      }
      if (c == 'z') {
        take();
        return assertion(AssertKind::EndText);
      }
      if (is_perl_class(c)) {
        take();
        Ranges r;
        add_perl_class(c | 0x20, r);
        return class_node(std::move(r), c == 'D' || c == 'S' || c == 'W');
      }
      return literal(parse_char_escape());
    }

    bool parse_posix(Ranges& r) {
      // at "[:"
      size_t end = pos_ + 2;
      while (end + 1 < cps_.size() && !(cps_[end] == ':' && cps_[end + 1] == ']')) ++end;
      if (end + 1 >= cps_.size()) return false;
      std::string name;
      for (size_t k = pos_ + 2; k < end; ++k) name.push_back(static_cast<char>(cps_[k] < 0x80 ? cps_[k] : '?'));
      bool neg = !name.empty() && name[0] == '^';
      if (neg) name.erase(0, 1);
      Ranges p;
      if (name == "alnum") p = {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}};
      else if (name == "alpha") p = {{'A', 'Z'}, {'a', 'z'}};
      else if (name == "ascii") p = {{0, 0x7F}};
      else if (name == "blank") p = {{'\t', '\t'}, {' ', ' '}};
      else if (name == "cntrl") p = {{0, 0x1F}, {0x7F, 0x7F}};
      else if (name == "digit") p = {{'0', '9'}};
      else if (name == "graph") p = {{'!', '~'}};
      else if (name == "lower") p = {{'a', 'z'}};
      else if (name == "print") p = {{' ', '~'}};
      else if (name == "punct") p = {{'!', '/'}, {':', '@'}, {'[', '`'}, {'{', '~'}};
      else if (name == "space") p = {{'\t', '\r'}, {' ', ' '}};
      else if (name == "upper") p = {{'A', 'Z'}};
      else if (name == "word") p = {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}, {'_', '_'}};
      else if (name == "xdigit") p = {{'0', '9'}, {'A', 'F'}, {'a', 'f'}};
      else bad("invalid character class range [:" + name + ":]");
      if (neg) {
        normalize(p);
        p = negate(p);
      }
      r.insert(r.end(), p.begin(), p.end());
      pos_ = end + 2;
      return true;
    }

    std::unique_ptr<Node> parse_class() {
      take();  // [
      bool negated = false;
      if (peek() == '^') {
        take();
        negated = true;
      }
      Ranges r;
      bool first = true;
      while (true) {
        if (!more()) bad("missing ]");
        uint32_t c = peek();
        if (c == ']' && !first) {
          take();
          break;
        }
        first = false;
        if (c == '[' && peek(1) == ':' && parse_posix(r)) continue;
        uint32_t lo;
        if (c == '\\') {
          take();
          uint32_t e = peek();
          if (is_perl_class(e)) {
            take();
            Ranges p = perl_class(e);
            r.insert(r.end(), p.begin(), p.end());
            continue;
          }
          lo = parse_char_escape();
        } else {
          lo = take();
        }
        uint32_t hi = lo;
        if (peek() == '-' && peek(1) != ']' && peek(1) != UINT32_MAX) {
          take();
          uint32_t h = take();
          if (h == '\\') {
            if (is_perl_class(peek())) bad("bad character class range");
            h = parse_char_escape();
          }
          if (h < lo) bad("bad character class range");
          hi = h;
        }
        r.emplace_back(lo, hi);
      }
      return class_node(std::move(r), negated);
    }
  };
};

}  // namespace onyx::ops::text
