#!/usr/bin/env bash
# Installs the Debian packages onyx needs to build and test; installs only what is missing (safe to re-run).
#   build:   g++, cmake, ninja, pkg-config, GoogleTest, oneDNN (convolutions and matrix products); image codecs
#            (libjpeg, libtiff, libwebp, libopenjp2)
#   fuzzing and the sanitized tests: clang, its runtime (libFuzzer, sanitizers) and its OpenMP runtime
#   tests:   python3-onnx + numpy (check the writer against onnx's own reader), libonnx-testdata (ONNX backend test models)
#   python:  pybind11 and the Python headers (the onyx Python package), pytest (its tests)
#   tools:   graphviz (`onyx graph` runs its dot program)
#   serve:   gRPC C++ and protobuf with their code generators, Boost.Beast (HTTP), nlohmann-json (`onyx serve`);
#            grpcio, requests and curl (its tests' real clients)
set -euo pipefail
packages=(g++ cmake ninja-build pkg-config libgtest-dev libdnnl-dev libjpeg62-turbo-dev libtiff-dev libwebp-dev
          libopenjp2-7-dev clang libclang-rt-14-dev libomp-14-dev python3-onnx python3-numpy libonnx-testdata
          pybind11-dev python3-pybind11 python3-dev python3-pytest graphviz
          libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libboost1.81-dev nlohmann-json3-dev
          python3-grpcio python3-requests curl)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
