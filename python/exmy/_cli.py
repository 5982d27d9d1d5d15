"""The console script ``exmy`` of the wheel: runs the exmy executable bundled in the package
(``exmy/bin/exmy``, python/CMakeLists.txt) with the same arguments, exit status and streams.
``python -m exmy ...`` is the same."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def executable() -> Path:
    """The bundled exmy executable (it may be missing: a build without RapidCheck has none)."""
    return Path(__file__).resolve().parent / "bin" / "exmy"


def main() -> None:
    exe = executable()
    if not exe.is_file():
        sys.stderr.write(f"exmy: this installation has no exmy executable ({exe}): it was built "
                         "without the CLI (RapidCheck not found); build from source "
                         "(scripts/setup.sh) for the command line\n")
        sys.exit(2)
    plot = exe.parent.parent / "plot"
    if plot.is_dir():
        os.environ.setdefault("EXMY_PLOT_DIR", str(plot))
    os.execv(str(exe), ["exmy", *sys.argv[1:]])


if __name__ == "__main__":
    main()
