// onyx-serve-load: the load generator of the serving benchmark (scripts/bench_serve.sh). It drives a KServe v2 /
// Triton server (`onyx serve`, or Triton itself) with N client threads, each on its own keep-alive HTTP/1.1
// connection or its own gRPC channel, sending the same inference request back to back, and prints one JSON line:
//   {"protocol","concurrency","requests","errors","seconds","throughput_rps","p50_us","p90_us","p99_us","mean_us"}
// Protocols: http-binary (the binary-tensor extension), http-json (tensor data as JSON numbers), grpc
// (ModelInfer with raw_input_contents). The HTTP client is a minimal one on POSIX sockets, so what is measured is
// the server and the wire, not a client library.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "grpc_service.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kUsage = R"(usage: onyx-serve-load --model NAME --inputs NAME:DTYPE:DIMS[,...] [options]

Sends inference requests to a KServe v2 / Triton server from N client threads (each with its own keep-alive
connection or gRPC channel, requests back to back) and prints one JSON line:
  {"protocol","concurrency","requests","errors","seconds","throughput_rps","p50_us","p90_us","p99_us","mean_us"}
requests counts the timed requests answered with success; errors the others (a non-200 / non-OK answer, a
connection lost); latencies are of the successful ones. The first error's message goes to stderr.

  --url HOST:PORT        the server (default localhost:8000; the gRPC port for --protocol grpc)
  --protocol P           http-binary (default), http-json or grpc
  --model NAME           the model; --model-version V picks a version (default: the server's choice)
  --inputs LIST          the inputs, NAME:DTYPE:DIMS with DIMS as 1x3x224x224 (a scalar: an empty DIMS), comma-
                         separated or the option repeated; DTYPE a v2 name (FP32, FP16, FP64, INT8..INT64,
                         UINT8..UINT64, BOOL); filled with deterministic values
  --input-file NAME=FILE the raw little-endian bytes of input NAME (its size must match its dtype and dims)
  --outputs LIST         the outputs to request (comma-separated; default: none named, so the server returns all;
                         http-binary then asks for them as binary with the request's "binary_data_output")
  --concurrency N        client threads (default 1)
  --requests N           timed requests in all (default 1000; 0: bounded by --duration-s only)
  --duration-s S         time bound of the timed phase (default 10; 0: bounded by --requests only)
  --warmup N             untimed requests before the timed phase, shared by the threads, at least one each
                         (default 10)
  --timeout-s S          a request unanswered for S seconds is an error (default 30)
)";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "onyx-serve-load: %s\n\n%s", message.c_str(), kUsage);
  std::exit(2);
}

// ---- Inputs ----

struct DType {
  const char* name;
  size_t size;
  bool is_float;
  bool is_signed;
};
constexpr DType kDTypes[] = {
    {"FP32", 4, true, true},    {"FP16", 2, true, true},     {"FP64", 8, true, true},    {"INT8", 1, false, true},
    {"INT16", 2, false, true},  {"INT32", 4, false, true},   {"INT64", 8, false, true},  {"UINT8", 1, false, false},
    {"UINT16", 2, false, false}, {"UINT32", 4, false, false}, {"UINT64", 8, false, false}, {"BOOL", 1, false, false},
};

struct Input {
  std::string name;
  const DType* dtype = nullptr;
  std::vector<int64_t> dims;
  std::string raw;  // little-endian element bytes, as the binary extension and raw_input_contents carry them
  uint64_t count() const {
    uint64_t n = 1;
    for (int64_t d : dims) n *= static_cast<uint64_t>(d);
    return n;
  }
};

uint16_t float_to_half(float f) {
  // Round-to-nearest-even conversion; the benchmark's values are small and finite, but keep it general.
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;  // may carry into the exponent: still correct
  return static_cast<uint16_t>(half);
}

// Deterministic values: a float in [-0.5, 0.5) with three decimals (short in JSON), or a small integer.
double value_at(uint64_t i, const DType& t) {
  uint64_t k = (i * 7919u) % 1000u;
  if (t.is_float) return static_cast<double>(k) / 1000.0 - 0.5;
  if (std::strcmp(t.name, "BOOL") == 0) return static_cast<double>(k & 1);
  return static_cast<double>(t.is_signed ? static_cast<int64_t>(k % 100) - 50 : static_cast<int64_t>(k % 100));
}

template <typename T>
void append_le(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // the hosts this runs on are little-endian, as the protocol's raw form is
  out.append(b, sizeof(T));
}

void fill_deterministic(Input& in) {
  uint64_t n = in.count();
  in.raw.clear();
  in.raw.reserve(n * in.dtype->size);
  std::string_view name = in.dtype->name;
  for (uint64_t i = 0; i < n; ++i) {
    double v = value_at(i, *in.dtype);
    if (name == "FP32") append_le(in.raw, static_cast<float>(v));
    else if (name == "FP64") append_le(in.raw, v);
    else if (name == "FP16") append_le(in.raw, float_to_half(static_cast<float>(v)));
    else if (name == "INT8") append_le(in.raw, static_cast<int8_t>(v));
    else if (name == "INT16") append_le(in.raw, static_cast<int16_t>(v));
    else if (name == "INT32") append_le(in.raw, static_cast<int32_t>(v));
    else if (name == "INT64") append_le(in.raw, static_cast<int64_t>(v));
    else if (name == "UINT8" || name == "BOOL") append_le(in.raw, static_cast<uint8_t>(v));
    else if (name == "UINT16") append_le(in.raw, static_cast<uint16_t>(v));
    else if (name == "UINT32") append_le(in.raw, static_cast<uint32_t>(v));
    else append_le(in.raw, static_cast<uint64_t>(v));
  }
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      exp = 127 - 15 + 1;
      while (!(mant & 0x400u)) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename T>
T load_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// The i-th element of `in.raw` as JSON (so --input-file data is sent as the same values in http-json).
void append_json_element(std::string& out, const Input& in, uint64_t i) {
  std::string_view name = in.dtype->name;
  const char* p = in.raw.data() + i * in.dtype->size;
  char buf[64];
  std::to_chars_result r{};
  if (name == "FP32") r = std::to_chars(buf, buf + sizeof buf, load_le<float>(p));
  else if (name == "FP64") r = std::to_chars(buf, buf + sizeof buf, load_le<double>(p));
  else if (name == "FP16") r = std::to_chars(buf, buf + sizeof buf, half_to_float(load_le<uint16_t>(p)));
  else if (name == "BOOL") {
    out += load_le<uint8_t>(p) ? "true" : "false";
    return;
  } else if (name == "INT8") r = std::to_chars(buf, buf + sizeof buf, load_le<int8_t>(p));
  else if (name == "INT16") r = std::to_chars(buf, buf + sizeof buf, load_le<int16_t>(p));
  else if (name == "INT32") r = std::to_chars(buf, buf + sizeof buf, load_le<int32_t>(p));
  else if (name == "INT64") r = std::to_chars(buf, buf + sizeof buf, load_le<int64_t>(p));
  else if (name == "UINT8") r = std::to_chars(buf, buf + sizeof buf, load_le<uint8_t>(p));
  else if (name == "UINT16") r = std::to_chars(buf, buf + sizeof buf, load_le<uint16_t>(p));
  else if (name == "UINT32") r = std::to_chars(buf, buf + sizeof buf, load_le<uint32_t>(p));
  else r = std::to_chars(buf, buf + sizeof buf, load_le<uint64_t>(p));
  out.append(buf, r.ptr);
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += b;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    parts.emplace_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) return parts;
    start = pos + 1;
  }
}

Input parse_input_spec(const std::string& spec) {
  std::vector<std::string> f = split(spec, ':');
  if (f.size() != 3 || f[0].empty()) usage_error("--inputs wants NAME:DTYPE:DIMS, not '" + spec + "'");
  Input in;
  in.name = f[0];
  for (const DType& t : kDTypes)
    if (f[1] == t.name) in.dtype = &t;
  if (!in.dtype) usage_error("unknown or unsupported dtype '" + f[1] + "' (BYTES is not generated)");
  if (!f[2].empty()) {
    for (const std::string& d : split(f[2], 'x')) {
      int64_t v = -1;
      auto r = std::from_chars(d.data(), d.data() + d.size(), v);
      if (r.ec != std::errc() || r.ptr != d.data() + d.size() || v < 0) usage_error("bad dims '" + f[2] + "'");
      in.dims.push_back(v);
    }
  }
  return in;
}

// ---- The requests, built once: every client sends the same bytes ----

struct Config {
  std::string host = "localhost";
  std::string port = "8000";
  std::string protocol = "http-binary";
  std::string model, version;
  std::vector<Input> inputs;
  std::vector<std::string> outputs;
  int concurrency = 1;
  uint64_t requests = 1000;
  double duration_s = 10;
  uint64_t warmup = 10;
  double timeout_s = 30;
};

std::string infer_path(const Config& c) {
  std::string p = "/v2/models/" + c.model;
  if (!c.version.empty()) p += "/versions/" + c.version;
  return p + "/infer";
}

// The whole HTTP request (head and body) for http-binary or http-json.
std::string build_http_request(const Config& c) {
  bool binary = c.protocol == "http-binary";
  std::string json = "{\"inputs\":[";
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    const Input& in = c.inputs[k];
    if (k) json += ',';
    json += "{\"name\":" + json_string(in.name) + ",\"datatype\":\"" + in.dtype->name + "\",\"shape\":[";
    for (size_t d = 0; d < in.dims.size(); ++d) json += (d ? "," : "") + std::to_string(in.dims[d]);
    json += "]";
    if (binary) {
      json += ",\"parameters\":{\"binary_data_size\":" + std::to_string(in.raw.size()) + "}}";
    } else {
      json += ",\"data\":[";
      uint64_t n = in.count();
      json.reserve(json.size() + n * 8);
      for (uint64_t i = 0; i < n; ++i) {
        if (i) json += ',';
        append_json_element(json, in, i);
      }
      json += "]}";
    }
  }
  json += "]";
  if (!c.outputs.empty()) {
    json += ",\"outputs\":[";
    for (size_t k = 0; k < c.outputs.size(); ++k) {
      json += (k ? ",{\"name\":" : "{\"name\":") + json_string(c.outputs[k]);
      json += binary ? ",\"parameters\":{\"binary_data\":true}}" : "}";
    }
    json += "]";
  } else if (binary) {
    json += ",\"parameters\":{\"binary_data_output\":true}";
  }
  json += "}";

  std::string body = json;
  if (binary)
    for (const Input& in : c.inputs) body += in.raw;
  std::string head = "POST " + infer_path(c) + " HTTP/1.1\r\nHost: " + c.host + ":" + c.port + "\r\n";
  if (binary) {
    head += "Content-Type: application/octet-stream\r\nInference-Header-Content-Length: " +
            std::to_string(json.size()) + "\r\n";
  } else {
    head += "Content-Type: application/json\r\n";
  }
  head += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  return head + body;
}

inference::ModelInferRequest build_grpc_request(const Config& c) {
  inference::ModelInferRequest r;
  r.set_model_name(c.model);
  r.set_model_version(c.version);
  for (const Input& in : c.inputs) {
    auto* t = r.add_inputs();
    t->set_name(in.name);
    t->set_datatype(in.dtype->name);
    for (int64_t d : in.dims) t->add_shape(d);
    r.add_raw_input_contents(in.raw);
  }
  for (const std::string& o : c.outputs) r.add_outputs()->set_name(o);
  return r;
}

// ---- Shared run state ----

struct Shared {
  const Config* config = nullptr;
  std::string http_request;
  inference::ModelInferRequest grpc_request;

  std::atomic<uint64_t> issued{0};  // timed requests claimed so far (bounded by --requests)
  std::atomic<int> warm_threads{0};
  std::atomic<bool> go{false};
  Clock::time_point t0, deadline;

  std::mutex error_mutex;
  bool error_printed = false;
  void report_error(const std::string& message) {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (error_printed) return;
    error_printed = true;
    std::fprintf(stderr, "onyx-serve-load: first error: %s\n", message.c_str());
  }

  // Claims one timed request; false when the request count or the time bound is reached.
  bool claim() {
    if (config->duration_s > 0 && Clock::now() >= deadline) return false;
    if (config->requests == 0) return true;
    return issued.fetch_add(1, std::memory_order_relaxed) < config->requests;
  }
};

struct ThreadResult {
  std::vector<double> latencies_us;
  uint64_t errors = 0;
  Clock::time_point end;
};

// ---- HTTP/1.1 client on a blocking socket ----

class HttpConnection {
 public:
  HttpConnection(std::string host, std::string port, double timeout_s)
      : host_(std::move(host)), port_(std::move(port)), timeout_s_(timeout_s) {}
  ~HttpConnection() { close_socket(); }
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Sends `request` and reads the answer; true for a 200. On false, `error` says why. A broken connection is
  // reopened for the next request (not retried: a request lost on the wire is an error).
  bool round_trip(const std::string& request, std::string& error) {
    if (fd_ < 0 && !connect_socket(error)) return false;
    if (!send_all(request, error) || !read_response(error)) {
      close_socket();
      return false;
    }
    if (close_after_) close_socket();  // the server said Connection: close
    if (status_ != 200) {
      error = "HTTP " + std::to_string(status_) + ": " + body_.substr(0, 500);
      return false;
    }
    return true;
  }

 private:
  bool connect_socket(std::string& error) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = getaddrinfo(host_.c_str(), port_.c_str(), &hints, &res);
    if (rc != 0) {
      error = "cannot resolve " + host_ + ": " + gai_strerror(rc);
      return false;
    }
    int last_errno = 0;
    for (addrinfo* a = res; a; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        fd_ = fd;
        break;
      }
      last_errno = errno;
      ::close(fd);
    }
    freeaddrinfo(res);
    if (fd_ < 0) {
      error = "cannot connect to " + host_ + ":" + port_ + ": " + std::strerror(last_errno);
      return false;
    }
    // Small requests must not wait for Nagle's algorithm; the timeouts bound a hung server.
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout_s_);
    tv.tv_usec = static_cast<suseconds_t>((timeout_s_ - static_cast<double>(tv.tv_sec)) * 1e6);
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    buf_.clear();
    return true;
  }

  void close_socket() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    buf_.clear();
  }

  bool send_all(const std::string& data, std::string& error) {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error = std::string("send: ") + std::strerror(errno);
        return false;
      }
      off += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads more bytes into buf_; false (with `error`) on EOF, timeout or a socket error.
  bool fill(std::string& error) {
    char chunk[65536];
    while (true) {
      ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n > 0) {
        buf_.append(chunk, static_cast<size_t>(n));
        return true;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) error = "connection closed by the server before the whole answer";
      else if (errno == EAGAIN || errno == EWOULDBLOCK) error = "no answer within the timeout";
      else error = std::string("recv: ") + std::strerror(errno);
      return false;
    }
  }

  // Bytes up to and including the next CRLF (a chunk-size line), consumed from buf_.
  bool read_line(std::string& line, std::string& error) {
    size_t pos;
    while ((pos = buf_.find("\r\n")) == std::string::npos)
      if (!fill(error)) return false;
    line.assign(buf_, 0, pos);
    buf_.erase(0, pos + 2);
    return true;
  }

  bool read_exact(size_t n, std::string& out, std::string& error) {
    while (buf_.size() < n)
      if (!fill(error)) return false;
    out.append(buf_, 0, n);
    buf_.erase(0, n);
    return true;
  }

  static bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
  }

  bool read_response(std::string& error) {
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (buf_.size() > (1u << 20)) {
        error = "response head over 1 MiB";
        return false;
      }
      if (!fill(error)) return false;
    }
    std::string head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    // Status line: HTTP/1.1 200 OK
    size_t sp = head.find(' ');
    if (head.compare(0, 5, "HTTP/") != 0 || sp == std::string::npos) {
      error = "malformed status line: " + head.substr(0, head.find("\r\n"));
      return false;
    }
    status_ = std::atoi(head.c_str() + sp + 1);
    close_after_ = head.compare(0, 8, "HTTP/1.0") == 0;  // 1.0 closes unless it says keep-alive
    std::optional<size_t> length;
    bool chunked = false;
    size_t pos = head.find("\r\n");
    while (pos != std::string::npos) {
      size_t next = head.find("\r\n", pos + 2);
      std::string_view line(head.data() + pos + 2, (next == std::string::npos ? head.size() : next) - pos - 2);
      pos = next;
      size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view key = line.substr(0, colon), value = line.substr(colon + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
      if (iequals(key, "content-length")) {
        length = std::strtoull(std::string(value).c_str(), nullptr, 10);
      } else if (iequals(key, "transfer-encoding")) {
        chunked = value.find("chunked") != std::string_view::npos;
      } else if (iequals(key, "connection")) {
        if (iequals(value, "close")) close_after_ = true;
        if (iequals(value, "keep-alive")) close_after_ = false;
      }
    }
    body_.clear();
    if (chunked) {
      std::string line;
      while (true) {
        if (!read_line(line, error)) return false;
        size_t size = std::strtoull(line.c_str(), nullptr, 16);
        if (size == 0) {  // the last chunk; then trailers up to an empty line
          do {
            if (!read_line(line, error)) return false;
          } while (!line.empty());
          return true;
        }
        if (!read_exact(size, body_, error) || !read_line(line, error)) return false;
      }
    }
    if (length) return read_exact(*length, body_, error);
    // Neither: the body runs to the end of the connection.
    close_after_ = true;
    std::string ignored;
    while (fill(ignored)) {
    }
    body_ = std::move(buf_);
    buf_.clear();
    return true;
  }

  std::string host_, port_;
  double timeout_s_;
  int fd_ = -1;
  std::string buf_;   // bytes read and not yet consumed
  std::string body_;  // the last answer's body
  int status_ = 0;
  bool close_after_ = false;
};

// ---- The client threads ----

// Sends warm-up requests, waits for every thread to be warm, then sends timed requests until claim() says stop.
template <typename SendOne>
void client_loop(Shared& s, ThreadResult& result, SendOne send_one) {
  std::string error;
  // Warm-up: every thread sends its share (at least one when there is any), so each connection is open and
  // past its first request before timing starts.
  uint64_t share = 0;
  if (s.config->warmup > 0) {
    uint64_t n = static_cast<uint64_t>(s.config->concurrency);
    share = std::max<uint64_t>(1, (s.config->warmup + n - 1) / n);
  }
  for (uint64_t i = 0; i < share; ++i)
    if (!send_one(error)) s.report_error("warm-up: " + error);
  s.warm_threads.fetch_add(1);
  while (!s.go.load(std::memory_order_acquire)) std::this_thread::yield();

  result.latencies_us.reserve(s.config->requests ? s.config->requests / s.config->concurrency + 16 : 1 << 16);
  while (s.claim()) {
    auto start = Clock::now();
    bool ok = send_one(error);
    auto stop = Clock::now();
    if (ok) {
      result.latencies_us.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
    } else {
      ++result.errors;
      s.report_error(error);
      // A refused or broken connection fails at once: pause, so a down server is not met with a busy loop that
      // takes the CPU it needs to come back (the error is counted all the same).
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  result.end = Clock::now();
}

void http_client(Shared& s, ThreadResult& result) {
  const Config& c = *s.config;
  HttpConnection conn(c.host, c.port, c.timeout_s);
  client_loop(s, result, [&](std::string& error) { return conn.round_trip(s.http_request, error); });
}

void grpc_client(Shared& s, ThreadResult& result, int index) {
  const Config& c = *s.config;
  grpc::ChannelArguments args;
  // A channel of its own per thread: a local subchannel pool and a distinct argument keep gRPC from sharing one
  // TCP connection between the threads' channels.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("onyx.load.client_index", index);
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  auto channel = grpc::CreateCustomChannel(c.host + ":" + c.port, grpc::InsecureChannelCredentials(), args);
  auto stub = inference::GRPCInferenceService::NewStub(channel);
  inference::ModelInferResponse response;
  auto timeout = std::chrono::microseconds(static_cast<int64_t>(c.timeout_s * 1e6));
  client_loop(s, result, [&](std::string& error) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    response.Clear();
    grpc::Status status = stub->ModelInfer(&context, s.grpc_request, &response);
    if (!status.ok()) {
      error = "gRPC status " + std::to_string(static_cast<int>(status.error_code())) + ": " + status.error_message();
      return false;
    }
    if (response.outputs_size() == 0) {
      error = "gRPC answer without outputs";
      return false;
    }
    return true;
  });
}

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  // Nearest rank: the smallest value with at least q of the samples at or below it.
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

double parse_double(const std::string& option, const char* value) {
  char* end = nullptr;
  double v = std::strtod(value, &end);
  if (!end || *end || v < 0 || !std::isfinite(v)) usage_error(option + " wants a non-negative number");
  return v;
}

uint64_t parse_count(const std::string& option, const char* value) {
  uint64_t v = 0;
  auto r = std::from_chars(value, value + std::strlen(value), v);
  if (r.ec != std::errc() || *r.ptr) usage_error(option + " wants a non-negative integer");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  std::vector<std::pair<std::string, std::string>> input_files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) usage_error("unknown option or missing value: " + a);
    const char* v = argv[++i];
    if (a == "--url") {
      std::string url = v;
      if (url.rfind("http://", 0) == 0) url = url.substr(7);
      while (!url.empty() && url.back() == '/') url.pop_back();
      size_t colon = url.rfind(':');
      if (colon == std::string::npos || colon == 0) usage_error("--url wants HOST:PORT");
      c.host = url.substr(0, colon);
      c.port = url.substr(colon + 1);
      if (c.host.size() > 2 && c.host.front() == '[' && c.host.back() == ']') c.host = c.host.substr(1, c.host.size() - 2);
    } else if (a == "--protocol") {
      c.protocol = v;
      if (c.protocol != "http-binary" && c.protocol != "http-json" && c.protocol != "grpc")
        usage_error("--protocol wants http-binary, http-json or grpc");
    } else if (a == "--model") {
      c.model = v;
    } else if (a == "--model-version") {
      c.version = v;
    } else if (a == "--inputs") {
      for (const std::string& spec : split(v, ','))
        if (!spec.empty()) c.inputs.push_back(parse_input_spec(spec));
    } else if (a == "--input-file") {
      std::string spec = v;
      size_t eq = spec.find('=');
      if (eq == std::string::npos) usage_error("--input-file wants NAME=FILE");
      input_files.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
    } else if (a == "--outputs") {
      for (const std::string& o : split(v, ','))
        if (!o.empty()) c.outputs.push_back(o);
    } else if (a == "--concurrency") {
      uint64_t n = parse_count(a, v);
      if (n == 0 || n > 4096) usage_error("--concurrency wants 1..4096");
      c.concurrency = static_cast<int>(n);
    } else if (a == "--requests") {
      c.requests = parse_count(a, v);
    } else if (a == "--duration-s") {
      c.duration_s = parse_double(a, v);
    } else if (a == "--warmup") {
      c.warmup = parse_count(a, v);
    } else if (a == "--timeout-s") {
      c.timeout_s = parse_double(a, v);
      if (c.timeout_s <= 0) usage_error("--timeout-s wants a positive number");
    } else {
      usage_error("unknown option " + a);
    }
  }
  if (c.model.empty()) usage_error("--model is required");
  if (c.inputs.empty()) usage_error("--inputs is required");
  if (c.requests == 0 && c.duration_s == 0) usage_error("--requests 0 needs a --duration-s bound");
  for (Input& in : c.inputs) fill_deterministic(in);
  for (const auto& [name, path] : input_files) {
    auto it = std::find_if(c.inputs.begin(), c.inputs.end(), [&](const Input& in) { return in.name == name; });
    if (it == c.inputs.end()) usage_error("--input-file names " + name + ", which --inputs does not");
    std::ifstream f(path, std::ios::binary);
    if (!f) usage_error("cannot read " + path);
    std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (data.size() != it->raw.size())
      usage_error(path + " has " + std::to_string(data.size()) + " bytes; " + name + " needs " +
                  std::to_string(it->raw.size()));
    it->raw = std::move(data);
  }

  Shared s;
  s.config = &c;
  if (c.protocol == "grpc") s.grpc_request = build_grpc_request(c);
  else s.http_request = build_http_request(c);

  std::vector<ThreadResult> results(static_cast<size_t>(c.concurrency));
  std::vector<std::thread> threads;
  threads.reserve(results.size());
  for (int t = 0; t < c.concurrency; ++t) {
    ThreadResult& r = results[static_cast<size_t>(t)];
    if (c.protocol == "grpc") threads.emplace_back([&s, &r, t] { grpc_client(s, r, t); });
    else threads.emplace_back([&s, &r] { http_client(s, r); });
  }
  // Timing starts once every thread is warm (its connection open), for all at once.
  while (s.warm_threads.load() < c.concurrency) std::this_thread::sleep_for(std::chrono::microseconds(200));
  s.t0 = Clock::now();
  s.deadline = s.t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(c.duration_s));
  s.go.store(true, std::memory_order_release);
  for (std::thread& t : threads) t.join();

  std::vector<double> all;
  uint64_t errors = 0;
  Clock::time_point end = s.t0;
  for (const ThreadResult& r : results) {
    all.insert(all.end(), r.latencies_us.begin(), r.latencies_us.end());
    errors += r.errors;
    end = std::max(end, r.end);
  }
  std::sort(all.begin(), all.end());
  double seconds = std::chrono::duration<double>(end - s.t0).count();
  double mean = 0;
  for (double v : all) mean += v;
  if (!all.empty()) mean /= static_cast<double>(all.size());

  std::printf(
      "{\"protocol\":\"%s\",\"concurrency\":%d,\"requests\":%llu,\"errors\":%llu,\"seconds\":%.4f,"
      "\"throughput_rps\":%.2f,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"mean_us\":%.1f}\n",
      c.protocol.c_str(), c.concurrency, static_cast<unsigned long long>(all.size()),
      static_cast<unsigned long long>(errors), seconds, seconds > 0 ? static_cast<double>(all.size()) / seconds : 0.0,
      percentile(all, 0.50), percentile(all, 0.90), percentile(all, 0.99), mean);
  std::fflush(stdout);
  return 0;
}
