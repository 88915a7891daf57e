// Text from models (names, doc strings) written into other formats: JSON strings, Graphviz labels, terminal
// lines. Model bytes are untrusted: invalid UTF-8 is replaced, and every character the target format treats
// specially is escaped. Header-only, so the tests use it as is.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace onyx::cli {

// `s` with every invalid UTF-8 sequence (stray continuation bytes, overlong forms, surrogates, code points past
// U+10FFFF, truncated sequences) replaced by U+FFFD.
inline std::string valid_utf8(std::string_view s) {
  static const char kReplacement[] = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
    uint8_t c = byte(i);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; ok && k < len; ++k) {
      if ((byte(i + k) & 0xC0) != 0x80) ok = false;
      else cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    // Overlong encodings, UTF-16 surrogates and values past the Unicode range are invalid too.
    if (ok && ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
               (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF))
      ok = false;
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += kReplacement;
      ++i;  // resynchronize at the next byte
    }
  }
  return out;
}

// `s` safe to print on a terminal: control bytes (which could start escape sequences) become '?'.
inline std::string printable(std::string_view s) {
  std::string r;
  r.reserve(s.size());
  for (unsigned char c : s) r += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
  return r;
}

// A JSON string literal, quotes included.
inline std::string json_quote(std::string_view raw) {
  std::string s = valid_utf8(raw);
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

// A Graphviz quoted string for a label, quotes included: the text shows as given, whatever it holds (quotes,
// backslashes, escString sequences such as \N or \G, HTML entities); a line break in `s` becomes a centered
// line break in the label.
inline std::string dot_quote(std::string_view raw) {
  std::string s = valid_utf8(raw);
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"') out += "\\\"";
    // A lone backslash would start an escString sequence (\N, \G, \l...); "\\" shows one backslash.
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    // Graphviz decodes HTML entities in labels: "&amp;" keeps a literal "&" from starting one.
    else if (c == '&') out += "&amp;";
    else if (c < 0x20 || c == 0x7f) out += ' ';
    else out += ch;
  }
  return out + "\"";
}

}  // namespace onyx::cli
