"""`tinysched report`: the metadata document, its HTML and Markdown forms, the SVG helpers, and the
page as headless Chromium renders it.

Tier `browser`: needs Debian's `chromium`; missing, the browser tests skip with the reason, or fail
when TINYSCHED_REQUIRE names the tier (`make test` does). The cross-build test needs
arm-none-eabi-gcc (tier `qemu`).
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import shared_model
from helpers import generate_module, graph_metadata, metadata_for_model
from tiers import required_tiers

from tinysched import report
from tinysched.boards import get_board
from tinysched.cli import main
from tinysched.model.graph import Graph, Operator, Tensor
from tinysched.model.modelgen import tiny_demo_model
from tinysched.report import compare, svg  # modules
from tinysched.report import format as fmt

HOSTILE = "<script>alert('x')</script> & \"q\" | `tick` *star* _u_ [l](http://e)"


# ---- fixtures ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("report") / "demo.tflite"
    path.write_bytes(tiny_demo_model())
    return path


@pytest.fixture(scope="module")
def demo_doc(demo_path) -> dict:
    """The demo model on nucleo-f767, without cross-compiling or tflite-micro (fast, tool-free)."""
    return metadata_for_model(
        demo_path, "nucleo-f767", build_firmware=False, stock_tflm=False, recompute_time_limit=0.5
    )


def hostile_graph() -> Graph:
    """A synthetic diamond whose tensor names try to break HTML, SVG and Markdown."""
    names = [f"in{HOSTILE}", "a<b>&amp;", "q\"uote's", "pipe|pipe", "out</svg><b>"]
    sizes = [64, 256, 128, 512, 32]
    tensors = tuple(Tensor(i, n, "int8", (s,), s) for i, (n, s) in enumerate(zip(names, sizes, strict=True)))
    ops = (
        Operator(0, "SYNTHETIC", (0,), (1,)),
        Operator(1, "SYNTHETIC", (0,), (2,)),
        Operator(2, "SYNTHETIC", (1,), (3,)),
        Operator(3, "SYNTHETIC", (2, 3), (4,)),
    )
    return Graph(tensors, ops, (0,), (4,), name="hostile", source="hostile<&>.tflite", sha256="0" * 64)


# ---- the document ------------------------------------------------------------------------------------


def test_metadata_has_the_numbers_a_firmware_lead_needs(demo_doc):
    d = demo_doc
    assert d["schema"] == report.SCHEMA and d["schema_version"] == report.SCHEMA_VERSION
    s, a, sc = d["summary"], d["arena"], d["schedule"]
    assert s["activations_rw_bytes"] == a["arena_bytes"] > 0
    assert s["arena_lower_bound_bytes"] == a["lower_bound_bytes"] <= a["arena_bytes"]
    assert sc["certified"] and sc["certificate"]["kind"] and sc["certificate"]["witness"]
    assert sc["peak_bytes"] <= sc["stored_order_peak_bytes"]
    assert s["macc"] == sum(o["macs"] for o in d["operators"]) > 0
    assert s["weights_ro_bytes"] > 0 and s["ram_total_bytes"] >= s["activations_rw_bytes"]
    # timeline: one value per step, both orders, the peak where the profile says
    t = d["timeline"]
    assert len(t["certified_live_bytes"]) == len(t["stored_live_bytes"]) == t["steps"] == len(d["operators"])
    assert max(t["certified_live_bytes"]) == sc["peak_bytes"] == t["certified_live_bytes"][t["peak_step"]]
    # the tensors live at the peak, less what the peak step's output shares with its dying input
    # (the refined memory model, the default)
    assert sum(p["bytes"] for p in t["peak_tensors"]) - t["peak_overlap_bytes"] == sc["peak_bytes"]
    # every operator has its kernel; the arena map's rectangles never overlap while both live
    # (a view of the refined model calls nothing: its output is its input's bytes)
    viewed = {o["op"] for o in d["operators"] if any(x["technique"] == "views" for x in o["saved"])}
    assert all(o["kernel"] or (o["type"] == "RESHAPE" and o["op"] in viewed) for o in d["operators"])
    assert viewed
    # except where the refined model lets them share (a view on its root, an output over its
    # dying input within the kernel's shift: re-derived from the table)
    from tinysched.memory.overlap import refine

    model = refine(tiny_demo_graph())
    shared = {frozenset((v, r)) for v, r in model.views.items()}
    pairs = {frozenset((p.root, p.output)): p for p in model.pairs.values()}
    rects = a["tensors"]
    for i, p in enumerate(rects):
        for q in rects[i + 1 :]:
            if p["first_step"] <= q["last_step"] and q["first_step"] <= p["last_step"]:
                apart = (
                    p["offset"] + p["aligned_bytes"] <= q["offset"]
                    or q["offset"] + q["aligned_bytes"] <= p["offset"]
                )
                key = frozenset((p["index"], q["index"]))
                if key in pairs:
                    pair = pairs[key]
                    at = {p["index"]: p["offset"], q["index"]: q["offset"]}
                    assert pair.allowed(at[pair.root], at[pair.output])
                else:
                    assert apart or key in shared, (p, q)
    # trade-off for k = 0, 1, 2, planned in the tensor model: k = 0 is the tensor-model optimum
    tradeoff = d["recompute_tradeoff"]
    plans = tradeoff["plans"]
    assert [p["k"] for p in plans] == [0, 1, 2] and tradeoff["memory_model"] == "tensor"
    assert plans[0]["peak_bytes"] == sc["tensor_model_optimum"]["peak_bytes"] and plans[0]["extra_macs"] == 0
    assert all(p["peak_bytes"] <= plans[0]["peak_bytes"] for p in plans)
    # no ELF: the fit is an honest estimate, code size unknown
    fit = d["fit"]
    assert fit["source"] == "estimate" and fit["verdict"] == "unknown" and fit["code_bytes"] is None
    # nucleo-f767: the arena in SRAM1, the stack in DTCM
    sram1 = next(r for r in fit["regions"] if r["name"] == "sram1")
    dtcm = next(r for r in fit["regions"] if r["name"] == "dtcm")
    assert (
        sram1["used_bytes"] == a["arena_bytes"] and dtcm["used_bytes"] == get_board("nucleo-f767").stack_bytes
    )
    assert not sram1["used_complete"] and not dtcm["used_complete"]
    # the document is plain JSON
    assert json.loads(report.metadata_json(d)) == d


def test_fit_from_the_size_report_per_region():
    board = get_board("nucleo-f446re")

    def size(flash_used, sram_used):
        return {
            "flash_total": flash_used, "ram_total": sram_used, "flash_code": 1000,
            "regions": [
                {"name": "flash", "origin": 0x08000000, "length": 524288, "kind": "flash", "used": flash_used},
                {"name": "sram", "origin": 0x20000000, "length": 131072, "kind": "ram", "used": sram_used},
            ],
        }  # fmt: skip

    ok = report.fit_from_size_report(board, size(100_000, 60_000))
    assert ok["verdict"] == "fits" and ok["fits"] is True
    tight = report.fit_from_size_report(board, size(520_000, 60_000))
    assert tight["verdict"] == "tight" and tight["fits"] is True
    assert [r["status"] for r in tight["regions"]] == ["tight", "ok"]
    over = report.fit_from_size_report(board, size(100_000, 170_000))
    assert over["verdict"] == "does-not-fit" and over["fits"] is False
    sram = over["regions"][1]
    assert sram["free_bytes"] == 131072 - 170_000 and sram["percent_used"] == round(100 * 170_000 / 131072, 2)
    assert "arena" in sram["holds"] and "code" in over["regions"][0]["holds"]


def test_estimate_says_does_not_fit_when_weights_alone_overflow():
    board = get_board("nucleo-f446re")
    fit = report.fit_estimate(board, weights_bytes=600_000, arena_bytes=1000, note="no compiler")
    assert fit["verdict"] == "does-not-fit" and "flash" in fit["text"]


def test_recomputation_sequence_as_built(demo_path):
    """A build with --recompute runs a sequence: the report draws and tabulates that sequence."""
    from tinysched.model.reader import read_model
    from tinysched.order.recompute import RecomputeRequest

    graph = read_model(demo_path)
    planned, sched, plan, _module = generate_module(graph, recompute=RecomputeRequest(k=1, time_limit=1.0))
    doc = graph_metadata(graph, get_board("nucleo-f767"), recompute=RecomputeRequest(k=1, time_limit=1.0))
    t = doc["timeline"]
    assert t["run"] == "recompute" and t["recompute"]["built"]
    assert len(doc["operators"]) == len(plan.order) > len(planned.operators)
    assert t["peak_bytes"] == t["recompute"]["peak_bytes"] < doc["schedule"]["peak_bytes"]
    assert doc["schedule"]["certified"]  # the certificate of the best order is still reported
    assert "#1" in " ".join(n for o in doc["operators"] for n in o["born"])
    report.render_html(doc)
    report.render_markdown(doc)


def test_unsupported_model_is_reported_without_kernels():
    doc = graph_metadata(hostile_graph(), get_board("mps2-an386"), recompute_ks=(0, 1))
    assert not doc["model"]["codegen_supported"] and "not supported" in doc["model"]["codegen_note"]
    assert all(o["kernel"] is None for o in doc["operators"])
    assert doc["fit"]["verdict"] == "unknown"


def test_refuses_other_documents():
    from tinysched.errors import TinyschedError

    with pytest.raises(TinyschedError, match="not a tinysched.metadata"):
        report.render_html({"schema": "x"})
    with pytest.raises(TinyschedError, match="newer"):
        report.check_metadata({"schema": report.SCHEMA, "schema_version": report.SCHEMA_VERSION + 1})


def test_measured_numbers(demo_doc, demo_path, tmp_path):
    arena = demo_doc["arena"]["arena_bytes"]
    measured = {
        "board": "nucleo-f767", "ran_on": "mps2-an500", "emulated_by": "mps2-an500",
        "arena_bytes_planned": arena, "arena_bytes_measured": arena, "arena_bytes_touched": arena - 16,
        "stack_bytes_measured": 412, "stack_bytes_total": 700, "outputs_match": True, "inputs": 3,
        "cycles": None, "instructions": 1234567, "count_unit": "instructions (emulated)", "ok": True,
    }  # fmt: skip
    section = report.measured_section(measured, arena)
    assert section["arena_matches_plan"] and section["same_plan_as_report"] and section["ok"]
    doc = dict(demo_doc, measured=section)
    page = report.render_html(doc)
    assert "1,234,567" in page and "412 B" in page and "equal to the byte" in page
    md = report.render_markdown(doc)
    assert "1,234,567" in md and "matched" in md
    wrong = report.measured_section(dict(measured, arena_bytes_measured=arena + 16), arena)
    assert not wrong["arena_matches_plan"] and not wrong["ok"]


# ---- escaping and the SVG helpers -------------------------------------------------------------------


def test_svg_helpers_are_well_formed_and_escape_names():
    tensors = [
        {"index": 0, "name": HOSTILE, "offset": 0, "bytes": 100, "aligned_bytes": 112,
         "first_step": 0, "last_step": 2, "at_peak": True},
        {"index": 1, "name": "b&b", "offset": 112, "bytes": 16, "aligned_bytes": 16,
         "first_step": 1, "last_step": 1, "at_peak": False},
    ]  # fmt: skip
    for drawing in (
        svg.svg_arena_map(tensors, 128, 3, lower_bound=128),
        svg.svg_timeline(
            [
                {"key": "stored", "label": HOSTILE, "values": [1, 5, 3]},
                {"key": "certified", "label": "c", "values": [1, 4, 3]},
            ],
            peak_step=1,
            peak_tensors=[{"name": HOSTILE, "bytes": 4}],
            lower_bound=4,
        ),  # fmt: skip
        svg.svg_bar(42.0, "tight"),
        svg.svg_bar(None, "ok"),
    ):
        root = ET.fromstring(drawing)  # well-formed XML: every name escaped
        assert root.tag.endswith("svg")
        assert "<script" not in drawing
    title_texts = [e.text for e in ET.fromstring(svg.svg_arena_map(tensors, 128, 3)).iter() if e.text]
    assert any(HOSTILE in t for t in title_texts)  # the name survives, as text


def test_axis_ticks_use_short_labels():
    assert svg._axis_label(8192, svg._byte_step(20000)) == "8 KiB"
    assert svg._axis_label(1500, svg._byte_step(1400)) == "1,500 B"
    assert svg._axis_label(3 * 1048576, svg._byte_step(9 * 1048576)) == "3 MiB"


def test_markdown_escaping_and_sparkline():
    assert fmt.md_escape("a|b<c>_d_") == r"a\|b\<c\>\_d\_"
    assert svg.sparkline([0, 50, 100]) == "▁▅█"
    assert len(svg.sparkline(list(range(500)), width=60)) == 60


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_hostile_names_cannot_inject_markup():
    doc = graph_metadata(hostile_graph(), get_board("mps2-an386"), recompute_ks=(0,))
    page = report.render_html(doc)
    parser = _Collect()
    parser.feed(page)
    assert "script" not in parser.tags and "b" not in parser.tags
    assert HOSTILE in "".join(parser.text)  # shown as text
    md = report.render_markdown(doc)
    rows = [line for line in md.splitlines() if re.match(r"\| \d+ \| \d+ \| SYNTHETIC \|", line)]
    assert len(rows) == 4
    for row in rows:  # unescaped pipes would add columns
        assert len(re.findall(r"(?<!\\)\|", row)) == 9
    assert "<script>" not in md


def test_html_is_self_contained(demo_doc):
    page = report.render_html(demo_doc)
    assert "<script" not in page.lower()
    # the only URL is the SVG namespace; nothing is fetched
    urls = set(re.findall(r"(?:https?:)?//[\w.-]+[^\s\"'<>)]*", page))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert not re.search(r"\b(?:src|href)\s*=", page)
    assert "@media print" in page
    for key in ("arena-bytes", "lower-bound", "verdict", "regions", "timeline", "arena-map", "operators"):
        assert f'id="{key}"' in page


def test_forms_render_from_the_json_alone(demo_doc, tmp_path):
    paths = report.write_beside_firmware(tmp_path / "fw", "demo", demo_doc)
    assert paths["json"].name == "demo_metadata.json"
    again = json.loads(paths["json"].read_text())
    assert report.render_html(again) == paths["html"].read_text()
    assert report.render_markdown(again) == paths["md"].read_text()
    assert not list((tmp_path / "fw").glob(".*.tmp"))  # atomic writes leave no temporaries


# ---- the command line ------------------------------------------------------------------------------


def test_cli_formats_and_errors(demo_path, tmp_path, capsys):
    base = [
        str(demo_path),
        "--board",
        "nucleo_f767zi",
        "--no-build",
        "--no-tflm",
        "--recompute-time-limit",
        "0.3",
    ]
    assert main(["report", *base, "-o", str(tmp_path / "r.md")]) == 0
    md = (tmp_path / "r.md").read_text()
    assert md.startswith("### tinysched: demo") and "| Region | Used | Size | %Used |" in md
    assert main(["report", *base, "--format", "json", "--no-recompute-tradeoff"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["recompute_tradeoff"] is None and doc["board"]["name"] == "nucleo-f767"
    (tmp_path / "m.json").write_text(json.dumps(doc))
    assert main(["report", str(tmp_path / "m.json"), "--from-metadata", "-o", str(tmp_path / "r.html")]) == 0
    assert "arena (activations, rw)" in (tmp_path / "r.html").read_text()
    assert main(["report", *base, "--measured", str(tmp_path / "missing.json")]) == 2
    assert "cannot read measurement" in capsys.readouterr().err
    assert main(["report", str(demo_path), "--board", "no-such-board"]) == 2
    assert "unknown board" in capsys.readouterr().err


# ---- tools: cross compiler, tflite-micro, Chromium ----------------------------------------------------


def _require(tool: str, tier: str) -> str:
    path = shutil.which(tool)
    if path is None:
        reason = f"tier {tier}: {tool} not installed"
        if tier in required_tiers():
            pytest.fail(reason + " (TINYSCHED_REQUIRE asks for this tier)")
        pytest.skip(reason)
    return path


def test_fit_from_the_cross_built_elf(demo_path):
    _require("arm-none-eabi-gcc", "qemu")
    doc = metadata_for_model(demo_path, "nucleo-f446re", stock_tflm=False, recompute_ks=None)
    fit = doc["fit"]
    assert fit["source"] == "elf" and fit["verdict"] == "fits" and fit["code_bytes"] > 0
    size = fit["size_report"]
    assert size["ram_arena"] >= doc["arena"]["arena_bytes"]
    assert doc["summary"]["flash_image_bytes"] == size["flash_total"]
    flash = next(r for r in fit["regions"] if r["name"] == "flash")
    assert (
        flash["used_complete"]
        and flash["used_bytes"] >= doc["summary"]["weights_ro_bytes"] + fit["code_bytes"]
    )


def test_stock_tflm_arena_when_installed(demo_path):
    pytest.importorskip("tflite_micro", reason="the tflite-micro package is not installed")
    stock = compare.stock_tflm_arena(demo_path.read_bytes())
    assert stock["available"] and stock["arena_bytes"] > 0


def _png_pixels(path: Path) -> tuple[int, int, set[tuple[int, ...]]]:
    """A tiny PNG decoder (8-bit RGB/RGBA, non-interlaced): width, height, distinct colours of
    every 7th row (all rows are unfiltered, since filters chain)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours: set[tuple[int, ...]] = set()
    for y in range(height):
        row = raw[y * (stride + 1) : (y + 1) * (stride + 1)]
        f, line = row[0], bytearray(row[1:])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev, strict=True))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 7 == 0:
            colours.update(tuple(line[i : i + 3]) for i in range(0, stride, bpp * 3))
        prev = line
    return width, height, colours


def _chromium(*args: str, user_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            _require("chromium", "browser"), "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", "--disable-dev-shm-usage", f"--user-data-dir={user_dir}", *args,
        ],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_page_in_headless_chromium(demo_doc, tmp_path):
    _require("chromium", "browser")
    page = tmp_path / "report.html"
    page.write_text(report.render_html(demo_doc))
    url = page.resolve().as_uri()
    shot = tmp_path / "shot.png"
    done = _chromium(
        f"--screenshot={shot}", "--window-size=1000,1400", "--hide-scrollbars", url, user_dir=tmp_path / "u1"
    )
    assert shot.is_file(), done.stderr[-2000:]
    width, height, colours = _png_pixels(shot)
    assert (width, height) == (1000, 1400)
    assert len(colours) > 50, f"the screenshot looks blank ({len(colours)} colours)"
    # the key numbers, in the DOM as the browser built it
    dom = _chromium("--dump-dom", url, user_dir=tmp_path / "u2").stdout
    arena = f"{demo_doc['arena']['arena_bytes']:,} B"
    bound = f"{demo_doc['arena']['lower_bound_bytes']:,} B"
    assert re.search(r'id="arena-bytes"[^>]*>' + re.escape(arena), dom)
    assert re.search(r'id="lower-bound"[^>]*>' + re.escape(bound), dom)
    assert re.search(r'id="verdict"[^>]*>\s*FIT UNKNOWN', dom)
    headline = re.search(r'id="headline"[^>]*>([^<]*)<', dom).group(1)
    arena, bound = demo_doc["arena"]["arena_bytes"], demo_doc["arena"]["lower_bound_bytes"]
    # the refined model (the default): a chain of overlaps may leave the arena above its step bound
    above = (
        f"{arena - bound:,} B above its lower bound" if arena > bound else "optimal: equals its lower bound"
    )
    assert f"arena {arena:,} B ({above})" in headline
    assert dom.count("<svg") >= 3
    # and it prints
    pdf = tmp_path / "report.pdf"
    _chromium(f"--print-to-pdf={pdf}", "--no-pdf-header-footer", url, user_dir=tmp_path / "u3")
    assert pdf.is_file() and pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 20_000


def test_shared_model_report_in_markdown():
    path = shared_model("tflm_hello_world_int8")
    doc = metadata_for_model(path, "nucleo-l476rg", build_firmware=False, stock_tflm=False, recompute_ks=None)
    md = report.render_markdown(doc)
    assert f"{doc['arena']['arena_bytes']:,}" in md
    assert fmt.md_escape(path.stem) in md


def test_measured_counts_per_operator_type_and_latency_estimate(demo_doc):
    from tinysched.report.metadata import measured_section

    measured = {
        "board": "nucleo-f767", "ran_on": "mps2-an500", "arena_bytes_planned": 18_432,
        "arena_bytes_measured": 18_432, "outputs_match": True, "inputs": 1, "instructions": 1_000,
        "count_unit": "instructions (emulated)", "latency_estimate_ms": 0.005, "stack_reserved_bytes": 1_696,
        "per_operator": [{"type": "CONV_2D", "count": 700}, {"type": "ADD", "count": 200},
                         {"type": "CONV_2D", "count": 100}],
    }  # fmt: skip
    section = measured_section(measured, 18_432)
    assert section["per_type"][0] == {"type": "CONV_2D", "operators": 2, "count": 800, "percent": 80.0}
    doc = dict(demo_doc, measured=section)
    page, md = report.render_html(doc), report.render_markdown(doc)
    assert 'id="per-type"' in page and "Estimated latency: about 0.0 ms" in page
    assert "| CONV\\_2D | 2 | 800 | 80.0% |" in md and "1,696 B reserved" in md


def test_a_streamed_chain_is_named_by_its_operators_in_measure_the_report_and_json(demo_path, tmp_path):
    """The planner runs a streamed chain as one operator of its own type, TS_STREAM: measure's table
    per operator type, its JSON rows (the build record's steps), the metadata and every form of the
    report name it by TFLite's operators instead."""
    from helpers import host_build

    from tinysched.commands.device import per_type_lines
    from tinysched.memory.stream import STREAM_OPCODE
    from tinysched.report.metadata import measured_section

    built = host_build(demo_path, tmp_path / "build", compile=False)
    doc = json.loads(built.metadata.read_text())
    chain = "CONV_2D+DEPTHWISE_CONV_2D+CONV_2D (streamed)"  # the demo's expand -> depthwise -> project
    steps = doc["build"]["steps"]
    assert chain in [s["type"] for s in steps] and chain in [o["type"] for o in doc["operators"]]
    rows = [{"step": k, **s, "count": 100 * (k + 1)} for k, s in enumerate(steps)]  # measure's per_operator
    table = per_type_lines(rows, "instructions (emulated)")
    assert sum(line.split()[0] == chain.split()[0] for line in table[1:]) == 1
    measured = {
        "board": "nucleo-f767", "ran_on": "mps2-an500", "arena_bytes_planned": doc["arena"]["arena_bytes"],
        "arena_bytes_measured": doc["arena"]["arena_bytes"], "outputs_match": True, "inputs": 1,
        "instructions": sum(r["count"] for r in rows), "count_unit": "instructions (emulated)",
        "per_operator": rows,
    }  # fmt: skip
    doc["measured"] = measured_section(measured, doc["arena"]["arena_bytes"])
    assert chain in [t["type"] for t in doc["measured"]["per_type"]]
    md = report.render_markdown(doc)
    assert fmt.md_escape(chain) in md
    for text in (json.dumps(measured), json.dumps(doc), report.render_html(doc), md, "\n".join(table)):
        assert STREAM_OPCODE not in text and STREAM_OPCODE.lower() not in text


# ---- the refined memory model (the default) in the report ---------------------------------------------


def test_refined_timeline_and_savings_per_step_in_headless_chromium(demo_doc, tmp_path):
    """The plan is refined by default: the timeline draws the same order in the tensor model beside
    it, and each operator row says which technique saved how many bytes at that step. The numbers
    are checked against the planner's own model (overlap.step_savings_report, memory.profile) and
    then found in the DOM as Chromium built it."""
    from tinysched.memory.overlap import refine
    from tinysched.memory.stream import stream_of
    from tinysched.memory.tensor import profile

    sc, t = demo_doc["schedule"], demo_doc["timeline"]
    assert sc["memory_model"] == sc["certificate"]["memory_model"] == t["memory_model"] == "refined"
    whole = sc["tensor_model_optimum"]
    # beside the refined certificate: the tensor model's optimum, never below the refined one
    assert whole["certified"] and whole["peak_bytes"] > sc["peak_bytes"] == sc["lower_bound_bytes"]
    g = tiny_demo_graph()
    order = sc["order"]
    assert t["certified_live_bytes"] == [s.live_bytes for s in profile(g, order, refine(g)).steps]
    # the tensor model holds a streamed chain's tensors whole at its step (and no windows)
    streamed = [
        sum(c.tensor_bytes) - c.window_bytes if (c := stream_of(g.operators[v])) is not None else 0
        for v in order
    ]
    assert any(streamed)
    assert t["tensor_live_bytes"] == [
        s.live_bytes + x for s, x in zip(profile(g, order).steps, streamed, strict=True)
    ]
    assert max(t["tensor_live_bytes"]) >= whole["peak_bytes"]
    rows = demo_doc["operators"]
    saved_any = 0
    for o, refined, tensor in zip(rows, t["certified_live_bytes"], t["tensor_live_bytes"], strict=True):
        assert (o["live_bytes"], o["tensor_live_bytes"]) == (refined, tensor)
        # the techniques account for the whole difference at every step
        assert sum(s["bytes"] for s in o["saved"]) == tensor - refined
        saved_any += bool(o["saved"])
    kinds = {s["technique"] for o in rows for s in o["saved"]}
    assert kinds == {"overlap", "views", "stream"} and saved_any >= 5
    # the peak bar stacks whole tensors; the overlap at the peak step is what brings it to the peak
    assert sum(p["bytes"] for p in t["peak_tensors"]) - t["peak_overlap_bytes"] == sc["peak_bytes"]

    _require("chromium", "browser")
    page = tmp_path / "report.html"
    page.write_text(report.render_html(demo_doc))
    dom = _chromium("--dump-dom", page.resolve().as_uri(), user_dir=tmp_path / "u").stdout
    assert f"tensor-model optimum {whole['peak_bytes']:,} B (certified)" in dom
    assert re.search(r'id="tensor-optimum".*?' + re.escape(f"{whole['peak_bytes']:,} B"), dom, re.S)
    # the recomputation trade-off is planned in the tensor model, and the page says so
    if any(p["saving_bytes"] > 0 for p in demo_doc["recompute_tradeoff"]["plans"]):
        assert "planned in the tensor model) lowers the tensor-model peak by" in dom
    assert "in the tensor memory model (recomputation sequences are planned in it)" in dom
    # both series in the timeline, each labelled with its peak
    assert f"<title>same order, tensor model (peak {max(t['tensor_live_bytes']):,} B)</title>" in dom
    assert f"<title>certified order (refined) (peak {sc['peak_bytes']:,} B)</title>" in dom
    shared = f", {t['peak_overlap_bytes']:,} B shared" if t["peak_overlap_bytes"] else ")"
    assert f"peak {sc['peak_bytes']:,} B (step {t['peak_step']}{shared}" in dom
    # the operator table: refined and tensor-model live bytes, and the saving by technique
    table = re.search(r'<table class="ops" id="operators">(.*?)</table>', dom, re.S).group(1)
    assert "<th>saved by</th>" in table
    cells = re.findall(r"<tr[^>]*>\s*<td[^>]*>(\d+)</td>(.*?)</tr>", table, re.S)
    assert len(cells) == len(rows)
    for (step, rest), o in zip(cells, rows, strict=True):
        assert int(step) == o["step"]
        values = re.findall(r"<td[^>]*>([^<]*)</td>", rest)
        assert values[3:5] == [f"{o['live_bytes']:,}", f"{o['tensor_live_bytes']:,}"], values
        saved = re.search(r'<td class="saved">([^<]*)</td>', rest).group(1)
        for s in o["saved"]:
            assert f"{s['bytes']:,} B" in saved
        if not o["saved"]:
            assert saved == ""


def tiny_demo_graph() -> Graph:
    """The demo model as the pipeline plans it (nothing to fold in it; one chain streams)."""
    from tinysched.model.reader import parse_model
    from tinysched.pipeline import plan

    planned = plan(parse_model(tiny_demo_model()))
    assert planned.folding.count == 0 and [r.kind for r in planned.rewriting.rewrites] == ["stream"]
    return planned.graph


def test_tensor_model_report_has_no_refined_columns(demo_path):
    from tinysched.model.reader import read_model
    from tinysched.pipeline import PlanOptions, plan
    from tinysched.report.metadata import collect_metadata

    planned = plan(read_model(demo_path), PlanOptions(memory_model="tensor"))
    doc = collect_metadata(planned)
    assert doc["schedule"]["memory_model"] == "tensor" and doc["timeline"]["tensor_live_bytes"] is None
    assert all(o["saved"] == [] and o["live_bytes"] == o["tensor_live_bytes"] for o in doc["operators"])
    page = report.render_html(doc)
    assert "<th>saved by</th>" not in page and 'id="tensor-optimum"' not in page
    assert "tensor: every tensor its own bytes" in page
