// Work too small to share between threads: convolutions, products and recurrent steps of a few thousand
// multiply-adds (audio models' layers over a few frames) run on the calling thread alone.
#pragma once

namespace onyx::kernels {

// Whether work of `macs` multiply-adds runs on the calling thread alone.
inline bool runs_serially(double macs) { return macs < double(1 << 17); }

// While it lives, parallel regions the calling thread starts (oneDNN's among them) have a team of one. oneDNN
// splits a primitive's work for the OpenMP team size it sees when it is made and starts that team on every run;
// starting and joining a second thread costs more than a small primitive's work. Inactive when `serial` is false.
class SerialScope {
 public:
  explicit SerialScope(bool serial);
  ~SerialScope();
  SerialScope(const SerialScope&) = delete;
  SerialScope& operator=(const SerialScope&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace onyx::kernels
