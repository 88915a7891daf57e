# The extension module onyx._onyx is built by the project's CMake (target onyx_python); setuptools only packages
# it with python/onyx. Environment: ONYX_BUILD_JOBS (default 2) for the build's parallelism.
import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.path.join(os.path.abspath(self.build_temp), "cmake")
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        # -O2, the level onyx is built and tested at (gcc 12 at -O3 also warns falsely about string copies).
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build_dir, *generator, "-DCMAKE_BUILD_TYPE=Release",
                               "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG", "-DONYX_TESTS=OFF",
                               f"-DONYX_PYTHON_EXECUTABLE={sys.executable}"])
        jobs = os.environ.get("ONYX_BUILD_JOBS", "2")
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "onyx_python", "-j", jobs])
        built = glob.glob(os.path.join(build_dir, "python", "onyx", "_onyx*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one built extension module in {build_dir}/python/onyx, found {built}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)


setup(ext_modules=[Extension("onyx._onyx", sources=[])], cmdclass={"build_ext": CMakeBuild})
