"""`export`: a model as a library folder for the firmware team's own project (tinysched.build.export).

read -> pipeline.plan (one arena: the project places it) -> pipeline.generate -> report metadata ->
build.export.write_library, all into one output folder swapped in only when everything succeeded.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tinysched.boards import Board, get_board
from tinysched.build.export import ExportedLibrary, write_library
from tinysched.commands.build import application_ram_line, kernels_of
from tinysched.commands.common import add_output_arguments, print_json, read_checked_model, shown
from tinysched.errors import EXIT_DOES_NOT_FIT, TinyschedError
from tinysched.files import output_folder, write_atomic
from tinysched.pipeline import DEFAULT_PLAN_OPTIONS, Planned, PlanOptions, add_plan_arguments, generate, plan
from tinysched.pipeline import options_from_args as plan_options_from_args
from tinysched.report import collect_metadata
from tinysched.report.format import doc_headline
from tinysched.report.metadata import metadata_json


@dataclass(frozen=True)
class ExportResult:
    """What `export` wrote into `directory`."""

    directory: Path
    planned: Planned
    module: Any  # codegen.GeneratedModule
    board: Board
    library: ExportedLibrary
    metadata: dict[str, Any]


def export_board(name: str) -> Board:
    """The board an export is for: any microcontroller board of `tinysched boards` (not the host)."""
    if name in ("host", "selftest"):
        raise TinyschedError(
            f"export is for a microcontroller board, not {name!r}: give one of `tinysched boards` "
            "(the host runner is `tinysched build MODEL --board host`)"
        )
    return get_board(name)


def export_model(
    model: str | Path,
    out_dir: str | Path,
    board: str,
    *,
    options: PlanOptions = DEFAULT_PLAN_OPTIONS,
    prefix: str | None = None,
    force: bool = False,
    compile: bool = True,
) -> ExportResult:
    """The `export` verb as a function: plan `model` with `options` in one arena, generate its C and
    write the library folder `out_dir` for `board`."""
    target = export_board(board)
    if options.pools is not None and options.pools.explicit:
        raise TinyschedError(
            "--pool and --pin split the arena over the board's regions, placed by tinysched's own linker "
            "script; an exported library has one arena, which the project places (its linker section)"
        )
    options = replace(options, pools=None)
    model_path = Path(model)
    graph = read_checked_model(model_path)
    planned = plan(graph, options)
    module = generate(planned, prefix)
    doc = collect_metadata(
        planned,
        board=target,
        kernels=kernels_of(module),
        size_note="exported library: the project's image is not built here",
        extra={
            "kind": "export",
            "prefix": module.prefix,
            "board": target.name,
            "cflags": list(target.cflags),
        },
    )
    ram = doc["summary"]["application_ram"]
    with output_folder(out_dir, force=force, keep=[model_path]) as staging:
        library = write_library(
            module,
            target,
            staging,
            model_name=model_path.stem,
            sha256=graph.sha256,
            ram=ram,
            folder_hint=Path(out_dir).name or "path/to/this/folder",
            compile=compile,
        )
        doc["build"]["flash"] = library.flash.to_json()
        doc["build"]["files"] = list(library.files)
        write_atomic(staging / f"{module.prefix}_metadata.json", metadata_json(doc))
    directory = Path(out_dir).absolute()
    library = replace(library, directory=directory, files=(*library.files, f"{module.prefix}_metadata.json"))
    return ExportResult(directory, planned, module, target, library, doc)


def print_export(result: ExportResult) -> None:
    doc, module, lib = result.metadata, result.module, result.library
    ram = doc["summary"]["application_ram"]
    name = module.prefix
    print(doc_headline(doc))
    print(
        f"library     {name}: {len(lib.sources)} C files ({len(lib.kernels)} kernels: {', '.join(lib.kernels)})"
    )
    print(
        f"arena       {ram['arena_bytes']:,} B aligned to {ram['alignment']}; state {ram['state_bytes']:,} B"
    )
    print(f"app ram     {application_ram_line(ram)}")
    print(f"flash       {lib.flash.text()}")
    print(f"board       {result.board.name}: {' '.join(result.board.cflags)}")
    print(
        f"wrote       {shown(result.directory)}/ (README.md, CMakeLists.txt, {name}.mk, zephyr/, library.json,"
    )
    print("            include/, src/, example/main.c)")
    print(
        f"use         add_subdirectory({shown(result.directory)}) and target_link_libraries(app PRIVATE {name})"
    )


def cmd_export(args: argparse.Namespace) -> int:
    if args.board is None:
        raise TinyschedError("export needs --board B (one of `tinysched boards`)")
    export_board(args.board)  # a bad board is refused before planning
    result = export_model(
        args.model,
        args.output,
        args.board,
        options=plan_options_from_args(args),
        prefix=args.prefix,
        force=args.force,
        compile=not args.no_compile,
    )
    if args.json:
        print_json(
            {
                "directory": str(result.directory),
                "prefix": result.module.prefix,
                "board": result.board.name,
                "files": list(result.library.files),
                "kernels": list(result.library.kernels),
                "application_ram": result.metadata["summary"]["application_ram"],
                "flash": result.library.flash.to_json(),
                "fit": result.metadata["fit"]["verdict"] if result.metadata.get("fit") else None,
            }
        )
    else:
        print_export(result)
    fit = result.metadata.get("fit")
    if fit is not None and fit["verdict"] == "does-not-fit":
        print(f"tinysched: {fit['text']} (estimate: weights, arena and stack)", file=sys.stderr)
        return EXIT_DOES_NOT_FIT
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="the model as a library folder for your own firmware project (CMake, Make, Zephyr, PlatformIO)",
    )
    p.add_argument("model", help=".tflite file")
    p.add_argument("-b", "--board", help="the board it is for (one of `tinysched boards`)")
    add_output_arguments(p)
    p.add_argument(
        "--prefix", help="C symbol prefix and library name (default: the model file name, sanitised)"
    )
    add_plan_arguments(p)
    p.add_argument(
        "--no-compile",
        action="store_true",
        help="do not compile the sources to measure the flash they add (arm-none-eabi-gcc)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_export)


__all__ = ["ExportResult", "cmd_export", "export_model", "register"]
