"""`tinysched` command line: one sub-command per stage of the pipeline (verbs in tinysched.commands).

Every user-fixable problem arrives here as a TinyschedError and leaves as one line on stderr with exit
code 2 (`text.one_line`: a model string or tool output that reached the message raw cannot break it
into lines or move the cursor); nothing the user did can produce a traceback. SIGTERM unwinds like Ctrl-C, so staging
folders and temporary files are removed on the way out.
"""

from __future__ import annotations

import argparse
import signal
import sys

from tinysched import __version__
from tinysched.errors import TinyschedError
from tinysched.text import one_line


def build_parser() -> argparse.ArgumentParser:
    from tinysched.commands import analysis, build, device, export, report

    parser = argparse.ArgumentParser(
        prog="tinysched",
        description="Certified peak-memory deployment of int8 TFLite models on microcontrollers.",
    )
    parser.add_argument("--version", action="version", version=f"tinysched {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    analysis.register(sub)  # analyze, schedule, plan
    build.register(sub)  # build, verify
    export.register(sub)  # export
    device.register(sub)  # boards, flash, measure
    report.register(sub)  # report
    return parser


def _terminated(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a name that is not UTF-8 prints escaped, never raises
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        return int(args.func(args) or 0)
    except TinyschedError as err:
        print(f"tinysched: error: {one_line(str(err))}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("tinysched: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
