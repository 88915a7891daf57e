#!/usr/bin/env bash
# Configures and builds onyx in build/ (Release with debug info): what running it needs, the libraries, the CLI and
# the Python package (the test command, scripts/test.sh, builds the tests on top); extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
ninja -C build onyx_runtime
# Debian's python3 imports the onyx package from this build through a .pth file in its site directory.
if [ -x /usr/bin/python3 ] && [ -e build/python/onyx/__init__.py ]; then
  site=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
  if [ -d "$site" ] && [ -w "$site" ]; then
    echo "$PWD/build/python" >"$site/onyx.pth"
    echo "build: python3 imports onyx from $PWD/build/python ($site/onyx.pth)"
  else
    echo "build: $site is not writable; import onyx with PYTHONPATH=$PWD/build/python"
  fi
fi
