// ai.onnx string ops: StringNormalizer (10), RegexFullMatch (20), StringSplit (20), StringConcat (20).
// Each has a single version.
// StringNormalizer: input [C] or [1, C]; drops the `stopwords` (compared case-insensitively unless
//   is_case_sensitive=1), then applies case_change_action LOWER/UPPER/NONE. Case mapping uses onyx's own tables
//   (ops/text/unicode.hpp), not the machine's locales; `locale` only selects Turkish/Azeri dotted-i rules ("tr",
//   "az"). If every element is dropped the output is [""] with shape [1] (or [1, 1] for a [1, C] input).
// RegexFullMatch: true where the whole string matches `pattern` (RE2 syntax; see ops/text/re2_lite.hpp for what
//   is supported). Matching is linear in the text.
// StringSplit: splits on `delimiter` (consecutive delimiters give empty strings) or, when it is unset or "", on
//   runs of whitespace with leading/trailing whitespace dropped (Python's str.split semantics), at most `maxsplit`
//   times (negative or unset: no limit). Y has X's shape plus a last dim of the largest count, padded with "";
//   Z (int64, X's shape) holds the counts.
// StringConcat: elementwise concatenation with numpy broadcasting.
#include "ops/op_kit.hpp"
#include "ops/text/re2_lite.hpp"
#include "ops/text/unicode.hpp"

namespace onyx::ops {
namespace {

using D = DataType;

// ---- StringNormalizer ----

struct NormalizerConfig {
  text::CaseChange action = text::CaseChange::None;
  bool case_sensitive = false;
  bool turkic = false;
  std::vector<std::string> stopwords;  // lower-cased when not case-sensitive
};

NormalizerConfig parse_normalizer(const AttributeView& attrs) {
  NormalizerConfig c;
  std::string action = attrs.get_string("case_change_action", std::string("NONE"));
  if (action == "LOWER") c.action = text::CaseChange::Lower;
  else if (action == "UPPER") c.action = text::CaseChange::Upper;
  else if (action != "NONE") fail("case_change_action must be LOWER, UPPER or NONE, got '", action, "'");
  c.case_sensitive = attrs.get_int("is_case_sensitive", 0) != 0;
  std::string locale = attrs.get_string("locale", std::string());
  c.turkic = locale.rfind("tr", 0) == 0 || locale.rfind("az", 0) == 0;
  c.stopwords = attrs.get_strings("stopwords", std::vector<std::string>{});
  if (!c.case_sensitive)
    for (auto& w : c.stopwords) w = text::change_case(w, text::CaseChange::Lower, c.turkic);
  std::sort(c.stopwords.begin(), c.stopwords.end());
  return c;
}

void infer_normalizer(InferContext& ctx) {
  const Type& t = ctx.input_type(0);
  Shape out;
  if (t.shape.rank_known) {
    const auto& d = t.shape.dims;
    if (d.size() != 1 && d.size() != 2) ctx.error(cat("input must have shape [C] or [1, C], got ", t.shape.to_string()));
    if (d.size() == 2 && d[0].value && *d[0].value != 1)
      ctx.error(cat("input must have shape [C] or [1, C], got ", t.shape.to_string()));
    out.rank_known = true;
    if (d.size() == 2) out.dims.push_back(known_dim(1));
    Dim last;  // unknown unless nothing can be dropped
    bool no_stopwords = ctx.attrs.get_strings("stopwords", std::vector<std::string>{}).empty();
    if (no_stopwords && d.back().value && *d.back().value > 0) last = d.back();
    out.dims.push_back(last);
  }
  ctx.set_output(0, Type::tensor(D::String, out));
}

void run_normalizer(const NormalizerConfig& c, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Dims& d = x.dims();
  if ((d.size() != 1 && d.size() != 2) || (d.size() == 2 && d[0] != 1))
    ctx.error(cat("input must have shape [C] or [1, C], got ", shape_of(d).to_string()));
  std::vector<std::string> kept;
  for (const std::string& s : x.string_values()) {
    if (!c.stopwords.empty()) {
      std::string key = c.case_sensitive ? s : text::change_case(s, text::CaseChange::Lower, c.turkic);
      if (std::binary_search(c.stopwords.begin(), c.stopwords.end(), key)) continue;
    }
    kept.push_back(text::change_case(s, c.action, c.turkic));
  }
  if (kept.empty()) kept.emplace_back();
  int64_t n = static_cast<int64_t>(kept.size());
  Dims out = d.size() == 2 ? Dims{1, n} : Dims{n};
  Tensor& y = ctx.allocate_output(0, D::String, out);
  y.mutable_strings() = std::move(kept);
}

// ---- StringSplit ----

std::vector<std::string> split_whitespace(std::string_view s, int64_t maxsplit) {
  std::vector<std::string> parts;
  size_t i = 0;
  auto skip_space = [&]() {
    while (i < s.size()) {
      size_t j = i;
      if (!text::is_space_cp(text::decode_utf8(s, j))) break;
      i = j;
    }
  };
  skip_space();
  while (i < s.size()) {
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      parts.emplace_back(s.substr(i));  // the rest, trailing whitespace included
      return parts;
    }
    size_t start = i;
    while (i < s.size()) {
      size_t j = i;
      if (text::is_space_cp(text::decode_utf8(s, j))) break;
      i = j;
    }
    parts.emplace_back(s.substr(start, i - start));
    skip_space();
  }
  return parts;
}

std::vector<std::string> split_on(std::string_view s, std::string_view delim, int64_t maxsplit) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) break;
    size_t at = s.find(delim, start);
    if (at == std::string_view::npos) break;
    parts.emplace_back(s.substr(start, at - start));
    start = at + delim.size();
  }
  parts.emplace_back(s.substr(start));
  return parts;
}

void infer_split(InferContext& ctx) {
  const Type& t = ctx.input_type(0);
  Shape y = t.shape;
  if (y.rank_known) y.dims.push_back(Dim{});
  ctx.set_output(0, Type::tensor(D::String, y));
  if (ctx.node.outputs.size() > 1) ctx.set_output(1, Type::tensor(D::Int64, t.shape));
}

void run_split(const std::string& delim, int64_t maxsplit, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const auto& in = x.string_values();
  std::vector<std::vector<std::string>> parts(in.size());
  size_t widest = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    parts[i] = delim.empty() ? split_whitespace(in[i], maxsplit) : split_on(in[i], delim, maxsplit);
    widest = std::max(widest, parts[i].size());
  }
  Dims yd = x.dims();
  yd.push_back(static_cast<int64_t>(widest));
  Tensor& y = ctx.allocate_output(0, D::String, yd);
  auto& ys = y.mutable_strings();
  for (size_t i = 0; i < in.size(); ++i)
    for (size_t k = 0; k < parts[i].size(); ++k) ys[i * widest + k] = std::move(parts[i][k]);
  if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) {
    Tensor& z = ctx.allocate_output(1, D::Int64, x.dims());
    int64_t* pz = z.mutable_data<int64_t>();
    for (size_t i = 0; i < in.size(); ++i) pz[i] = static_cast<int64_t>(parts[i].size());
  }
}

// ---- StringConcat ----

void run_string_concat(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Dims out = broadcast_dims(a.dims(), b.dims());
  Tensor& y = ctx.allocate_output(0, D::String, out);
  auto& ys = y.mutable_strings();
  const auto& as = a.string_values();
  const auto& bs = b.string_values();
  for_each_broadcast(out, {a.dims(), b.dims()}, [&](int64_t i, const std::vector<int64_t>& o) {
    std::string s;
    s.reserve(as[o[0]].size() + bs[o[1]].size());
    s += as[o[0]];
    s += bs[o[1]];
    ys[i] = std::move(s);
  });
}

}  // namespace

void register_strings(Registry& r) {
  const std::vector<DataType> str = {D::String};

  add_versions(r, "", "StringNormalizer", {10}, {{{0}, str}}, infer_normalizer, [](const KernelInit& init) {
    NormalizerConfig c = parse_normalizer(init.attrs);
    return make_kernel([c](KernelContext& ctx) { run_normalizer(c, ctx); });
  });

  add_versions(
      r, "", "RegexFullMatch", {20}, {{{0}, str}},
      [](InferContext& ctx) {
        if (!ctx.attrs.has("pattern")) ctx.error("attribute 'pattern' is required");
        ctx.set_output(0, Type::tensor(D::Bool, ctx.input_type(0).shape));
      },
      [](const KernelInit& init) {
        auto re = std::make_shared<const text::Regex>(init.attrs.get_string("pattern"));
        return make_kernel([re](KernelContext& ctx) {
          const Tensor& x = ctx.input(0);
          Tensor& y = ctx.allocate_output(0, D::Bool, x.dims());
          bool* py = y.mutable_data<bool>();
          const auto& xs = x.string_values();
          for (size_t i = 0; i < xs.size(); ++i) py[i] = re->full_match(xs[i]);
        });
      });

  add_versions(r, "", "StringSplit", {20}, {{{0}, str}}, infer_split, [](const KernelInit& init) {
    std::string delim = init.attrs.get_string("delimiter", std::string());
    int64_t maxsplit = init.attrs.get_int("maxsplit", -1);
    return make_kernel([delim, maxsplit](KernelContext& ctx) { run_split(delim, maxsplit, ctx); });
  });

  add_versions(
      r, "", "StringConcat", {20}, {{{0, 1}, str}}, [](InferContext& ctx) { infer_broadcast(ctx, D::String); },
      [](const KernelInit&) { return make_kernel(run_string_concat); });
}

}  // namespace onyx::ops
