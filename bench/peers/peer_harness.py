"""Shared plumbing of the device peer comparisons (bnb4bit_vs_exmy.py, blockwise_cast_vs_torch.py):
progress lines with an ETA, the exmy CLI runner, batch layouts (many cases side by side in one
array, so that one exmy process serves a whole case group) and the atomic summary writer with the
exit-code convention: 0 every bit equal, 1 a bit differs, 2 the script itself failed (bad
arguments, a library or exmy error, an interrupt) -- then the summary says so and keeps the
results gathered until then.

exmy's process start and its file I/O dominate these comparisons: a case costs one library call
in-process but two or three exmy processes. Laying the cases of one (scheme, options, dtype)
group side by side cuts that to two or three processes per group; the layouts only ever pad with
zeros where the library pads with zeros itself (docs/SEMANTICS.md 7.14.1-7.14.2 for bitsandbytes'
partial blocks, 7.15 for partial tiles), and --check-batching reruns cases one per process to
show the split results equal the unbatched ones.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback


class Interrupted(BaseException):  # not caught by the scripts' per-case "except Exception"
    pass


def _on_signal(signum, _frame):
    raise Interrupted(f"signal {signum}")


def install_signal_handlers():
    """SIGTERM (timeout(1)) and SIGINT end the run through the summary writer (exit 2)."""
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)


class Progress:
    """One line per case group: index, label, elapsed seconds and an ETA from the work done so
    far (work = a weight per group, e.g. its element count)."""

    def __init__(self, name, weights):
        self.name = name
        self.weights = list(weights)
        self.total = float(sum(self.weights)) or 1.0
        self.done = 0.0
        self.i = 0
        self.t0 = time.time()

    def elapsed(self):
        return time.time() - self.t0

    def step(self, label, note=""):
        self.done += self.weights[self.i] if self.i < len(self.weights) else 0.0
        self.i += 1
        el = self.elapsed()
        eta = el / self.done * (self.total - self.done) if self.done > 0 else float("nan")
        print(f"[{self.name}] {self.i}/{len(self.weights)} {label}: {note}  "
              f"elapsed {el:.1f}s  ETA {eta:.0f}s", flush=True)

    def say(self, text):
        print(f"[{self.name}] {text}  (elapsed {self.elapsed():.1f}s)", flush=True)


class ExmyError(RuntimeError):
    pass


class Exmy:
    """Runs the exmy CLI; counts processes and their wall time (reported in the summary)."""

    def __init__(self, path, device="cpu", threads=0):
        self.path = os.path.abspath(path)
        if not os.access(self.path, os.X_OK):
            raise ExmyError(f"--exmy {path}: not an executable file")
        self.device = device
        self.env = dict(os.environ)
        if threads > 0:
            self.env["OMP_NUM_THREADS"] = str(threads)
        self.calls = 0
        self.seconds = 0.0

    def __call__(self, *args):
        cmd = [self.path, *[str(a) for a in args]]
        if "--device" not in cmd:
            cmd += ["--device", self.device]
        t = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True, env=self.env)
        self.seconds += time.time() - t
        self.calls += 1
        if r.returncode:
            raise ExmyError(" ".join(cmd) + f" -> exit {r.returncode}: " +
                            (r.stdout + r.stderr).strip()[-600:])
        return r


def align_up(n, m):
    return (n + m - 1) // m * m


def layout_1d(sizes, block):
    """Offsets of 1-d cases side by side, each starting on a block boundary (so no block holds
    two cases); returns (offsets, total length)."""
    offs, at = [], 0
    for n in sizes:
        offs.append(at)
        at += align_up(max(n, 1), block)
    return offs, at


def layout_2d(shapes, R, C, min_width=1024):
    """Shelf packing of 2-d cases (rows, cols) into one matrix on the R x C tile grid: each case
    starts on a tile corner and owns whole tiles (its partial edge tiles padded with zeros).
    Returns ([(r0, c0)], (rows, cols))."""
    padded = [(align_up(max(r, 1), R), align_up(max(c, 1), C)) for r, c in shapes]
    width = max([align_up(min_width, C)] + [pc for _, pc in padded])
    order = sorted(range(len(shapes)), key=lambda i: -padded[i][0])
    pos = [None] * len(shapes)
    y = x = shelf_h = 0
    for i in order:
        pr, pc = padded[i]
        if x + pc > width:
            y += shelf_h
            x = shelf_h = 0
        pos[i] = (y, x)
        x += pc
        shelf_h = max(shelf_h, pr)
    return pos, (y + shelf_h, width)


def add_batching_args(ap, groups="groups"):
    """The options both peer scripts share: batching checks, a filter and the planted-bit hook."""
    ap.add_argument("--check-batching", type=int, default=0, metavar="K",
                    help="rerun K cases per %s one exmy process each; their bits must equal "
                         "the batched run's" % groups)
    ap.add_argument("--no-batch", action="store_true", help="one exmy process per case (slow)")
    ap.add_argument("--only", default="", help="run the groups whose name contains this text")
    ap.add_argument("--plant-diff", action="store_true",
                    help="test hook: flip one code of the first library result (expect exit 1)")


def write_atomic(path, text):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_summary(out, md, obj):
    """summary.json then summary.md, each written to a temporary file and renamed."""
    write_atomic(os.path.join(out, "summary.json"), json.dumps(obj, indent=1, default=str) + "\n")
    write_atomic(os.path.join(out, "summary.md"), md)


def run_main(name, body):
    """body() -> (exit status 0/1, finish) where finish(error_text_or_None) writes the summary.
    A script error (exception, signal) still writes the summary of what ran, then exits 2."""
    install_signal_handlers()
    state = {"finish": None}
    try:
        status = body(state)
        return status
    except (Exception, Interrupted) as e:  # noqa: BLE001 - reported, exit 2
        err = f"{type(e).__name__}: {e}"
        traceback.print_exc()
        print(f"[{name}] script error: {err}", file=sys.stderr, flush=True)
        if state["finish"] is not None:
            try:
                state["finish"](err)
            except Exception:  # noqa: BLE001
                traceback.print_exc()
        return 2
