// UTF-8 and simple case mapping for the text ops, independent of the machine's locales.
// Case mapping covers ASCII, Latin-1, Latin Extended-A/B (the regular pairs), Latin Extended Additional, Greek,
// Cyrillic (with its supplement) and the fullwidth Latin letters; every other code point maps to itself. Mappings
// are one code point to one code point (ß stays ß, as with the C library's towupper). Turkish and Azeri locales
// ("tr", "az") map I <-> ı and İ <-> i.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace onyx::ops::text {

// Decodes one code point at s[i], advancing i. Invalid or truncated sequences, overlongs and surrogates decode as
// kInvalidBase + the byte (one byte consumed), so they round-trip and match nothing but "any character".
inline constexpr uint32_t kInvalidBase = 0x110000;
inline uint32_t decode_utf8(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  auto bad = [&]() {
    ++i;
    return kInvalidBase + b0;
  };
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  int n;
  uint32_t cp, min;
  if ((b0 & 0xE0) == 0xC0) n = 1, cp = b0 & 0x1F, min = 0x80;
  else if ((b0 & 0xF0) == 0xE0) n = 2, cp = b0 & 0x0F, min = 0x800;
  else if ((b0 & 0xF8) == 0xF0) n = 3, cp = b0 & 0x07, min = 0x10000;
  else return bad();
  if (i + static_cast<size_t>(n) >= s.size()) return bad();
  for (int k = 1; k <= n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return bad();
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return bad();
  i += n + 1;
  return cp;
}

inline void encode_utf8(uint32_t cp, std::string& out) {
  if (cp >= kInvalidBase) {
    out.push_back(static_cast<char>(cp - kInvalidBase));
  } else if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace detail {
// A block where upper and lower case alternate, starting with an upper case letter at `first`.
struct PairBlock {
  uint32_t first, last;
  bool upper_even;  // always true: the upper case letter is at even offsets from `first`
};
inline constexpr PairBlock kPairBlocks[] = {
    {0x0100, 0x012F, true},  {0x0132, 0x0137, true},  {0x0139, 0x0148, true}, {0x014A, 0x0177, true},
    {0x0179, 0x017E, true}, {0x0182, 0x0185, true},  {0x01A0, 0x01A5, true},  {0x01CD, 0x01DC, true},
    {0x01DE, 0x01EF, true},  {0x01F8, 0x021F, true},  {0x0222, 0x0233, true},  {0x0246, 0x024F, true},
    {0x03D8, 0x03EF, true},  {0x0460, 0x0481, true},  {0x048A, 0x04BF, true},  {0x04C1, 0x04CE, true},
    {0x04D0, 0x052F, true},  {0x1E00, 0x1E95, true},  {0x1EA0, 0x1EFF, true},
};
// Blocks where a whole range of upper case letters maps to a range at a fixed offset.
struct ShiftBlock {
  uint32_t first, last;  // upper case letters
  int32_t delta;         // lower = upper + delta
};
inline constexpr ShiftBlock kShiftBlocks[] = {
    {0x0041, 0x005A, 32},  {0x00C0, 0x00D6, 32},  {0x00D8, 0x00DE, 32}, {0x0391, 0x03A1, 32},
    {0x03A3, 0x03AB, 32},  {0x0388, 0x038A, 37},  {0x038E, 0x038F, 63}, {0x0410, 0x042F, 32},
    {0x0400, 0x040F, 80},  {0xFF21, 0xFF3A, 32},  {0x0531, 0x0556, 48},
};
// Single pairs (upper, lower) outside the blocks.
struct Pair {
  uint32_t upper, lower;
};
inline constexpr Pair kPairs[] = {
    {0x0178, 0x00FF}, {0x0386, 0x03AC}, {0x038C, 0x03CC}, {0x04C0, 0x04CF}, {0x0187, 0x0188}, {0x018B, 0x018C},
    {0x0191, 0x0192}, {0x0198, 0x0199}, {0x01A7, 0x01A8}, {0x01AC, 0x01AD}, {0x01AF, 0x01B0}, {0x01B3, 0x01B4},
    {0x01B5, 0x01B6}, {0x01B8, 0x01B9}, {0x01BC, 0x01BD}, {0x0243, 0x0180}, {0x0220, 0x019E}, {0x023B, 0x023C},
    {0x0241, 0x0242}, {0x0181, 0x0253}, {0x0186, 0x0254}, {0x0189, 0x0256}, {0x018A, 0x0257}, {0x018F, 0x0259},
    {0x0190, 0x025B}, {0x0193, 0x0260}, {0x0194, 0x0263}, {0x0197, 0x0268}, {0x0196, 0x0269}, {0x019C, 0x026F},
    {0x019D, 0x0272}, {0x019F, 0x0275}, {0x01A9, 0x0283}, {0x01AE, 0x0288}, {0x01B1, 0x028A}, {0x01B2, 0x028B},
    {0x01B7, 0x0292}, {0x01C4, 0x01C6}, {0x01C7, 0x01C9}, {0x01CA, 0x01CC}, {0x01F1, 0x01F3}, {0x01F4, 0x01F5},
    {0x03F7, 0x03F8}, {0x03FA, 0x03FB},
};
}  // namespace detail

inline uint32_t to_lower_cp(uint32_t c, bool turkic = false) {
  if (c < 0x80) {
    if (turkic && c == 'I') return 0x0131;
    return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  }
  if (c == 0x0130) return 'i';  // İ
  for (const auto& b : detail::kShiftBlocks)
    if (c >= b.first && c <= b.last) return static_cast<uint32_t>(static_cast<int32_t>(c) + b.delta);
  for (const auto& b : detail::kPairBlocks)
    if (c >= b.first && c <= b.last) return ((c - b.first) % 2 == 0) == b.upper_even ? c + 1 : c;
  for (const auto& p : detail::kPairs)
    if (c == p.upper) return p.lower;
  // Title-case digraphs lower to the lower case digraph.
  if (c == 0x01C5 || c == 0x01C8 || c == 0x01CB || c == 0x01F2) return c + 1;
  return c;
}

inline uint32_t to_upper_cp(uint32_t c, bool turkic = false) {
  if (c < 0x80) {
    if (turkic && c == 'i') return 0x0130;
    return (c >= 'a' && c <= 'z') ? c - 32 : c;
  }
  if (c == 0x0131) return 'I';   // ı
  if (c == 0x017F) return 'S';   // ſ
  if (c == 0x00B5) return 0x039C;  // µ
  if (c == 0x03C2) return 0x03A3;  // ς
  for (const auto& b : detail::kShiftBlocks) {
    uint32_t lo_first = static_cast<uint32_t>(static_cast<int32_t>(b.first) + b.delta);
    uint32_t lo_last = static_cast<uint32_t>(static_cast<int32_t>(b.last) + b.delta);
    if (c >= lo_first && c <= lo_last) return static_cast<uint32_t>(static_cast<int32_t>(c) - b.delta);
  }
  for (const auto& b : detail::kPairBlocks)
    if (c >= b.first && c <= b.last) return ((c - b.first) % 2 == 0) == b.upper_even ? c : c - 1;
  for (const auto& p : detail::kPairs)
    if (c == p.lower) return p.upper;
  if (c == 0x01C5 || c == 0x01C8 || c == 0x01CB || c == 0x01F2) return c - 1;
  return c;
}

enum class CaseChange { None, Lower, Upper };

inline std::string change_case(std::string_view s, CaseChange how, bool turkic = false) {
  if (how == CaseChange::None) return std::string(s);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = decode_utf8(s, i);
    if (cp < kInvalidBase) cp = how == CaseChange::Lower ? to_lower_cp(cp, turkic) : to_upper_cp(cp, turkic);
    encode_utf8(cp, out);
  }
  return out;
}

// Unicode White_Space, as Python's str.split() uses it (plus the ASCII separators 0x1C-0x1F it also splits on).
inline bool is_space_cp(uint32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace onyx::ops::text
