// Quantizing model files (include/onyx/quantize.hpp): load and check, prepare the float graph, calibrate the
// ranges of the tensors to quantize by running the prepared model in an onyx session with those tensors as extra
// outputs, rewrite (src/opt/quantize.cpp), check, write.
#include "onyx/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/error.hpp"
#include "check/checker.hpp"
#include "check/runtime_ops.hpp"
#include "exec/datum_io.hpp"
#include "format/model_read.hpp"
#include "format/model_write.hpp"
#include "onyx/session.hpp"
#include "opt/graph_edit.hpp"

namespace onyx {
namespace quantize_files {

namespace fs = std::filesystem;

struct Loaded {
  pb::ModelDocument src;
  Model model;
};

Loaded load_checked(const fs::path& in) {
  Loaded l{pb::load_model_file(in), {}};
  check::accept_with_warnings(l.src);
  check::check_model_or_throw(l.src);
  l.model = build_model(l.src);
  if (l.model.label.empty()) l.model.label = in.string();
  return l;
}

void write_checked(const Loaded& l, const fs::path& in, const fs::path& out, const SaveOptions& save) {
  pb::ModelDocument doc = model_to_document(l.model);
  doc.dir = l.src.dir;
  doc.label = l.src.label;
  try {
    check::check_model_or_throw(doc);
  } catch (const Error& e) {
    fail(in.string(), ": the quantized model does not pass the checker (a quantizer bug): ", e.what());
  }
  save_model(doc, out, save);
}

// The float values of a tensor output (float32 only: what the quantizer calibrates).
const float* floats_of(const Datum& d, size_t& n) {
  n = 0;
  if (!d.is_tensor() || d.tensor.dtype() != DataType::Float) return nullptr;
  n = static_cast<size_t>(d.tensor.element_count());
  return d.tensor.data<float>();
}

// Runs `samples` through `model` with `names` as extra graph outputs; per name, calls visit(index, values, count)
// for every sample. The model's outputs are restored afterwards.
template <class Visit>
void run_calibration(Model& model, const std::vector<std::string>& names, const std::vector<CalibrationSample>& samples,
                     int threads, Visit&& visit) {
  Graph& g = *model.graph;
  const std::vector<Value*> outputs = g.outputs;
  std::vector<Value*> added;
  {
    const opt::Analysis analysis(model, g);
    for (const std::string& name : names) {
      Value* v = g.find_local(name);
      if (!v) fail(model.label, ": calibration tensor '", name, "' is not in the main graph");
      if (v->is_graph_output) continue;
      v->type = analysis.type(v);
      v->is_graph_output = true;
      g.outputs.push_back(v);
      added.push_back(v);
    }
  }
  std::string bytes;
  try {
    bytes = pb::serialize_model(model_to_document(model).model);
  } catch (...) {
    for (Value* v : added) v->is_graph_output = false;
    g.outputs = outputs;
    throw;
  }
  for (Value* v : added) v->is_graph_output = false;
  g.outputs = outputs;
  SessionOptions so;
  so.threads = threads;
  Session session = Session::from_bytes(std::move(bytes), so);
  for (size_t s = 0; s < samples.size(); ++s) {
    std::vector<std::pair<std::string, Datum>> got;
    try {
      got = session.run(samples[s], names);
    } catch (const Error& e) {
      fail(model.label, ": calibration sample ", s, ": ", e.what());
    }
    for (size_t k = 0; k < got.size(); ++k) {
      size_t n = 0;
      const float* x = floats_of(got[k].second, n);
      if (!x) fail(model.label, ": calibration tensor '", names[k], "' is not a float32 tensor");
      visit(k, x, n);
    }
  }
}

std::map<std::string, opt::TensorRange> calibrate(Model& model, const std::vector<std::string>& names,
                                                  const std::vector<CalibrationSample>& samples,
                                                  const StaticQuantizeOptions& o) {
  if (samples.empty()) fail(model.label, ": static quantization needs at least one calibration sample");
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<opt::TensorRange> r(names.size(), opt::TensorRange{inf, -inf});
  // NaN is skipped; an infinity makes the range unusable and is reported by the rewrite.
  run_calibration(model, names, samples, o.threads, [&](size_t k, const float* x, size_t n) {
    double lo = r[k].min, hi = r[k].max;
    for (size_t i = 0; i < n; ++i) {
      if (x[i] < lo) lo = x[i];
      if (x[i] > hi) hi = x[i];
    }
    r[k] = {lo, hi};
  });
  for (auto& v : r)
    if (v.min > v.max) v = {0, 0};  // empty tensors in every sample
  if (o.method == CalibrationMethod::Percentile) {
    if (!(o.percentile > 0 && o.percentile <= 100))
      fail(model.label, ": the percentile must lie in (0, 100], not ", o.percentile);
    // A second pass: a histogram of 2048 bins over each tensor's [min, max]; the range becomes the values at
    // (100 - P)/2 % and (100 + P)/2 % of the counted elements (both tails cut equally).
    constexpr size_t kBins = 2048;
    std::vector<std::vector<uint64_t>> hist(names.size(), std::vector<uint64_t>(kBins, 0));
    run_calibration(model, names, samples, o.threads, [&](size_t k, const float* x, size_t n) {
      const double lo = r[k].min, width = r[k].max - r[k].min;
      if (!(width > 0) || !std::isfinite(width)) return;
      for (size_t i = 0; i < n; ++i) {
        if (std::isnan(x[i])) continue;
        const double b = (x[i] - lo) / width * kBins;
        hist[k][std::min(kBins - 1, static_cast<size_t>(std::max(0.0, b)))]++;
      }
    });
    const double tail = (100.0 - o.percentile) / 200.0;
    for (size_t k = 0; k < names.size(); ++k) {
      uint64_t total = 0;
      for (uint64_t c : hist[k]) total += c;
      if (!total) continue;
      const double lo = r[k].min, step = (r[k].max - r[k].min) / kBins;
      const double cut = tail * static_cast<double>(total);
      uint64_t acc = 0;
      size_t first = 0, last = kBins - 1;
      for (size_t b = 0; b < kBins; ++b) {
        acc += hist[k][b];
        if (static_cast<double>(acc) > cut) {
          first = b;
          break;
        }
      }
      acc = 0;
      for (size_t b = kBins; b-- > 0;) {
        acc += hist[k][b];
        if (static_cast<double>(acc) > cut) {
          last = b;
          break;
        }
      }
      r[k] = {lo + static_cast<double>(first) * step, lo + static_cast<double>(last + 1) * step};
    }
  }
  std::map<std::string, opt::TensorRange> out;
  for (size_t k = 0; k < names.size(); ++k) out[names[k]] = r[k];
  return out;
}

}  // namespace quantize_files

using namespace quantize_files;

QuantizeReport quantize_dynamic(const fs::path& in, const fs::path& out, const DynamicQuantizeOptions& options,
                                const SaveOptions& save) {
  Loaded l = load_checked(in);
  opt::prepare_for_quantization(l.model);
  QuantizeReport r = opt::quantize_dynamic_graph(l.model, options);
  write_checked(l, in, out, save);
  return r;
}

QuantizeReport quantize_static(const fs::path& in, const fs::path& out, const std::vector<CalibrationSample>& samples,
                               const StaticQuantizeOptions& options, const SaveOptions& save) {
  Loaded l = load_checked(in);
  opt::prepare_for_quantization(l.model);
  const std::vector<std::string> names = opt::calibration_tensors(l.model, options);
  const auto ranges = calibrate(l.model, names, samples, options);
  QuantizeReport r = opt::quantize_static_graph(l.model, ranges, options);
  r.samples = samples.size();
  write_checked(l, in, out, save);
  return r;
}

std::vector<CalibrationSample> read_calibration_dir(const fs::path& dir, const fs::path& model_path) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail("calibration data '", dir.string(), "' is not a folder");
  // The graph inputs in order, with their types, from the model file (no session needed).
  const Loaded l = load_checked(model_path);
  const Model& m = l.model;
  if (!m.graph) fail(model_path.string(), ": no graph");
  auto holds_sample = [&](const fs::path& d) {
    for (const auto& e : fs::directory_iterator(d))
      if (e.is_regular_file() && (e.path().extension() == ".pb" || e.path().extension() == ".npy")) return true;
    return false;
  };
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && holds_sample(e.path())) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty() && holds_sample(dir)) sets.push_back(dir);
  if (sets.empty())
    fail("calibration data '", dir.string(), "' holds no sample (sub-folders of input_K.pb files, as test_data_set_N)");
  std::vector<CalibrationSample> samples;
  for (const fs::path& set : sets) {
    CalibrationSample s;
    for (size_t k = 0; k < m.graph->inputs.size(); ++k) {
      const Value* v = m.graph->inputs[k];
      fs::path f = set / cat("input_", k, ".pb");
      if (!fs::exists(f)) f = set / (v->name + ".pb");
      if (!fs::exists(f)) f = set / (v->name + ".npy");
      if (!fs::exists(f)) {
        if (v->initializer) continue;
        fail("calibration sample '", set.string(), "' has no file for input ", k, " '", v->name, "' (input_", k,
             ".pb, ", v->name, ".pb or ", v->name, ".npy)");
      }
      try {
        s[v->name] = load_datum(f, v->type);
      } catch (const Error& e) {
        fail("calibration sample '", set.string(), "', input '", v->name, "': ", e.what());
      }
    }
    samples.push_back(std::move(s));
  }
  return samples;
}

}  // namespace onyx
