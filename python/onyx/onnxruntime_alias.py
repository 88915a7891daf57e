"""Making `import onnxruntime` load onyx, only when asked.

In one process: ``onyx.install_onnxruntime_alias()``; from then on `import onnxruntime` and
`from onnxruntime.capi... import ...` give onyx's modules (onnxruntime.X is onyx.X).

For every process of a Python environment::

    python3 -m onyx.onnxruntime_alias install [--target DIR]    # DIR: default the user's site-packages
    python3 -m onyx.onnxruntime_alias uninstall [--target DIR]
    python3 -m onyx.onnxruntime_alias status [--target DIR]

`install` writes DIR/onnxruntime/__init__.py, three lines that install the alias, marked as onyx's. It refuses
when an `onnxruntime` that is not that file is importable from DIR (a real onnxruntime is never replaced), and
`uninstall` removes only what `install` wrote.
"""
import argparse
import importlib
import importlib.abc
import importlib.util
import os
import site
import sys

_ALIAS = "onnxruntime"
_MARK = "# onyx onnxruntime alias: written by `python3 -m onyx.onnxruntime_alias install`"
_PACKAGE_TEXT = f"""{_MARK}
import sys
import onyx
onyx.install_onnxruntime_alias()
sys.modules[__name__] = onyx
"""


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds onnxruntime and onnxruntime.X as onyx and onyx.X (the same module objects)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _ALIAS and not fullname.startswith(_ALIAS + "."):
            return None
        real = "onyx" + fullname[len(_ALIAS):]
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=True)

    def create_module(self, spec):
        module = importlib.import_module("onyx" + spec.name[len(_ALIAS):])
        self._specs = getattr(self, "_specs", {})
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        # The module was imported as onyx's; the import machinery set its __spec__ to the alias's: put it back.
        module.__spec__ = self._specs.pop(module.__spec__.name, module.__spec__)


def install_onnxruntime_alias():
    """Makes `import onnxruntime` in this process give onyx (and onnxruntime.X give onyx.X). Modules already
    imported under those names (other than onyx's own) are dropped from sys.modules, so the next import finds
    onyx."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
    for name in [n for n in sys.modules if n == _ALIAS or n.startswith(_ALIAS + ".")]:
        module = sys.modules[name]
        if not getattr(module, "__name__", "").startswith("onyx") and getattr(module, "__file__", "") and \
                not _is_alias_package(module):
            del sys.modules[name]


def _is_alias_package(module):
    try:
        with open(module.__file__) as f:
            return f.read().startswith(_MARK)
    except OSError:
        return False


def _target(args_target):
    return args_target or site.getusersitepackages()


def _status(target):
    init = os.path.join(target, _ALIAS, "__init__.py")
    if os.path.exists(init):
        with open(init) as f:
            return "alias" if f.read().startswith(_MARK) else "other"
    return "other" if os.path.exists(os.path.join(target, _ALIAS)) else "none"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m onyx.onnxruntime_alias",
                                     description="Make `import onnxruntime` load onyx (opt-in).")
    parser.add_argument("command", choices=["install", "uninstall", "status"])
    parser.add_argument("--target", help="the site-packages folder (default: the user's site-packages)")
    args = parser.parse_args(argv)
    target = _target(args.target)
    state = _status(target)
    package = os.path.join(target, _ALIAS)
    if args.command == "status":
        print({"alias": f"installed in {package}", "other": f"{package} is not onyx's alias",
               "none": f"not installed in {target}"}[state])
        return 0
    if args.command == "install":
        if state == "other":
            print(f"error: {package} exists and is not onyx's alias; not replacing it", file=sys.stderr)
            return 1
        os.makedirs(package, exist_ok=True)
        with open(os.path.join(package, "__init__.py"), "w") as f:
            f.write(_PACKAGE_TEXT)
        print(f"installed: `import onnxruntime` now loads onyx ({package})")
        return 0
    if state == "other":
        print(f"error: {package} is not onyx's alias; not removing it", file=sys.stderr)
        return 1
    if state == "none":
        print(f"not installed in {target}")
        return 0
    os.remove(os.path.join(package, "__init__.py"))
    cache = os.path.join(package, "__pycache__")
    if os.path.isdir(cache):
        for name in os.listdir(cache):
            os.remove(os.path.join(cache, name))
        os.rmdir(cache)
    os.rmdir(package)
    print(f"removed {package}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
