#!/usr/bin/python3
"""Run onyx on every case of the hostile corpus and check that each ends as its case.json expects.

    /usr/bin/python3 tests/hostile/run_corpus.py [--make] [--no-budgets] ONYX_CLI CORPUS_DIR

Each case runs as `ONYX_CLI run CASE/model.onnx --input NAME=FILE ... --timeout-ms 2000 --memory-limit-mb 256`
(--no-budgets leaves the two budget flags out). A case's outcome is one of:

    ok                the case ended as expected
    crash             killed by a signal, or a sanitizer report / "terminate called" / "Segmentation" on stderr
    hang              still running after 30 s of wall time (then killed)
    memory            peak RSS above 512 MB (the run is killed as soon as the limit is seen)
    accepted-invalid  exit 0 where an error was expected
    rejected-valid    an error where success was expected
    wrong-error       an error whose text contains none of the expected substrings
    wrong-result      exit 0 but an output differs from the expected values

Prints one line per case that is not ok and a table of outcomes per category; exits 1 if any case is not ok,
except the cases listed in expected_failures.txt (next to this script, each with its reason): a listed case that
passes, or that the corpus no longer has, fails the run too, so the list only shrinks.
--make first writes the corpus into CORPUS_DIR with make_corpus.py (as the CMake test does).
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

HANG_S = 30
RSS_LIMIT_MB = 512
BUDGET_FLAGS = ['--timeout-ms', '2000', '--memory-limit-mb', '256']
OUTCOMES = ['ok', 'crash', 'hang', 'memory', 'accepted-invalid', 'rejected-valid', 'wrong-error', 'wrong-result']
# What a crashing process leaves on stderr even when it exits with a plain status (sanitizers exit with 1).
CRASH_RE = re.compile(r'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|MemorySanitizer|ThreadSanitizer'
                      r'|:\d+:\d+: runtime error:|terminate called|Segmentation|stack overflow|stack-overflow')


def rss_kb(pid):
    """Current resident set size of pid in KiB (0 once it is gone)."""
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def feeds_of(case_dir, meta):
    """[(NAME, PATH)]: the explicit "feeds" of case.json, else every input_<NAME>.pb / .npy file."""
    if 'feeds' in meta:
        return [(n, os.path.join(case_dir, f)) for n, f in meta['feeds']]
    out = []
    files = glob.glob(os.path.join(case_dir, 'input_*.pb')) + glob.glob(os.path.join(case_dir, 'input_*.npy'))
    for path in sorted(files):
        base = os.path.basename(path)
        out.append((base[len('input_'):base.rindex('.')], path))
    return out


def run_process(cmd, cwd):
    """Run cmd with a wall-clock and an RSS watchdog; returns (status, peak_kb, killed_for, stdout, stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # A session of its own, so that a kill reaches anything the CLI started.
        p = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        start, peak, killed = time.monotonic(), 0, None
        while True:
            pid, status, usage = os.wait4(p.pid, 0 if killed else os.WNOHANG)
            if pid:
                break
            rss = rss_kb(p.pid)
            peak = max(peak, rss)
            if rss > RSS_LIMIT_MB * 1024:
                killed = 'memory'
            elif time.monotonic() - start > HANG_S:
                killed = 'hang'
            if killed:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            else:
                time.sleep(0.02)
        p.returncode = os.waitstatus_to_exitcode(status)   # reaped here, so Popen must not wait again
        peak = max(peak, usage.ru_maxrss)                   # ru_maxrss is in KiB on Linux
        out.seek(0)
        err.seek(0)
        return status, peak, killed, out.read().decode('utf-8', 'replace'), err.read().decode('utf-8', 'replace')


def compare_outputs(expected, outdir):
    """None when every expected output matches output_K.pb, else a short reason."""
    for k, want in enumerate(expected):
        if want is None:
            continue
        path = os.path.join(outdir, f'output_{k}.pb')
        if not os.path.exists(path):
            return f'output_{k}.pb was not written'
        t = onnx.TensorProto()
        with open(path, 'rb') as f:
            t.ParseFromString(f.read())
        got = numpy_helper.to_array(t)
        exp = np.array(want['values'], dtype=want['dtype']).reshape(want['shape'])
        if got.dtype != exp.dtype or list(got.shape) != list(exp.shape):
            return f'output {k}: {got.dtype}{list(got.shape)}, expected {exp.dtype}{list(exp.shape)}'
        if exp.dtype.kind == 'f':
            same = np.allclose(got, exp, rtol=1e-6, atol=1e-6, equal_nan=True)
        else:
            same = np.array_equal(got, exp)
        if not same:
            return f'output {k}: {got.ravel()[:8].tolist()}, expected {exp.ravel()[:8].tolist()}'
    return None


def run_case(cli, case_dir, budgets):
    with open(os.path.join(case_dir, 'case.json')) as f:
        meta = json.load(f)
    expect = meta['expect']
    outdir = tempfile.mkdtemp(prefix='hostile-out-')
    try:
        cmd = [cli, 'run', os.path.join(case_dir, 'model.onnx')]
        for name, path in feeds_of(case_dir, meta):
            cmd += ['--input', f'{name}={path}']
        cmd += ['--output-dir', outdir] + (BUDGET_FLAGS if budgets else [])
        # The working folder is an empty one, so that paths resolved against it instead of the model's folder
        # show up as failures.
        status, peak_kb, killed, _, stderr = run_process(cmd, outdir)
        rc = os.waitstatus_to_exitcode(status)
        first = next((l for l in stderr.splitlines() if l.strip()), '')
        detail = f'rc={rc} peak={peak_kb // 1024}MB: {first}'
        if killed == 'hang':
            outcome = 'hang'
            detail = f'killed by the runner after {HANG_S} s; stderr so far: {first}'
        elif killed == 'memory' or peak_kb > RSS_LIMIT_MB * 1024:
            outcome = 'memory'
            if killed:
                detail = (f'killed by the runner at {peak_kb // 1024} MB RSS (limit {RSS_LIMIT_MB}); '
                          f'stderr so far: {first}')
        elif os.WIFSIGNALED(status) or CRASH_RE.search(stderr):
            outcome = 'crash'
            m = CRASH_RE.search(stderr)
            if m:
                line = next(l for l in stderr.splitlines() if m.group(0) in l)
                detail = f'rc={rc}: {line.strip()}'
        elif rc == 0:
            if 'error' in expect and not expect.get('or_ok'):
                outcome = 'accepted-invalid'
            else:
                reason = compare_outputs(expect.get('outputs', []), outdir)
                outcome = 'wrong-result' if reason else 'ok'
                if reason:
                    detail = f'rc=0: {reason}'
        elif 'error' not in expect:
            outcome = 'rejected-valid'
        else:
            subs = expect['error'] if isinstance(expect['error'], list) else [expect['error']]
            outcome = 'ok' if any(s.lower() in stderr.lower() for s in subs) else 'wrong-error'
            if outcome == 'wrong-error':
                detail += f'  (expected one of {subs})'
        return meta, outcome, detail
    finally:
        shutil.rmtree(outdir, ignore_errors=True)


def expected_failures():
    """{case: reason} from expected_failures.txt."""
    listed = {}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'expected_failures.txt')
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            name, sep, reason = line.partition('  # ')
            if not sep or not reason.strip():
                sys.exit(f'{path}:{n}: an entry is "CASE  # reason"')
            listed[name.strip()] = reason.strip()
    return listed


def budgets_supported(cli):
    """Whether `onyx run` knows the budget flags (they may not exist yet in an older build)."""
    r = subprocess.run([cli, 'run', '--help'], capture_output=True, text=True)
    text = r.stdout + r.stderr
    return all(flag in text for flag in BUDGET_FLAGS[::2])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('cli', help='the onyx command-line program')
    ap.add_argument('corpus', help='the corpus folder (written by make_corpus.py)')
    ap.add_argument('--make', action='store_true', help='write the corpus first with make_corpus.py')
    ap.add_argument('--no-budgets', action='store_true', help='leave out --timeout-ms and --memory-limit-mb')
    ap.add_argument('--filter', default='', help='run only the cases whose name contains this text')
    ap.add_argument('-j', '--jobs', type=int, default=2, help='cases run at once (default 2)')
    ap.add_argument('-v', '--verbose', action='store_true', help='print a line for every case, ok ones too')
    args = ap.parse_args()

    cli = os.path.abspath(args.cli)
    corpus = os.path.abspath(args.corpus)
    if args.make:
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([sys.executable, os.path.join(here, 'make_corpus.py'), corpus], check=True)
    budgets = not args.no_budgets
    if budgets and not budgets_supported(cli):
        sys.exit(f'run_corpus.py: {cli} run does not accept --timeout-ms / --memory-limit-mb; '
                 'run with --no-budgets (Loop-forever and memory-growth cases then end as hang or memory)')

    cases = sorted(d for d in os.listdir(corpus)
                   if os.path.exists(os.path.join(corpus, d, 'case.json')) and args.filter in d)
    if not cases:
        sys.exit(f'run_corpus.py: no cases in {corpus}')
    # The slow ones (loops stopped by a deadline) start first, so that the rest fill the other worker.
    cases.sort(key=lambda d: not d.startswith('cf_'))

    start = time.monotonic()
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_case, cli, os.path.join(corpus, d), budgets): d for d in cases}
        for fut in concurrent.futures.as_completed(futures):
            results[futures[fut]] = fut.result()

    listed = expected_failures()
    table = {}
    bad = expected = 0
    for name in sorted(results):
        meta, outcome, detail = results[name]
        row = table.setdefault(meta['category'], dict.fromkeys(OUTCOMES, 0))
        row[outcome] += 1
        if outcome != 'ok' and name in listed:
            expected += 1
            detail += f'  (expected: {listed[name]})'
        elif outcome != 'ok':
            bad += 1
        elif name in listed:
            bad += 1
            print(f'{"now passes":16} {name}: remove it from expected_failures.txt')
        if outcome != 'ok' or args.verbose:
            print(f'{outcome:16} {name} [{meta["category"]}] {meta["what"]}\n{"":17}{detail}')
    if not args.filter:
        for name in sorted(set(listed) - set(results)):
            bad += 1
            print(f'{"gone":16} {name} is listed in expected_failures.txt but is not in the corpus')

    width = max(len(c) for c in table) + 2
    print()
    print(''.ljust(width) + ''.join(o.rjust(len(o) + 2) for o in OUTCOMES) + '   total')
    for cat in sorted(table):
        row = table[cat]
        print(cat.ljust(width) + ''.join(str(row[o]).rjust(len(o) + 2) for o in OUTCOMES)
              + str(sum(row.values())).rjust(8))
    print(f'\n{len(results)} cases, {bad} not as expected, {expected} listed in expected_failures.txt, '
          f'{time.monotonic() - start:.0f} s'
          + ('' if budgets else ' (without budgets)'))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
