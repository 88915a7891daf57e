#!/usr/bin/python3
"""Checks deploy/ (the Dockerfile, the Kubernetes manifests and the KServe runtime) against `onyx serve` itself.

    check_deploy.py ONYX_CLI SOURCE_DIR

Static checks: every --flag the files pass is one `onyx serve --help` lists, every ONYX_* variable they set is one
the server reads (serve/cmd_serve.cpp: a flag's), the probes GET the server's health paths on the HTTP port, the ports declared (EXPOSE,
containerPorts, Service targetPorts, KServe's ports, Prometheus annotations) are the ones the server listens on
given those flags and variables (or its defaults, read from --help). Then the strongest check: it starts the
server as the image, the Deployment (with its init container filling the repository) and the KServe runtime
would, on free ports, and GETs the probes' paths, the model's readiness and the metrics.
Stdlib only; the YAML is read with PyYAML when it is installed, else with the small reader below (checked
against PyYAML where both exist).
"""
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HEALTH_LIVE = "/v2/health/live"
HEALTH_READY = "/v2/health/ready"
PORT_FLAGS = {"http": "--http-port", "grpc": "--grpc-port", "metrics": "--metrics-port"}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def check(cond, msg):
    if not cond:
        fail(msg)
    return bool(cond)


# ---------------------------------------------------------------- a small YAML reader (block style, flow lists
# and maps, quoted and plain scalars, comments, literal/folded blocks): enough for Kubernetes manifests.
class YamlError(Exception):
    pass


def _strip_comment(text):
    quote = None
    for i, c in enumerate(text):
        if quote:
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


def _scalar(text):
    t = text.strip()
    if not t:
        return None
    if t[0] == '"':
        return json.loads(t)
    if t[0] == "'":
        if len(t) < 2 or t[-1] != "'":
            raise YamlError("unterminated string: " + t)
        return t[1:-1].replace("''", "'")
    if t[0] in "[{":
        value, rest = _flow(t, 0)
        if t[rest:].strip():
            raise YamlError("trailing text after " + t)
        return value
    if t in ("null", "~", "Null", "NULL"):
        return None
    if t in ("true", "True", "TRUE"):
        return True
    if t in ("false", "False", "FALSE"):
        return False
    if re.fullmatch(r"[-+]?(0|[1-9][0-9]*)", t):
        return int(t)
    if re.fullmatch(r"[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?", t):
        return float(t)
    return t


def _flow(text, i):
    """Parses a flow collection or scalar starting at text[i]; returns (value, next index)."""
    while i < len(text) and text[i] == " ":
        i += 1
    if text[i] in "[{":
        close = "]" if text[i] == "[" else "}"
        items, i = [], i + 1
        while True:
            while i < len(text) and text[i] in " ,":
                i += 1
            if i >= len(text):
                raise YamlError("unterminated flow collection: " + text)
            if text[i] == close:
                break
            item, i = _flow(text, i)
            if close == "}":
                if not isinstance(item, str) or not text[i:].lstrip().startswith(":"):
                    raise YamlError("bad flow mapping: " + text)
                i = text.index(":", i) + 1
                value, i = _flow(text, i)
                items.append((item, value))
            else:
                items.append(item)
        return (dict(items) if close == "}" else items), i + 1
    if text[i] in "\"'":
        q, j = text[i], i + 1
        while j < len(text):
            if text[j] == "\\" and q == '"':
                j += 2
                continue
            if text[j] == q:
                if q == "'" and text[j + 1:j + 2] == "'":
                    j += 2
                    continue
                break
            j += 1
        return _scalar(text[i:j + 1]), j + 1
    j = i
    while j < len(text) and text[j] not in ",]}" and not (text[j] == ":" and text[j + 1:j + 2] in (" ", "")):
        j += 1
    return _scalar(text[i:j]), j


_KEY = re.compile(r'^("(?:[^"\\]|\\.)*"|\'(?:[^\']|\'\')*\'|[^\s\'"\[\]{}#,][^#]*?)\s*:(?:\s+(.*))?$')


class _Reader:
    def __init__(self, raw_lines):
        self.raw = raw_lines
        self.lines = []  # (indent, text, raw index); blank and comment-only lines left out
        for n, raw in enumerate(raw_lines):
            text = _strip_comment(raw)
            if text.strip():
                self.lines.append((len(text) - len(text.lstrip(" ")), text.strip(), n))
        self.i = 0

    def parse(self):
        if not self.lines:
            return None
        value = self.block(self.lines[0][0])
        if self.i != len(self.lines):
            raise YamlError("unexpected indentation at line %d" % (self.lines[self.i][2] + 1))
        return value

    def block(self, indent):
        text = self.lines[self.i][1]
        if text == "-" or text.startswith("- "):
            return self.sequence(indent)
        if _KEY.match(text):
            return self.mapping(indent)
        self.i += 1
        return _scalar(text)

    def sequence(self, indent):
        items = []
        while self.i < len(self.lines):
            ind, text, n = self.lines[self.i]
            if ind != indent or not (text == "-" or text.startswith("- ")):
                break
            rest = text[1:].lstrip()
            if not rest:
                self.i += 1
                items.append(self.nested(indent))
            elif rest == "-" or rest.startswith("- "):
                # "- - x": a sequence in a sequence
                self.lines[self.i] = (ind + len(text) - len(rest), rest, n)
                items.append(self.sequence(ind + len(text) - len(rest)))
            elif _KEY.match(rest) and not rest.startswith(("[", "{")):
                # "- key: value" opens a mapping whose keys line up with `key`
                self.lines[self.i] = (ind + len(text) - len(rest), rest, n)
                items.append(self.mapping(ind + len(text) - len(rest)))
            else:
                self.i += 1
                items.append(_scalar(rest))
        return items

    def nested(self, indent, allow_same_indent_seq=False):
        if self.i >= len(self.lines):
            return None
        ind, text, _ = self.lines[self.i]
        if ind > indent or (allow_same_indent_seq and ind == indent and (text == "-" or text.startswith("- "))):
            return self.block(ind)
        return None

    def mapping(self, indent):
        result = {}
        while self.i < len(self.lines):
            ind, text, n = self.lines[self.i]
            if ind != indent or text == "-" or text.startswith("- "):
                if ind > indent:
                    raise YamlError("unexpected indentation at line %d" % (n + 1))
                break
            m = _KEY.match(text)
            if not m:
                raise YamlError("expected 'key: value' at line %d: %s" % (n + 1, text))
            key = _scalar(m.group(1))
            rest = (m.group(2) or "").strip()
            self.i += 1
            if not rest:
                result[key] = self.nested(indent, allow_same_indent_seq=True)
            elif re.fullmatch(r"[|>][-+]?", rest):
                result[key] = self.block_scalar(indent, n, rest)
            else:
                result[key] = _scalar(rest)
        return result

    def block_scalar(self, indent, key_line, style):
        body = []
        end = key_line + 1
        while self.i < len(self.lines) and self.lines[self.i][0] > indent:
            end = self.lines[self.i][2] + 1
            self.i += 1
        body = self.raw[key_line + 1:end]
        width = min((len(b) - len(b.lstrip(" ")) for b in body if b.strip()), default=0)
        body = [b[width:] for b in body]
        text = "\n".join(body) if style[0] == "|" else " ".join(b.strip() for b in body if b.strip())
        return text + ("" if style.endswith("-") else "\n")


def yaml_documents_fallback(text):
    docs, current = [], []
    for line in text.splitlines():
        if re.match(r"^---(\s|$)", line):
            docs.append(current)
            current = []
        else:
            current.append(line)
    docs.append(current)
    return [d for d in (_Reader(lines).parse() for lines in docs) if d is not None]


def yaml_documents(path):
    text = Path(path).read_text()
    mine = yaml_documents_fallback(text)
    try:
        import yaml
    except ImportError:
        return mine
    theirs = [d for d in yaml.safe_load_all(text) if d is not None]
    check(mine == theirs, f"{path}: the fallback YAML reader disagrees with PyYAML (fix the reader or the file)")
    return theirs


# ---------------------------------------------------------------- the server's flags
def serve_help(cli):
    out = subprocess.run([cli, "serve", "--help"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        sys.exit(f"{cli} serve --help failed ({out.returncode}): {out.stderr}")
    return out.stdout


def help_flags(text):
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text))


def help_defaults(text):
    """The port defaults, from lines such as '--http-port N  REST port (default 8000; ...)'."""
    d = {}
    for kind, flag in PORT_FLAGS.items():
        m = re.search(re.escape(flag) + r"\b[^\n]*?\(default (\d+)", text)
        if check(m, f"`onyx serve --help` gives no default for {flag}"):
            d[kind] = int(m.group(1))
    return d


def env_read(src, flags):
    """The ONYX_* variables `onyx serve` reads: those of the flags cmd_serve.cpp reads through serve_setting (and
    its integer and boolean forms), and those it reads by name."""
    text = (src / "serve" / "cmd_serve.cpp").read_text()
    via_flags = set(re.findall(r'serve_(?:setting|int|bool)\(args,\s*"(--[a-z0-9-]+)"', text))
    check(via_flags and via_flags <= flags, f"serve/cmd_serve.cpp reads flags {sorted(via_flags - flags)} that "
                                            "--help does not list")
    return {env_name(f) for f in via_flags} | set(re.findall(r'getenv\("(ONYX_[A-Z0-9_]+)"\)', text))


def env_name(flag):
    return "ONYX_" + flag[2:].upper().replace("-", "_")


def split_args(args, where, flags):
    """[(flag, value)] of an argument list ('--f=v' or '--f v'); checks each flag against `flags`."""
    out, i = [], 0
    args = [str(a) for a in args]
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            name, eq, value = a.partition("=")
            check(name in flags, f"{where}: flag {name} is not an `onyx serve` flag")
            if not eq:
                if i + 1 < len(args) and not args[i + 1].startswith("--"):
                    value = args[i + 1]
                    i += 1
                else:
                    value = None
            out.append((name, value))
        else:
            fail(f"{where}: argument {a!r} is not a --flag (onyx serve takes no positional arguments)")
        i += 1
    return out


def setting(flag, arg_pairs, env):
    for name, value in arg_pairs:
        if name == flag:
            return value
    return env.get(env_name(flag))


def effective_ports(arg_pairs, env, defaults, where):
    ports = {}
    for kind, flag in PORT_FLAGS.items():
        v = setting(flag, arg_pairs, env)
        if v is None:
            ports[kind] = defaults.get(kind)
        elif check(re.fullmatch(r"[0-9]+", str(v)) and 0 < int(v) < 65536, f"{where}: {flag} is {v!r}"):
            ports[kind] = int(v)
    return ports


# ---------------------------------------------------------------- the Dockerfile
def dockerfile_instructions(path):
    """[(INSTRUCTION, arguments)] with continuations joined and comments dropped."""
    out, pending = [], ""
    for raw in Path(path).read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def exec_form(text, where):
    try:
        v = json.loads(text)
    except ValueError:
        fail(f"{where}: {text!r} is not in exec (JSON) form")
        return []
    check(isinstance(v, list) and all(isinstance(x, str) for x in v), f"{where}: {text!r} is not a list of strings")
    return v


def check_dockerfile(src, flags, defaults):
    path = src / "deploy" / "Dockerfile"
    ins = dockerfile_instructions(path)
    stages, current = [], None  # [{name, workdir, runs, copies, env, ...}]
    for word, rest in ins:
        if word == "FROM":
            m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?$", rest, re.I)
            current = {"image": m.group(1), "name": m.group(2), "workdir": "/", "runs": [], "copies": [],
                       "env": {}, "expose": [], "user": None, "entrypoint": None, "cmd": None}
            stages.append(current)
        elif current is None:
            check(word == "ARG", f"{path}: {word} before FROM")
        elif word == "WORKDIR":
            current["workdir"] = os.path.join(current["workdir"], rest)
        elif word == "RUN":
            current["runs"].append(rest)
        elif word == "COPY":
            current["copies"].append(rest.split())
        elif word == "ENV":
            for k, v in re.findall(r'(\w+)=("[^"]*"|\S+)', rest):
                current["env"][k] = v.strip('"')
        elif word == "EXPOSE":
            current["expose"] += [int(p.split("/")[0]) for p in rest.split()]
        elif word == "USER":
            current["user"] = rest
        elif word == "ENTRYPOINT":
            current["entrypoint"] = exec_form(rest, f"{path}: ENTRYPOINT")
        elif word == "CMD":
            current["cmd"] = exec_form(rest, f"{path}: CMD")
    if not check(len(stages) >= 2, f"{path}: expected a build stage and a runtime stage"):
        return None
    build, final = stages[0], stages[-1]
    for s in stages:
        check("bookworm" in s["image"] or s["image"].startswith("${"), f"{path}: stage {s['image']} is not Debian 12")
    check(re.search(r"ARG DEBIAN_IMAGE=debian:bookworm-slim", path.read_text()), f"{path}: base is not bookworm-slim")

    # The build: scripts/build.sh with cmake options that exist; the CLI copied from where it builds.
    build_runs = " ".join(build["runs"])
    m = re.search(r"scripts/build\.sh((?:\s+-D\w+=\w+)*)", build_runs)
    if check(m, f"{path}: the build stage does not run scripts/build.sh"):
        check('"$@"' in (src / "scripts" / "build.sh").read_text(), "scripts/build.sh does not pass its arguments on")
        cmake_text = (src / "CMakeLists.txt").read_text()
        for opt in re.findall(r"-D(\w+)=", m.group(1)):
            check(re.search(r"option\(" + opt + r"\b", cmake_text), f"{path}: -D{opt} is not an option of the build")
    setup = (src / "scripts" / "setup.sh").read_text()
    setup_pkgs = set(re.findall(r"[a-z0-9][a-z0-9+.-]+", setup[setup.index("packages=("):setup.index(")", setup.index("packages=("))]))
    for run in build["runs"]:
        if "apt-get install" in run:
            for p in apt_packages(run):
                check(p in setup_pkgs, f"{path}: build package {p} is not one of scripts/setup.sh's")
    copied = [c for c in final["copies"] if c and c[0] == f"--from={build['name']}"]
    if check(copied, f"{path}: the runtime stage copies nothing from the build stage"):
        src_path, dst = copied[0][1], copied[0][2]
        check(os.path.normpath(src_path) == os.path.normpath(os.path.join(build["workdir"], "build/onyx")),
              f"{path}: copies {src_path}, but the CLI builds as {build['workdir']}/build/onyx")
        check(os.path.dirname(dst) in ("/usr/local/bin", "/usr/bin", "/bin") and os.path.basename(dst) == "onyx",
              f"{path}: the CLI goes to {dst}, not onyx on the default PATH")

    # The image runs `onyx serve` as a non-root user, with flags the server has, and exposes its ports.
    check(final["entrypoint"] == ["onyx", "serve"], f"{path}: ENTRYPOINT is {final['entrypoint']}, not onyx serve")
    check(final["user"] and final["user"].split(":")[0] not in ("0", "root"), f"{path}: the image runs as root")
    args = final["cmd"] or []
    pairs = split_args(args, f"{path}: CMD", flags)
    check(setting("--model-repository", pairs, final["env"]), f"{path}: no --model-repository in CMD or ENV")
    for k in final["env"]:
        if k.startswith("ONYX_"):
            check(k in ENV_READ, f"{path}: ENV {k} is no variable the server reads")
    ports = effective_ports(pairs, final["env"], defaults, f"{path}")
    for kind, port in defaults.items():
        check(port in final["expose"], f"{path}: EXPOSE {final['expose']} leaves out the default {kind} port {port}")
    for kind, port in ports.items():
        check(port in final["expose"], f"{path}: EXPOSE {final['expose']} leaves out the {kind} port {port}")

    # The runtime packages provide every library the CLI links (where this machine can tell: Debian's dpkg).
    runtime_pkgs = set()
    for run in final["runs"]:
        if "apt-get install" in run:
            runtime_pkgs |= set(apt_packages(run))
    check_runtime_packages(path, runtime_pkgs)
    return {"args": args, "env": dict(final["env"]), "ports": ports}


def apt_packages(run):
    words = run.split("apt-get install", 1)[1].split("&&")[0].split()
    return [w for w in words if not w.startswith("-") and w != "\\"]


def check_runtime_packages(path, runtime_pkgs):
    cli = Path(sys.argv[1])
    if not (shutil.which("readelf") and shutil.which("dpkg-query")):
        print("note: no readelf/dpkg-query here; the runtime packages were not checked against the CLI's libraries")
        return
    out = subprocess.run(["readelf", "-d", str(cli)], capture_output=True, text=True)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out.stdout)
    base = {"libc6", "libgcc-s1", "libstdc++6"}  # in debian:bookworm-slim
    for lib in needed:
        owner = None
        for d in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/lib"):
            q = subprocess.run(["dpkg-query", "-S", os.path.join(d, lib)], capture_output=True, text=True)
            if q.returncode == 0:
                owner = q.stdout.split(":")[0]
                break
        if owner is None:
            print(f"note: no Debian package owns {lib}; not checked")
            continue
        check(owner in runtime_pkgs | base, f"{path}: the CLI links {lib} (package {owner}), which the runtime "
                                            f"stage does not install")
    for p in runtime_pkgs:
        q = subprocess.run(["dpkg-query", "-W", p], capture_output=True, text=True)
        check(q.returncode == 0, f"{path}: runtime package {p} is not a package of this Debian (dpkg-query -W)")


# ---------------------------------------------------------------- Kubernetes objects
def container_env(container, where):
    """NAME -> value of a container's env; valueFrom resolved the way Kubernetes would (resource fields)."""
    env = {}
    for e in container.get("env") or []:
        name = e["name"]
        if "value" in e:
            env[name] = str(e["value"])
        elif "valueFrom" in e:
            ref = e["valueFrom"].get("resourceFieldRef")
            if ref:
                check(ref.get("containerName", container["name"]) == container["name"],
                      f"{where}: {name} reads the resources of container {ref.get('containerName')}")
                kind, _, res = ref["resource"].partition(".")
                amount = ((container.get("resources") or {}).get(kind) or {}).get(res)
                if check(amount is not None, f"{where}: {name} reads {ref['resource']}, which the container does not set"):
                    env[name] = str(cpu_cores(amount) if res == "cpu" else amount)
            else:
                env[name] = "x"  # fieldRef and friends: any string will do
    for name in env:
        if name.startswith("ONYX_"):
            check(name in ENV_READ, f"{where}: env {name} is no variable the server reads (ONYX_ + a flag in "
                                    f"capitals; not every flag has one: {sorted(ENV_READ)})")
    return env


def cpu_cores(amount):
    s = str(amount)
    milli = int(s[:-1]) if s.endswith("m") else round(float(s) * 1000)
    return max(1, -(-milli // 1000))  # resourceFieldRef with divisor 1 rounds up


def container_ports(container):
    return {p.get("name"): int(p["containerPort"]) for p in container.get("ports") or []}


def resolve_port(port, ports, where):
    if isinstance(port, int) or re.fullmatch(r"[0-9]+", str(port)):
        check(int(port) in ports.values(), f"{where}: port {port} is none of the container's ports {ports}")
        return int(port)
    check(port in ports, f"{where}: port name {port!r} is none of the container's ports {sorted(ports)}")
    return ports.get(port)


def find_docs(path, kind):
    return [d for d in yaml_documents(path) if isinstance(d, dict) and d.get("kind") == kind]


def check_deployment(src, defaults):
    path = src / "deploy" / "kubernetes" / "deployment.yaml"
    deps = find_docs(path, "Deployment")
    if not check(len(deps) == 1, f"{path}: expected one Deployment"):
        return None
    dep = deps[0]
    pod = dep["spec"]["template"]
    spec = pod["spec"]
    check(dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(),
          f"{path}: the selector does not match the pod's labels")
    containers = spec["containers"]
    check(len(containers) == 1, f"{path}: expected one container")
    c = containers[0]
    where = f"{path}: container {c['name']}"
    check(not c.get("command"), f"{where}: sets command; the image's entrypoint is `onyx serve`")
    pairs = split_args(c.get("args") or [], where + " args", FLAGS)
    env = container_env(c, where)
    ports = effective_ports(pairs, env, defaults, where)
    cports = container_ports(c)
    for kind, port in ports.items():
        check(cports.get(kind) == port, f"{where}: containerPort {kind} is {cports.get(kind)}, the server's {kind} "
                                        f"port is {port}")
    # Probes: health paths, on the HTTP port.
    probe_paths = {"livenessProbe": HEALTH_LIVE, "readinessProbe": HEALTH_READY, "startupProbe": HEALTH_READY}
    for probe, want in probe_paths.items():
        p = c.get(probe)
        if not check(p and "httpGet" in p, f"{where}: no {probe} with httpGet"):
            continue
        check(p["httpGet"].get("path") == want, f"{where}: {probe} path is {p['httpGet'].get('path')}, want {want}")
        port = resolve_port(p["httpGet"].get("port"), cports, f"{where}: {probe}")
        check(port == ports["http"], f"{where}: {probe} port {port} is not the HTTP port {ports['http']}")
    sp = c.get("startupProbe") or {}
    check(sp.get("failureThreshold", 3) * sp.get("periodSeconds", 10) >= 300,
          f"{where}: the startup probe gives loading less than 5 minutes")
    # Resources: CPU requested (the HPA's utilization) and limited (threads).
    res = c.get("resources") or {}
    check((res.get("requests") or {}).get("cpu") and (res.get("limits") or {}).get("cpu"),
          f"{where}: no CPU request and limit")
    check("ONYX_THREADS" in env, f"{where}: ONYX_THREADS is not set (threads should follow the CPU limit)")
    # Prometheus scrapes the metrics port.
    ann = pod["metadata"].get("annotations") or {}
    check(str(ann.get("prometheus.io/scrape")) == "true", f"{path}: no prometheus.io/scrape annotation")
    check(str(ann.get("prometheus.io/port")) == str(ports["metrics"]),
          f"{path}: prometheus.io/port is {ann.get('prometheus.io/port')}, the metrics port {ports['metrics']}")
    check(ann.get("prometheus.io/path") == "/metrics", f"{path}: prometheus.io/path is not /metrics")
    # The repository is a mounted volume; the grace period outlasts the exit timeout.
    repo = setting("--model-repository", pairs, env)
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts") or []}
    volumes = {v["name"]: v for v in spec.get("volumes") or []}
    check(repo and any(repo == mp or repo.startswith(mp.rstrip("/") + "/") for mp in mounts),
          f"{where}: the model repository {repo} is on no volume mount")
    for name in mounts.values():
        check(name in volumes, f"{where}: mounts volume {name}, which the pod does not define")
    exit_timeout = int(setting("--exit-timeout-secs", pairs, env) or 30)
    pre_stop = 0
    cmd = (((c.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}).get("command") or []
    if cmd[:1] == ["sleep"]:
        pre_stop = int(cmd[1])
    grace = spec.get("terminationGracePeriodSeconds", 30)
    check(grace > exit_timeout + pre_stop, f"{path}: terminationGracePeriodSeconds {grace} does not outlast the "
                                           f"preStop pause ({pre_stop} s) and the exit timeout ({exit_timeout} s)")
    sc = spec.get("securityContext") or {}
    check(sc.get("runAsNonRoot") is True and sc.get("runAsUser", 0) != 0, f"{path}: the pod may run as root")
    return {"name": dep["metadata"]["name"], "labels": pod["metadata"]["labels"], "container": c, "args": c.get("args") or [],
            "env": env, "ports": ports, "cports": cports, "init": spec.get("initContainers") or [],
            "repo_mount": repo, "ready_path": c["readinessProbe"]["httpGet"]["path"],
            "live_path": c["livenessProbe"]["httpGet"]["path"], "exit_timeout": exit_timeout}


def check_service(src, dep):
    path = src / "deploy" / "kubernetes" / "service.yaml"
    svcs = find_docs(path, "Service")
    if not check(len(svcs) == 1, f"{path}: expected one Service"):
        return
    svc = svcs[0]
    check(svc["spec"].get("type", "ClusterIP") == "ClusterIP", f"{path}: not a ClusterIP Service")
    check(svc["spec"]["selector"].items() <= dep["labels"].items(), f"{path}: the selector matches no pod label")
    names = set()
    for p in svc["spec"]["ports"]:
        names.add(p.get("name"))
        target = resolve_port(p.get("targetPort", p["port"]), dep["cports"], f"{path}: port {p.get('name')}")
        if p.get("name") in dep["ports"]:
            check(target == dep["ports"][p["name"]], f"{path}: port {p['name']} targets {target}, the server's "
                                                     f"{p['name']} port is {dep['ports'][p['name']]}")
    check(names >= set(PORT_FLAGS), f"{path}: ports {sorted(n for n in names if n)}; want http, grpc and metrics")


def check_hpa(src, dep):
    path = src / "deploy" / "kubernetes" / "hpa.yaml"
    hpas = find_docs(path, "HorizontalPodAutoscaler")
    if not check(len(hpas) == 1, f"{path}: expected one HorizontalPodAutoscaler"):
        return
    h = hpas[0]
    check(h["apiVersion"] == "autoscaling/v2", f"{path}: apiVersion is not autoscaling/v2")
    ref = h["spec"]["scaleTargetRef"]
    check(ref["kind"] == "Deployment" and ref["name"] == dep["name"], f"{path}: scales {ref}, not the Deployment")
    cpu = [m for m in h["spec"]["metrics"] if m["type"] == "Resource" and m["resource"]["name"] == "cpu"]
    check(cpu, f"{path}: no CPU utilization metric")
    text = path.read_text()
    check("nv_inference_queue_duration_us" in text and "nv_inference_queue_duration_us" in
          (src / "serve" / "metrics.cpp").read_text(), f"{path}: the queue-time example names no metric of the server")


def check_kserve(src, defaults):
    rpath = src / "deploy" / "kserve" / "servingruntime.yaml"
    ipath = src / "deploy" / "kserve" / "inferenceservice.yaml"
    rts = find_docs(rpath, "ServingRuntime") + find_docs(rpath, "ClusterServingRuntime")
    if not check(len(rts) == 1, f"{rpath}: expected one ServingRuntime"):
        return None
    rt = rts[0]
    spec = rt["spec"]
    formats = {(f["name"], str(f.get("version"))) for f in spec["supportedModelFormats"]}
    check(("onnx", "1") in formats, f"{rpath}: onnx version 1 is not a supported model format")
    check({"v2", "grpc-v2"} <= set(spec.get("protocolVersions") or []), f"{rpath}: protocolVersions lack v2/grpc-v2")
    c = spec["containers"][0]
    where = f"{rpath}: container {c['name']}"
    check(c["name"] == "kserve-container", f"{where}: KServe's container is named kserve-container")
    pairs = split_args(c.get("args") or [], where + " args", FLAGS)
    env = container_env(c, where)
    check(setting("--model-repository", pairs, env) == "/mnt/models", f"{where}: the repository is not /mnt/models")
    ports = effective_ports(pairs, env, defaults, where)
    check(ports["http"] == 8080 and ports["grpc"] == 9000, f"{where}: REST/gRPC on {ports['http']}/{ports['grpc']}, "
                                                           "KServe's convention is 8080/9000")
    declared = sorted(int(p["containerPort"]) for p in c.get("ports") or [])
    check(declared == sorted([ports["http"], ports["grpc"]]),
          f"{where}: containerPorts {declared} are not the server's REST and gRPC ports {ports['http']}, {ports['grpc']}")
    ann = spec.get("annotations") or {}
    check(str(ann.get("prometheus.kserve.io/port")) == str(ports["metrics"]),
          f"{rpath}: prometheus.kserve.io/port is not the metrics port {ports['metrics']}")
    isvcs = find_docs(ipath, "InferenceService")
    if check(len(isvcs) == 1, f"{ipath}: expected one InferenceService"):
        model = isvcs[0]["spec"]["predictor"]["model"]
        check(model.get("runtime") == rt["metadata"]["name"], f"{ipath}: runtime is not {rt['metadata']['name']}")
        check(model["modelFormat"]["name"] in {f for f, _ in formats}, f"{ipath}: model format is not the runtime's")
        check(model.get("storageUri"), f"{ipath}: no storageUri")
    return {"args": c.get("args") or [], "env": env, "ports": ports}


# ---------------------------------------------------------------- running the server as each file would
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_status(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, ConnectionError, socket.timeout):
        return None, b""


def replace_setting(args, env, flag, value):
    """Sets `flag` where the file sets it (its args or its ONYX_ variable), else through the variable."""
    args = list(args)
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            args[i + 1] = value
            return args, env
        if a.startswith(flag + "="):
            args[i] = f"{flag}={value}"
            return args, env
    env = dict(env)
    env[env_name(flag)] = value
    return args, env


def run_server(cli, label, args, env, repo, ready_path=HEALTH_READY, live_path=HEALTH_LIVE, exit_timeout=30):
    args = [str(a) for a in args]
    args, env = replace_setting(args, env, "--model-repository", str(repo))
    ports = {}
    for kind, flag in PORT_FLAGS.items():
        ports[kind] = free_port()
        args, env = replace_setting(args, env, flag, str(ports[kind]))
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ONYX_")}
    full_env.update(env)
    log = tempfile.TemporaryFile()
    cmd = [cli, "serve"] + args
    print(f"{label}: {' '.join(shlex.quote(a) for a in cmd)}  "
          f"env {' '.join(f'{k}={v}' for k, v in sorted(env.items()))}")
    proc = subprocess.Popen(cmd, env=full_env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{ports['http']}"
    ok = True
    try:
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline and proc.poll() is None:
            status, _ = http_status(base + ready_path)
            if status == 200:
                break
            time.sleep(0.1)
        ok &= check(status == 200, f"{label}: GET {ready_path} answered {status}, not 200")
        if ok:
            ok &= check(http_status(base + live_path)[0] == 200, f"{label}: GET {live_path} is not 200")
            ok &= check(http_status(base + "/v2/models/demo/ready")[0] == 200, f"{label}: model demo is not ready")
            st, body = http_status(f"http://127.0.0.1:{ports['metrics']}/metrics")
            ok &= check(st == 200 and b"nv_inference" in body, f"{label}: GET /metrics on the metrics port: {st}")
            with socket.socket() as s:
                s.settimeout(5)
                ok &= check(s.connect_ex(("127.0.0.1", ports["grpc"])) == 0, f"{label}: nothing on the gRPC port")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=exit_timeout + 10)
                ok &= check(rc == 0, f"{label}: exited {rc} on SIGTERM, not 0")
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                ok &= check(False, f"{label}: did not exit on SIGTERM")
        else:
            ok &= check(False, f"{label}: the server exited ({proc.returncode})")
        if not ok:
            log.seek(0)
            print(f"---- {label}: server log\n{log.read().decode(errors='replace')}----")
        log.close()
    if ok:
        print(f"ok: {label}: ready, live, model ready, metrics and gRPC answer; SIGTERM exits 0")


def demo_repo(cli, root):
    model = Path(root) / "demo" / "1" / "model.onnx"
    model.parent.mkdir(parents=True)
    subprocess.run([cli, "demo", str(model)], check=True, stdout=subprocess.DEVNULL, timeout=120)
    return Path(root)


def run_init_containers(cli, dep, root):
    """Runs the Deployment's init containers with the mount paths moved under `root` and `onyx` the CLI."""
    bindir = Path(root) / "bin"
    bindir.mkdir()
    (bindir / "onyx").symlink_to(os.path.abspath(cli))
    mounts = {m["mountPath"]: m["name"] for m in dep["container"].get("volumeMounts") or []}
    repo_dir = Path(root) / "models"
    repo_dir.mkdir()
    env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    for ic in dep["init"]:
        cmd = [str(x) for x in (ic.get("command") or []) + (ic.get("args") or [])]
        for m in ic.get("volumeMounts") or []:
            check(m["name"] in mounts.values(), f"init container {ic['name']}: mounts {m['name']}, which the server "
                                                "does not")
            cmd = [x.replace(m["mountPath"], str(repo_dir)) for x in cmd]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, f"init container {ic['name']}: {cmd} failed: {r.stderr}")
    check((repo_dir / "demo" / "1" / "model.onnx").is_file(), "the init containers wrote no demo/1/model.onnx")
    # the server's repository path relative to the mount it is on
    for mp in mounts:
        if dep["repo_mount"] == mp or dep["repo_mount"].startswith(mp.rstrip("/") + "/"):
            return repo_dir / os.path.relpath(dep["repo_mount"], mp)
    return repo_dir


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cli, src = sys.argv[1], Path(sys.argv[2])
    global FLAGS
    text = serve_help(cli)
    FLAGS = help_flags(text)
    check("--model-repository" in FLAGS and "--http-port" in FLAGS, "`onyx serve --help` lists no flags")
    defaults = help_defaults(text)
    global ENV_READ
    ENV_READ = env_read(src, FLAGS)

    docker = check_dockerfile(src, FLAGS, defaults)
    dep = check_deployment(src, defaults)
    if dep:
        check_service(src, dep)
        check_hpa(src, dep)
    kserve = check_kserve(src, defaults)
    static_failures = len(failures)
    print(f"static checks: {'ok' if not static_failures else f'{static_failures} failure(s)'}")

    with tempfile.TemporaryDirectory(prefix="onyx-deploy-") as tmp:
        tmp = Path(tmp)
        if docker:
            run_server(cli, "Dockerfile", docker["args"], docker["env"], demo_repo(cli, tmp / "docker"))
        if dep:
            (tmp / "k8s").mkdir()
            repo = run_init_containers(cli, dep, tmp / "k8s")
            run_server(cli, "Deployment", dep["args"], dep["env"], repo, dep["ready_path"], dep["live_path"],
                       dep["exit_timeout"])
        if kserve:
            run_server(cli, "ServingRuntime", kserve["args"], kserve["env"], demo_repo(cli, tmp / "kserve"))

    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("deploy/ agrees with onyx serve")
    return 0


FLAGS = set()
ENV_READ = set()

if __name__ == "__main__":
    sys.exit(main())
