"""`boards`, `flash` and `measure`: the boards tinysched builds for, writing a build onto one, and
running a build on one.

`flash BUILD_DIR` writes exactly the image `build` wrote (sha256 checked) onto the board over its
debug probe, with openocd or pyocd (whichever is installed), printing the exact command.

`measure BUILD_DIR` runs exactly the image `build` wrote (its ELF's sha256 is checked against the
build's metadata and reported), on the board over `--port` or on the QEMU stand-in that `build`
compiled the same sources for. `measure MODEL --board B` is the shortcut: `build` (same flags) into
`-o DIR` or a temporary folder, then `measure` of that folder.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tinysched.boards import Board, all_boards, get_board
from tinysched.build.elfsize import SizeReport
from tinysched.build.firmware import FirmwareImage
from tinysched.commands.build import add_stack_argument, build_model, build_options_from_args
from tinysched.commands.common import add_output_arguments, print_json
from tinysched.device.reference import interface_inputs, reference_io, step_checks, step_tensors
from tinysched.device.runner import (
    FLASH_TOOLS,
    SEMIHOST_REFUSED,
    MeasureResult,
    flash,
    flash_command,
    flash_tool,
    invoke_instructions_estimate,
    measure_image,
    measure_selftest,
)
from tinysched.errors import TinyschedError
from tinysched.files import is_tinysched_folder
from tinysched.model.interface import IoEdge
from tinysched.pipeline import add_plan_arguments, options_from_args
from tinysched.report.format import headline, used_of_kind
from tinysched.report.metadata import per_type


def cmd_boards(args: argparse.Namespace) -> int:
    boards = all_boards()
    if args.json:
        print_json([b.summary() for b in boards])
        return 0
    print(f"{'board':<19} {'core':<11} {'fpu':<17} {'clock':>8} {'flash':>9} {'ram':>9}  runs on / aliases")
    for b in boards:
        runs = f"qemu {b.qemu['machine']}" if b.qemu else f"emulated by {', '.join(b.stand_ins)}"
        print(
            f"{b.name:<19} {b.core:<11} {b.fpu + '/' + b.float_abi:<17} {b.cpu_hz / 1e6:>5.0f}MHz "
            f"{b.flash_bytes // 1024:>6}KiB {b.ram_bytes // 1024:>6}KiB  {runs}; {', '.join(b.aliases)}"
        )
    return 0


def read_build(directory: Path) -> dict[str, Any]:
    """The metadata document of a firmware build folder, checked to describe a built image."""
    if not is_tinysched_folder(directory):
        raise TinyschedError(f"{directory}: not a folder written by `tinysched build`")
    docs = sorted(directory.glob("*_metadata.json"))
    if len(docs) != 1:
        raise TinyschedError(f"{directory}: expected one <prefix>_metadata.json, found {len(docs)}")
    try:
        doc = json.loads(docs[0].read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise TinyschedError(f"{docs[0]}: cannot read the build's metadata: {err}") from None
    build = doc.get("build") if isinstance(doc, dict) else None
    if not isinstance(build, dict) or "target" not in build:
        raise TinyschedError(f"{docs[0]}: no build record (written by another version?)")
    if build["target"] == "host":
        raise TinyschedError(f"{directory}: a host build; `tinysched verify MODEL` checks host code")
    if build.get("kind") != "firmware":
        raise TinyschedError(f"{directory}: holds sources only (built with --no-compile)")
    return doc


def _image(
    directory: Path, elf: str, sha256: str, symbol: str, size: dict[str, Any], board: Board, identity: str
) -> FirmwareImage:
    path = directory / elf
    try:
        actual = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as err:
        raise TinyschedError(f"{path}: cannot read the image: {err.strerror or err}") from None
    if actual != sha256:
        raise TinyschedError(f"{path}: the image changed since `build` wrote it (sha256 differs)")
    return FirmwareImage(
        board.name, path, None, path, path, path, symbol, SizeReport.from_json(size), actual, identity
    )


def measure_build(
    directory: Path,
    *,
    port: str | None,
    emulate: bool,
    n_inputs: int,
    seed: int = 0,
    log: Any = lambda _m: None,
    semihost_inputs: bool = False,
    flash_first: bool = True,
    probe: str | None = None,
    stand_in: str | None = None,
) -> tuple[MeasureResult, dict[str, Any]]:
    """Run a build folder's image; returns the result and the build record. On a real board the
    image is flashed first unless `flash_first` is off (already flashed by `tinysched flash`);
    under emulation `stand_in` picks one of the stand-in images the build wrote (default: the first)."""
    doc = read_build(directory)
    record = doc["build"]
    board = get_board(record["target"])
    if n_inputs < 1:
        raise TinyschedError("--inputs must be 1 or more")
    if semihost_inputs and not emulate:
        raise TinyschedError(SEMIHOST_REFUSED)
    model = directory / record["model_file"]
    symbol = record["model_info_symbol"]
    if stand_in is not None and not emulate:
        raise TinyschedError("a stand-in runs only under emulation: drop --port")
    if emulate and not board.emulated:
        emulated = _stand_in_image(directory, record, board, stand_in)
        run_board = get_board(emulated["board"])
        image = _image(
            directory, emulated["elf"], emulated["sha256"], symbol, emulated["size_report"], run_board,
            emulated["image_id"],
        )  # fmt: skip
    else:
        if not emulate and board.emulated:
            raise TinyschedError(f"board {board.name} exists only under emulation: drop --port")
        if stand_in is not None:
            raise TinyschedError(
                f"{directory}: built for {board.name}, which runs under QEMU itself: drop --stand-in"
            )
        run_board = board
        image = _image(
            directory, record["files"]["elf"], record["image_sha256"], symbol, record["size_report"], board,
            record["image_id"],
        )  # fmt: skip
    # the image's own input and output types: int8 where the build's --io int8 changed an edge
    edges = [IoEdge.from_json(e) for e in (record.get("io") or {}).get("edges", [])]
    input_sets = interface_inputs(model, edges, seed, n_inputs)
    macs = record.get("macs")
    references, outputs = reference_io(model, edges, input_sets, preserve_all_tensors=True)
    expected = [[a.tobytes() for a in outs] for outs in outputs]
    steps = step_tensors(record.get("steps") or [])
    inputs = [[a.tobytes() for a in s] for s in input_sets]
    result = measure_image(
        image, run_board, inputs, expected, int(record["arena_bytes"]),
        arena_high_water_planned=int(record["arena_high_water_bytes"]),
        regions_planned=record.get("arena_regions") or (), requested=board,
        port=None if emulate else port, log=log, semihost_inputs=semihost_inputs,
        expected_image_id=image.image_id, invoke_instructions=invoke_instructions_estimate(macs=macs),
        flash_first=flash_first, probe=probe, expected_steps=[step_checks(r, steps) for r in references],
    )  # fmt: skip
    result.size = dict(record["size_report"])
    if run_board is not board:
        result.size["emulated_image"] = emulated["size_report"]
    return result, {**record, "ran_image_sha256": image.sha256, "build_dir": str(directory)}


def _stand_in_image(
    directory: Path, record: dict[str, Any], board: Board, name: str | None
) -> dict[str, Any]:
    """The build record's entry for stand-in `name` (default: the first image the build wrote)."""
    images = record.get("emulated_images") or (
        [record["emulated_image"]] if record.get("emulated_image") else []
    )
    if not images:
        raise TinyschedError(f"{directory}: {board.name} has no emulated stand-in image in this build")
    if name is None:
        return images[0]
    wanted = board.stand_in(name).name  # refuses a board that is not one of its stand-ins
    for entry in images:
        if entry["board"] == wanted:
            return entry
    built = ", ".join(e["board"] for e in images)
    raise TinyschedError(
        f"{directory}: no image for stand-in {wanted} in this build (built: {built}); rebuild"
    )


def board_image(directory: Path, board_name: str | None = None) -> tuple[Board, FirmwareImage]:
    """The real board a firmware build folder is for and its image (sha256 checked against the
    build's metadata); `board_name`, when given, must name that board."""
    if not directory.is_dir():
        raise TinyschedError(
            f"{directory}: no such folder (give a folder written by `tinysched build --board B`)"
        )
    record = read_build(directory)["build"]
    board = get_board(record["target"])
    if board_name is not None and get_board(board_name).name != board.name:
        raise TinyschedError(
            f"{directory}: built for {board.name}, not {get_board(board_name).name}; rebuild with --board"
        )
    if board.emulated:
        raise TinyschedError(
            f"{directory}: built for {board.name}, which exists only under emulation: nothing to flash "
            "(`tinysched measure` runs it on QEMU)"
        )
    image = _image(
        directory, record["files"]["elf"], record["image_sha256"], record["model_info_symbol"],
        record["size_report"], board, record["image_id"],
    )  # fmt: skip
    return board, image


def cmd_flash(args: argparse.Namespace) -> int:
    directory = Path(args.build_dir)
    board, image = board_image(directory, args.board)
    if args.dry_run:
        tool = args.tool
        if tool is None:
            try:
                tool = flash_tool(board)
            except TinyschedError:
                tool = next(t for t in FLASH_TOOLS if board.flash.get(f"{t}_target"))
        print(shlex.join(flash_command(board, image.elf, tool, args.probe)))
        return 0
    cmd = flash(board, image.elf, lambda m: print(m, flush=True), probe=args.probe, tool=args.tool)
    print(
        f"flashed     {board.name} with image {image.image_id} ({cmd[0]}); "
        f"`tinysched measure {shlex.quote(str(directory))} --port DEV --no-flash` measures it"
    )
    return 0


class ProgressLog:
    """`measure`'s progress on stderr, each line with the time since the command started."""

    def __init__(self) -> None:
        self.started = time.perf_counter()

    def __call__(self, message: str) -> None:
        elapsed = time.perf_counter() - self.started
        for k, line in enumerate(str(message).splitlines() or [""]):
            stamp = f"[{elapsed:6.1f} s] " if k == 0 else " " * 11
            print(f"tinysched: {stamp}{line}", file=sys.stderr, flush=True)


def latency_estimate(instructions: int | None, board: Board) -> str | None:
    """Emulated instructions at the board's clock, at one instruction per cycle: an estimate only."""
    if not instructions:
        return None
    ms = 1000.0 * instructions / board.cpu_hz
    return (
        f"~{ms:,.1f} ms per inference at {board.cpu_hz / 1e6:.0f} MHz (estimate: emulated instructions "
        "at one per cycle; a real core differs with wait states, caches and dual issue)"
    )


def cmd_measure(args: argparse.Namespace) -> int:
    emulate = bool(args.emulate or args.port is None)
    log = (lambda _m: None) if args.json else ProgressLog()
    semihost = bool(args.semihost_inputs)
    if semihost and args.port is not None:
        raise TinyschedError(SEMIHOST_REFUSED)  # before the (slow) code generation
    target = Path(args.target)
    record: dict[str, Any] | None = None
    flash_first = not args.no_flash
    if args.target == "selftest":
        if not args.board:
            raise TinyschedError("measure selftest needs --board B")
        with tempfile.TemporaryDirectory(prefix="tinysched-measure-") as tmp:
            result = measure_selftest(
                get_board(args.board), Path(tmp), n_inputs=args.inputs, port=args.port,
                emulate=emulate if args.port is None else False, log=log, semihost_inputs=semihost,
                stand_in=args.stand_in,
            )  # fmt: skip
    elif target.is_dir():
        if args.board or args.output:
            raise TinyschedError(f"{target}: a build folder already names its board; drop --board and -o")
        result, record = measure_build(
            target, port=args.port, emulate=emulate, n_inputs=args.inputs, log=log, semihost_inputs=semihost,
            flash_first=flash_first, probe=args.probe, stand_in=args.stand_in,
        )  # fmt: skip
    else:
        if not args.board:
            raise TinyschedError(
                "measure MODEL needs --board B (or give a folder written by `tinysched build`)"
            )
        with tempfile.TemporaryDirectory(prefix="tinysched-measure-") as tmp:
            out = Path(args.output) if args.output else Path(tmp) / "build"
            log(f"building {target} for {args.board} into {out}")
            build_model(
                target,
                out,
                args.board,
                options=options_from_args(args),
                build=build_options_from_args(args),
                report=False,
                force=args.force,
            )
            result, record = measure_build(
                out, port=args.port, emulate=emulate, n_inputs=args.inputs, log=log,
                semihost_inputs=semihost, flash_first=flash_first, probe=args.probe, stand_in=args.stand_in,
            )  # fmt: skip
    recomputed = _recompute_of(record)
    rows = per_operator(result, record)
    board = get_board(record["target"] if record is not None else args.board)
    estimate = latency_estimate(result.instructions, board) if result.cycles is None else None
    if args.json:
        payload = result.to_json()
        payload["latency_estimate_ms"] = (
            round(1000.0 * result.instructions / board.cpu_hz, 3)
            if estimate and result.instructions
            else None
        )
        if record is not None:
            payload["image_sha256"] = record["ran_image_sha256"]
            payload["stack_reserved_bytes"] = record.get("stack_reserved_bytes")
            payload["stack_reservation"] = record.get("stack_reservation")
            payload["build_dir"] = record["build_dir"] if args.output or target.is_dir() else None
            payload["io"] = record.get("io")
            payload["input_streaming"] = record.get("input_streaming")
        if recomputed is not None:
            payload["recompute"] = recomputed
        payload["per_operator"] = rows
        payload["instructions_estimate"] = (record or {}).get("instructions_estimate")
        payload["arena_budget"] = (record or {}).get("arena_budget")
        print_json(payload)
    else:
        if record is not None:
            print(
                headline(
                    arena_bytes=int(record["arena_bytes"]),
                    arena_lower_bound_bytes=int(record.get("arena_lower_bound_bytes", record["arena_bytes"])),
                    order_certified=bool(record.get("order_certified")),
                    board=board.name,
                    verdict="fits" if record.get("fits") else "does-not-fit",
                    ram=used_of_kind(record["size_report"], "ram"),
                    flash=used_of_kind(record["size_report"], "flash"),
                    measured_equal=result.arena_matches_plan,
                )
            )
        print("\n".join(result.lines()))
        if estimate:
            print(f"latency     {estimate}")
        if rows:
            print("\n".join(per_type_lines(rows, result.count_unit)))
        line = estimate_line(record, result.instructions if result.cycles is None else None)
        if line is not None:
            print(line)
        if record is not None and record.get("stack_reserved_bytes"):
            reserved = int(record["stack_reserved_bytes"])
            print(
                f"stack       {result.stack_bytes_total:,} B used at most of {reserved:,} B reserved "
                f"({100.0 * result.stack_bytes_total / reserved:.0f}%; `build --stack BYTES` sets the reservation)"
            )
            basis = (record.get("stack_reservation") or {}).get("basis")
            if basis:
                print(f"            reserved: {basis}")
        if record is not None:
            print(f"image       sha256 {record['ran_image_sha256'][:16]}... (as built)")
        io = (record or {}).get("io") or {}
        if io.get("edges"):
            removed = ", ".join(str(e["model_op"]) for e in io["edges"])
            print(
                f"io          --io {io['mode']}: int8 inputs sent and int8 outputs compared for "
                f"{len(io['edges'])} edge(s) (model operators {removed} removed)"
            )
        if recomputed is not None:
            print(f"recompute   k={recomputed['k']}: the build runs a recomputation sequence")
        streaming = (record or {}).get("input_streaming")
        if streaming:
            print(
                f"arena       {int(streaming['arena_bytes_whole_input']):,} B with the whole input, "
                + (
                    f"{int(streaming['arena_bytes_streamed_input']):,} B with it streamed (this image)"
                    if streaming["streamed"]
                    else f"the input whole in this image: {streaming['note']}"
                )
            )
    return 0 if result.ok else 1


def per_operator(result: MeasureResult, record: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each step of the timed invoke with its operator and count (the build record names them); a
    streamed stage's members each with their own count where the device counted them."""
    steps = (record or {}).get("steps") or []
    if len(steps) != len(result.step_counts):
        return []
    rows = [
        {"step": k, **s, "count": c, "instructions_per_mac": _per_mac(c, s.get("macs"))}
        for k, (s, c) in enumerate(zip(steps, result.step_counts, strict=True))
    ]
    return with_member_counts(rows, getattr(result, "member_counts", None) or [])


def with_member_counts(rows: list[dict[str, Any]], counted: list[dict[str, int]]) -> list[dict[str, Any]]:
    """`rows` with each streamed step's members given their count, calls and count per MAC from the
    device's member slots (the members of the streamed steps in step order, each stage's in order,
    as the generated code numbers them); unchanged where the slots do not line up with the steps
    (an older image, or one built from another plan)."""
    slots = [(row["step"], k) for row in rows for k in range(len(row.get("members") or []))]
    if len(slots) != len(counted) or any(
        step != c["step"] for (step, _), c in zip(slots, counted, strict=True)
    ):
        return rows
    out, at = [], 0
    for row in rows:
        members = row.get("members") or []
        if members:
            row = {
                **row,
                "members": [
                    {
                        **m,
                        "count": c["count"],
                        "calls": c["calls"],
                        "instructions_per_mac": _per_mac(c["count"], m.get("macs")),
                    }
                    for m, c in zip(members, counted[at : at + len(members)], strict=True)
                ],
            }
            at += len(members)
        out.append(row)
    return out


def estimate_line(record: dict[str, Any] | None, instructions: int | None) -> str | None:
    """The plan's estimated instructions per inference (tinysched.arena.cost) against the measured
    count, and what --arena-budget chose (None: no estimate, or no instruction count measured)."""
    estimate = (record or {}).get("instructions_estimate")
    if not estimate or not instructions:
        return None
    core = ((record or {}).get("plan_options") or {}).get("core", "?")
    off = 100.0 * (estimate - instructions) / instructions
    line = (
        f"estimate    {estimate:,} instructions per inference (kernel cost table, {core}) against "
        f"{instructions:,} measured ({off:+.1f}%)"
    )
    budget = (record or {}).get("arena_budget")
    if budget:
        line += (
            f"; --arena-budget {budget['budget_bytes']:,} B chose: {budget['chosen']} "
            f"(least arena {budget['least_arena_bytes']:,} B)"
        )
    return line


def _per_mac(count: int, macs: int | None) -> float | None:
    """A step's count per multiply-accumulate (None where the build record has no MACs or none)."""
    return round(count / macs, 3) if macs else None


def per_type_lines(rows: list[dict[str, Any]], count_unit: str) -> list[str]:
    """measure's table of the timed invoke per operator type: the report's rows (`per_type`), where
    a streamed chain is named by its operators, as the build record's steps name it."""
    types = per_type(rows)
    width = max(24, *(len(t["type"]) for t in types))
    lines = [f"by type     {count_unit} of the timed invoke, per operator type:"]
    for t in types:
        lines.append(
            f"            {t['type']:<{width}} x{t['operators']:<3} {t['count']:>14,}  {t['percent']:5.1f}%"
        )
    return lines


def _recompute_of(record: dict[str, Any] | None) -> dict[str, Any] | None:
    if record is None:
        return None
    return (record.get("plan_options") or {}).get("recompute")


def register(sub: Any) -> None:
    boards = sub.add_parser("boards", help="list the boards tinysched can build for (boards.yaml)")
    boards.add_argument("--json", action="store_true", help="print one JSON list")
    boards.set_defaults(func=cmd_boards)

    measure = sub.add_parser(
        "measure",
        help="run a build on the board (or its QEMU stand-in): outputs and measured arena against the plan",
    )
    measure.add_argument(
        "target",
        metavar="BUILD_DIR|MODEL",
        help="a folder written by `tinysched build --board B`; or a .tflite file (built first, with "
        "--board and the planning flags); or `selftest` for the harness's own test model",
    )
    measure.add_argument(
        "--board", help="with MODEL or selftest: board name or alias (see `tinysched boards`)"
    )
    where = measure.add_mutually_exclusive_group()
    where.add_argument("--port", help="serial port of a real board (tty path or pyserial URL)")
    where.add_argument("--emulate", action="store_true", help="run under qemu-system-arm (the default)")
    measure.add_argument("--inputs", type=int, default=3, help="number of inputs to run (default 3)")
    measure.add_argument("--json", action="store_true", help="print one JSON object")
    measure.add_argument(
        "--semihost-inputs",
        action="store_true",
        help="emulated boards only: send the inputs by QEMU semihosting instead of the UART (faster for "
        "large inputs; does not exercise the serial input path; reported as inputs_semihosted)",
    )
    measure.add_argument(
        "--no-flash",
        action="store_true",
        help="with --port: the board already runs the build's image (`tinysched flash`); its image id is "
        "still checked",
    )
    measure.add_argument("--probe", metavar="ID", help="with --port: the debug probe to flash with")
    measure.add_argument(
        "--stand-in",
        metavar="BOARD",
        help="run on this one of the board's stand-ins (boards.yaml emulated_by; build writes an image "
        "for each); default: the first",
    )
    add_output_arguments(measure, required=False)
    add_plan_arguments(measure)
    add_stack_argument(measure)
    measure.set_defaults(func=cmd_measure)

    flash_p = sub.add_parser(
        "flash",
        help="write a build's image onto its board over the debug probe (openocd or pyocd, whichever "
        "is installed), printing the exact command",
    )
    flash_p.add_argument(
        "build_dir", metavar="BUILD_DIR", help="a folder written by `tinysched build --board B`"
    )
    flash_p.add_argument("--board", help="the board the folder must be built for (checked)")
    flash_p.add_argument("--probe", metavar="ID", help="the debug probe's serial number / unique id")
    flash_p.add_argument(
        "--tool", choices=FLASH_TOOLS, help="flash with this tool (default: the first installed)"
    )
    flash_p.add_argument(
        "--dry-run", action="store_true", help="print the command that would flash, and run nothing"
    )
    flash_p.set_defaults(func=cmd_flash)
