"""The report's HTML and Markdown forms, rendered from the metadata document alone (templates/report/).

A report can be rendered again later from `<name>_metadata.json` without the model."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from tinysched.errors import TinyschedError
from tinysched.report.format import (
    certificate_sentence,
    doc_headline,
    fmt_bytes,
    fmt_int,
    md_escape,
    percent,
    shorten,
    witness_text,
)
from tinysched.report.metadata import FORMATS, check_metadata, metadata_json
from tinysched.report.svg import sparkline, svg_arena_map, svg_bar, svg_budget, svg_timeline


@cache
def _environment(kind: str) -> Any:
    import jinja2

    from tinysched.resources import resource

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource("templates") / "report")),
        undefined=jinja2.StrictUndefined,
        autoescape=kind == "html",
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["bytes"] = fmt_bytes
    env.filters["int"] = fmt_int
    env.filters["md"] = md_escape
    env.filters["witness"] = witness_text
    env.filters["techniques"] = techniques_text
    env.filters["short"] = shorten
    env.filters["hex"] = lambda n: f"{n:#010x}"
    env.filters["pct"] = lambda p: "-" if p is None else f"{p:.1f}%"
    return env


def _view(doc: dict[str, Any]) -> dict[str, Any]:
    """Derived values both templates use, computed once from the document alone."""
    s, arena, sched, timeline = doc["summary"], doc["arena"], doc["schedule"], doc["timeline"]
    fit = doc["fit"]
    cert = sched["certificate"]
    verdict = ("unknown", "no board: fit not checked") if fit is None else (fit["verdict"], fit["text"])
    stock = arena["stock_tflm"]
    stock_bytes = stock.get("arena_bytes") if stock.get("available") else None
    ref_stock = stock_bytes if stock_bytes is not None else arena["stock_tflm_greedy_arena_bytes"]
    saved = ref_stock - arena["arena_bytes"] if ref_stock else None
    certificate_text = certificate_sentence(
        cert,
        {o["op"]: o["type"] for o in doc["operators"]},
        peak_bytes=sched["peak_bytes"],
        lower_bound_bytes=sched["lower_bound_bytes"],
        model_ops={o["op"]: o["model_op"] for o in doc["operators"] if "model_op" in o},
    )
    refined = sched.get("memory_model", "tensor") != "tensor"
    whole = sched.get("tensor_model_optimum")
    if sched.get("certificate_scope"):
        certificate_text += f" (it covers {sched['certificate_scope']})"
    elif refined:
        certificate_text += (
            " (in the refined memory model: views and slices share their buffer, outputs overlap dying inputs as "
            "far as the kernels allow)"
        )
    model_text = model_sentence(sched, whole)
    tradeoff = doc["recompute_tradeoff"]
    best_rc = None
    if tradeoff:
        saving = [p for p in tradeoff["plans"] if p["saving_bytes"] > 0]
        best_rc = min(saving, key=lambda p: (p["peak_bytes"], p["extra_macs"])) if saving else None
    savings = []
    if sched["saving_bytes"] > 0:
        savings.append(
            f"reordering already saves {sched['saving_bytes']:,} B against the stored order "
            f"({sched['stored_order_peak_bytes']:,} B -> {sched['peak_bytes']:,} B)"
        )
    if sched["certified"]:
        savings.append("no other operator order has a lower peak (certified)")
    else:
        gap = sched["peak_bytes"] - sched["lower_bound_bytes"]
        savings.append(f"a better order might save up to {gap:,} B (not proven optimal)")
    if arena["arena_bytes"] > arena["lower_bound_bytes"]:
        savings.append(
            f"placement is {arena['arena_bytes'] - arena['lower_bound_bytes']:,} B above its bound"
            + (" (proven minimal)" if arena["optimal"] else "")
        )
    else:
        savings.append("the arena equals its lower bound: placement cannot do better")
    in_tensor = refined and (tradeoff or {}).get("memory_model") == "tensor"
    if best_rc and in_tensor:
        # the trade-off is planned in the tensor model: never mistaken for a saving on this plan
        lower = "below" if best_rc["peak_bytes"] < sched["peak_bytes"] else "still above"
        savings.append(
            f"recomputation (k={best_rc['k']}, planned in the tensor model) lowers the tensor-model peak "
            f"by {best_rc['saving_bytes']:,} B ({best_rc['baseline_peak_bytes']:,} B -> "
            f"{best_rc['peak_bytes']:,} B) for {best_rc['extra_macs']:,} extra MACs "
            f"({best_rc['extra_macs_percent']:.2f}%), {lower} this plan's refined peak"
        )
    elif best_rc:
        savings.append(
            f"recomputation (k={best_rc['k']}) lowers the peak by {best_rc['saving_bytes']:,} B "
            f"for {best_rc['extra_macs']:,} extra MACs ({best_rc['extra_macs_percent']:.2f}%)"
        )
    elif tradeoff:
        top_k = max(p["k"] for p in tradeoff["plans"])
        savings.append(f"recomputation (k up to {top_k}) cannot lower the peak")
    if refined and whole:
        savings.append(
            f"the refined memory model saves {whole['peak_bytes'] - sched['peak_bytes']:,} B against the "
            f"tensor-model optimum ({whole['peak_bytes']:,} B -> {sched['peak_bytes']:,} B)"
        )
    where = " (refined)" if refined else ""
    series = [
        {"key": "stored", "label": f"stored order{where} (peak {sched['stored_order_peak_bytes']:,} B)",
         "values": timeline["stored_live_bytes"]},
        {"key": "certified", "label": f"certified order{where} (peak {sched['peak_bytes']:,} B)",
         "values": timeline["certified_live_bytes"]},
    ]  # fmt: skip
    tensor_live = timeline.get("tensor_live_bytes")
    if tensor_live:
        series.append(
            {"key": "tensor", "label": f"same order, tensor model (peak {max(tensor_live, default=0):,} B)",
             "values": tensor_live}
        )  # fmt: skip
    rc = timeline["recompute"]
    if rc:
        series.append(
            {"key": "recompute", "label": f"recomputation k={rc['k']}{' (tensor model)' if refined else ''} "
             f"(peak {rc['peak_bytes']:,} B)",
             "values": rc["live_bytes"]}
        )  # fmt: skip
    return {
        "verdict": verdict,
        "certificate_text": certificate_text,
        "model_text": model_text,
        "io_text": io_sentence(doc["model"].get("io") or {}),
        "refined": refined,
        "spark_tensor": sparkline(tensor_live) if tensor_live else "",
        "headline": doc_headline(doc),
        "stock_bytes": stock_bytes,
        "saved_vs_stock": saved,
        "saved_vs_stock_percent": percent(saved, ref_stock) if saved is not None and ref_stock else None,
        "savings": savings,
        "series": series,
        "regions_shown": [r for r in (fit["regions"] if fit else []) if r["used_bytes"] or r["holds"]],
        "spark_stored": sparkline(timeline["stored_live_bytes"]),
        "spark_certified": sparkline(timeline["certified_live_bytes"]),
        "spark_recompute": sparkline(rc["live_bytes"]) if rc else "",
        "summary": s,
        "op_type": {o["op"]: o["type"] for o in doc["operators"]},
    }


TECHNIQUE_WORDS = {
    "overlap": "output over dying input",
    "views": "views",
    "pad_fusion": "PAD fused (tensor removed)",
    "stream": "streamed by rows (tensor never whole)",
}


def io_sentence(io: dict[str, Any]) -> str:
    """The generated API's edges in words: the model's own, or which became int8 (--io int8); and a
    legacy uint8 model computed as int8 (tinysched.model.uint8)."""
    uint8 = io.get("uint8")
    tail = (
        f"; legacy uint8 model computed as int8 ({uint8['retyped_tensors']} uint8 tensors as int8, "
        f"{uint8['offset_filters']} filters with a filter offset)"
        if uint8
        else ""
    )
    return _edges_sentence(io) + tail


def _edges_sentence(io: dict[str, Any]) -> str:
    edges = io.get("edges") or []
    if io.get("mode", "model") == "model":
        return "the model's own inputs and outputs"
    if not edges:
        return f"--io {io.get('mode')}: no edge qualifies; the model's own inputs and outputs"
    parts = [
        f"{e['role']} {e['position']} int8 (scale {e['scale']:.9g}, zero point {e['zero_point']}; "
        + (
            "the model's uint8 tensor, q - 128)"
            if e["opcode"] == "UINT8"
            else f"model operator {e['model_op']} {e['opcode']} removed)"
        )
        for e in edges
    ]
    return f"--io {io.get('mode')}: " + "; ".join(parts)


def model_sentence(sched: dict[str, Any], whole: dict[str, Any] | None) -> str:
    """Which memory model the numbers are in, with the tensor-model optimum beside a refined one."""
    name = sched.get("memory_model", "tensor")
    note = sched.get("memory_model_note")
    if name == "tensor":
        text = "tensor: every tensor its own bytes for its whole lifetime"
    else:
        text = (
            f"{name}: views, split outputs and in-place concatenations share one buffer, outputs overlap "
            "dying inputs as the kernels' order allows"
        )
        if whole:
            proof = "certified" if whole["certified"] else "not proven"
            text += f"; tensor-model optimum {whole['peak_bytes']:,} B ({proof})"
    return text + (f" ({note})" if note else "")


def techniques_text(saved: list[dict[str, Any]]) -> str:
    """A step's savings by technique, for the operator tables."""
    return ", ".join(f"{TECHNIQUE_WORDS.get(s['technique'], s['technique'])} {s['bytes']:,} B" for s in saved)


def render_html(doc: dict[str, Any]) -> str:
    """The self-contained page: inline CSS and SVG, no script, no network."""
    import markupsafe

    check_metadata(doc)
    view = _view(doc)
    timeline = doc["timeline"]
    charts = {
        "timeline": markupsafe.Markup(
            svg_timeline(
                view["series"],
                peak_step=timeline["peak_step"],
                peak_tensors=timeline["peak_tensors"],
                peak_overlap=timeline.get("peak_overlap_bytes", 0),
                lower_bound=doc["schedule"]["lower_bound_bytes"],
            )
        ),
        "arena_map": markupsafe.Markup(
            svg_arena_map(
                doc["arena"]["tensors"],
                doc["arena"]["arena_bytes"],
                timeline["steps"],
                lower_bound=doc["arena"]["lower_bound_bytes"],
            )
        ),
        "budget": markupsafe.Markup(
            svg_budget(budget["candidates"], budget["budget_bytes"], budget.get("measured"))
            if (budget := doc.get("arena_budget"))
            else ""
        ),
        "bars": {
            r["name"]: markupsafe.Markup(svg_bar(r["percent_used"], r["status"]))
            for r in view["regions_shown"]
        },
    }
    return _environment("html").get_template("report.html.j2").render(doc=doc, view=view, charts=charts)


def render_markdown(doc: dict[str, Any]) -> str:
    """The same content as GitHub/GitLab-flavoured Markdown, for a merge request."""
    check_metadata(doc)
    return _environment("md").get_template("report.md.j2").render(doc=doc, view=_view(doc))


def render(doc: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return metadata_json(check_metadata(doc))
    if fmt == "md":
        return render_markdown(doc)
    if fmt == "html":
        return render_html(doc)
    raise TinyschedError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")


def write_beside_firmware(
    directory: str | Path, name: str, doc: dict[str, Any], *, rendered: bool = True
) -> dict[str, Path]:
    """`<name>_metadata.json` (always: `measure BUILD_DIR` reads it) and, when `rendered`,
    `<name>_report.html` and `<name>_report.md` in `directory`, each atomically."""
    from tinysched.files import write_atomic

    directory = Path(directory)
    written = {"json": write_atomic(directory / f"{name}_metadata.json", metadata_json(check_metadata(doc)))}
    if rendered:
        written["html"] = write_atomic(directory / f"{name}_report.html", render_html(doc))
        written["md"] = write_atomic(directory / f"{name}_report.md", render_markdown(doc))
    return written
