// int8 quantization of model files, in the forms ONNX Runtime's quantization tools write (see
// src/opt/quantize.hpp for the graphs): dynamic (DynamicQuantizeLinear + MatMulInteger on MatMul/Gemm weights)
// and static QDQ (QuantizeLinear/DequantizeLinear from ranges calibrated by running the float model in onyx
// sessions). The results pass `onyx check` and run in onyx and in ONNX Runtime.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "format/save.hpp"
#include "ir/datum.hpp"
#include "opt/quantize.hpp"

namespace onyx {

using opt::CalibrationMethod;
using opt::DynamicQuantizeOptions;
using opt::QuantizeReport;
using opt::StaticQuantizeOptions;

// One calibration sample: a value for each graph input (those backed by an initializer may be left out).
using CalibrationSample = std::map<std::string, Datum>;

// Loads `in` (checked), quantizes it and writes `out` (which may be `in`); throws onyx::Error naming the file and
// what is wrong. The result is checked before anything is written.
QuantizeReport quantize_dynamic(const std::filesystem::path& in, const std::filesystem::path& out,
                                const DynamicQuantizeOptions& options = {}, const SaveOptions& save = {});
QuantizeReport quantize_static(const std::filesystem::path& in, const std::filesystem::path& out,
                               const std::vector<CalibrationSample>& samples, const StaticQuantizeOptions& options = {},
                               const SaveOptions& save = {});

// Calibration samples from a folder in the ONNX test-data layout: each sub-folder (sorted by name; or `dir` itself
// when it holds the files) is one sample, whose input_K.pb is a TensorProto of the model's K-th graph input
// (inputs with initializers counted, as ONNX's test_data_set_N folders do); NAME.pb or NAME.npy, named after an
// input, is read too. Errors name the folder and the input missing.
std::vector<CalibrationSample> read_calibration_dir(const std::filesystem::path& dir, const std::filesystem::path& model);

}  // namespace onyx
