"""The report: one page that says whether a model fits a board, what it needs, why, and what could
still be saved, in HTML, Markdown or JSON.

    metadata.py  the versioned document, built from the planned model, build facts and a measurement
    compare.py   comparisons that cost time (stock TFLM, recomputation trade-off), computed once
    svg.py       the inline charts
    render.py    HTML and Markdown from the document alone

Nothing here plans or compiles: the `report` and `build` verbs do that and hand the facts over.
"""

from tinysched.report.compare import NO_COMPARISONS, CompareOptions, run_comparisons
from tinysched.report.format import fmt_bytes
from tinysched.report.metadata import (
    FORMATS,
    SCHEMA,
    SCHEMA_VERSION,
    check_metadata,
    collect_metadata,
    fit_estimate,
    fit_from_size_report,
    measured_section,
    metadata_json,
    read_measured,
)
from tinysched.report.render import render, render_html, render_markdown, write_beside_firmware

__all__ = [
    "FORMATS",
    "NO_COMPARISONS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "CompareOptions",
    "check_metadata",
    "collect_metadata",
    "run_comparisons",
    "fit_estimate",
    "fit_from_size_report",
    "fmt_bytes",
    "measured_section",
    "metadata_json",
    "read_measured",
    "render",
    "render_html",
    "render_markdown",
    "write_beside_firmware",
]
