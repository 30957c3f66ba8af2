"""`report`: the one-page report for a model on a board (HTML, Markdown or the metadata JSON).

The verb plans like `build`, generates the C, cross-compiles in a temporary folder for the ELF's
sizes when arm-none-eabi-gcc is present, runs the comparisons it is asked for, and renders; the
report package itself only turns those facts into a document and pages.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from tinysched.boards import get_board
from tinysched.build import DoesNotFit, build_board
from tinysched.build.firmware import CC
from tinysched.commands.build import add_compare_arguments, compare_options_from_args, kernels_of
from tinysched.commands.common import read_bytes, read_checked_model
from tinysched.errors import EXIT_DOES_NOT_FIT, TinyschedError
from tinysched.files import write_atomic
from tinysched.pipeline import add_plan_arguments, generate, options_from_args, plan
from tinysched.report import FORMATS, check_metadata, collect_metadata, read_measured, render, run_comparisons
from tinysched.text import printable_path


def format_for(path: str | None, fmt: str | None) -> str:
    if fmt:
        return fmt
    suffix = Path(path).suffix.lower() if path else ""
    return {".md": "md", ".markdown": "md", ".json": "json"}.get(suffix, "html")


def metadata_for_model(model: str | Path, board_name: str, args: Any) -> dict[str, Any]:
    """Plan, generate, cross-build for sizes (unless --no-build or no cross compiler), compare."""
    board = get_board(board_name)
    measured = read_measured(args.measured) if getattr(args, "measured", None) else None
    model_bytes = read_bytes(model)
    planned = plan(read_checked_model(model), options_from_args(args))
    module, size, size_note = None, None, None
    if planned.codegen_note is None:
        module = generate(planned)
    if module is None:
        size_note = "firmware not built: the code generator does not support this model"
    elif getattr(args, "no_build", False):
        size_note = "firmware not built (--no-build)"
    elif shutil.which(CC) is None:
        size_note = f"firmware not built: {CC} not found"
    else:
        with tempfile.TemporaryDirectory(prefix="tinysched-report-") as tmp:
            try:
                size = build_board(module, board, Path(tmp), stand_in=False).image.size.to_json()
            except DoesNotFit as err:
                size = err.report.to_json()
            except TinyschedError as err:
                size_note = f"firmware build failed: {str(err).splitlines()[0]}"
        if size is not None:
            size_note = f"read from the ELF of the firmware built with {CC} for {board.name}"
    return collect_metadata(
        planned,
        board=board,
        kernels=kernels_of(module) if module is not None else None,
        size=size,
        size_note=size_note,
        comparisons=run_comparisons(planned, model_bytes, compare_options_from_args(args)),
        measured=measured,
    )


def cmd_report(args: Any) -> int:
    fmt = format_for(args.output, args.format)
    if args.from_metadata:
        try:
            doc = check_metadata(json.loads(Path(args.model).read_text()))
        except (OSError, json.JSONDecodeError) as err:
            raise TinyschedError(f"{args.model}: cannot read metadata: {err}") from None
    else:
        if not args.board:
            raise TinyschedError("report needs --board B (see `tinysched boards`)")
        doc = metadata_for_model(args.model, args.board, args)
    text = render(doc, fmt)
    if args.output:
        write_atomic(args.output, text)
        verdict = doc["fit"]["text"] if doc["fit"] else "no board"
        print(
            f"wrote {fmt} report to {printable_path(args.output)}: arena {doc['arena']['arena_bytes']:,} B "
            f"(lower bound {doc['arena']['lower_bound_bytes']:,} B), {verdict}",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(text)
    if doc["fit"] and doc["fit"]["verdict"] == "does-not-fit":
        print(f"tinysched: {doc['fit']['text']}", file=sys.stderr)
        return EXIT_DOES_NOT_FIT
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="one page: does the model fit the board, RAM and flash per region, why, what else saves",
    )
    p.add_argument("model", help=".tflite file (or, with --from-metadata, a <name>_metadata.json)")
    p.add_argument("--board", help="board name or alias (see `tinysched boards`)")
    p.add_argument("-o", "--output", help="write the report here (atomically); default: stdout")
    p.add_argument(
        "--format", choices=FORMATS, help="html (default, or from the -o suffix), md or json (the metadata)"
    )
    p.add_argument("--measured", metavar="FILE", help="the JSON of `tinysched measure --json` for this model")
    p.add_argument("--no-build", action="store_true", help="do not cross-compile; code size is then unknown")
    add_plan_arguments(p)
    add_compare_arguments(p)
    p.add_argument(
        "--from-metadata",
        action="store_true",
        help="render MODEL, a metadata JSON written by build or report",
    )
    p.set_defaults(func=cmd_report)
