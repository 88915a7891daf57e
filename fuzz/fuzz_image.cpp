// libFuzzer target for the image decoders: the input is the encoded image that an ImageDecoder node (opset 20)
// decodes, with the pixel format (RGB, BGR, Grayscale) chosen by the input's size. It reaches the format sniffing
// and onyx's own BMP, PNM and PNG decoders, and the JPEG, TIFF, WebP and JPEG 2000 decoders over Debian's codec
// libraries, with their size limits and error handling.
//
// onyx::Error is the expected outcome for data that is not a supported image; anything else is a bug.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "base/error.hpp"
#include "format/onnx_proto.hpp"
#include "onyx/session.hpp"

namespace {

using namespace onyx;

// The one-node model: encoded (uint8[N]) -> ImageDecoder(pixel_format) -> image (uint8[H, W, C]).
std::string decoder_model(const char* pixel_format) {
  pb::Model m;
  m.ir_version = 10;
  pb::OperatorSetId opset;
  opset.domain = "";
  opset.version = 20;
  m.opset_import.push_back(opset);
  pb::Graph& g = m.graph.emplace();
  g.name = "image_decoder";
  pb::Node& n = g.node.emplace_back();
  n.op_type = "ImageDecoder";
  n.input = {"encoded"};
  n.output = {"image"};
  pb::Attribute& a = n.attribute.emplace_back();
  a.name = "pixel_format";
  a.type = static_cast<int32_t>(pb::AttrType::String);
  a.s = pixel_format;
  auto value = [](const char* name, int rank) {
    pb::ValueInfo v;
    v.name = name;
    pb::TypeTensor& t = v.type.emplace().tensor_type.emplace();
    t.elem_type = static_cast<int32_t>(DataType::UInt8);
    pb::TensorShape& s = t.shape.emplace();
    for (int i = 0; i < rank; ++i) s.dim.emplace_back();
    return v;
  };
  g.input.push_back(value("encoded", 1));
  g.output.push_back(value("image", 3));
  return pb::serialize_model(m);
}

const std::array<std::unique_ptr<Session>, 3>& sessions() {
  static const std::array<std::unique_ptr<Session>, 3> s = [] {
    std::array<std::unique_ptr<Session>, 3> out;
    const char* formats[] = {"RGB", "BGR", "Grayscale"};
    SessionOptions opts;
    opts.threads = 1;
    opts.log_level = 4;
    opts.memory_limit_mb = 1024;
    for (int i = 0; i < 3; ++i) out[i] = std::make_unique<Session>(Session::from_bytes(decoder_model(formats[i]), opts));
    return out;
  }();
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Session& session = *sessions()[size % 3];
  std::map<std::string, Datum> feeds;
  feeds.emplace("encoded", Datum::of(Tensor::owned("encoded", DataType::UInt8, {static_cast<int64_t>(size)},
                                                   std::string(reinterpret_cast<const char*>(data), size))));
  RunOptions run;
  run.timeout_ms = 5000;
  try {
    (void)session.run(feeds, {}, run);
  } catch (const Error&) {
  }
  return 0;
}
