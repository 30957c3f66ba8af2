"""The planning pipeline as two functions between frozen records.

    plan(graph, PlanOptions) -> Planned          fold, rewrite, schedule (+certificate), recompute, place,
                                                 check
    generate(planned, prefix) -> GeneratedModule the C sources (tinysched.codegen)

Every verb that plans (`plan`, `build`, `verify`, `measure MODEL`, `report`) builds its `PlanOptions`
with `add_plan_arguments` / `options_from_args`, so a flag means the same thing everywhere, and
`--time-limit S` is the whole planning budget, split between the stages by `stage_budget` (the one
place that says how).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tinysched.arena.check import check_plan
from tinysched.arena.cost import (
    CORE_FAMILIES,
    DEFAULT_CORE,
    operator_estimate,
    order_estimate,
    stream_estimate_error,
    stream_overhead,
    table_note,
)
from tinysched.arena.placement import DEFAULT_ALIGNMENT, ArenaPlan, check_alignment, plan_arena, plan_model
from tinysched.arena.pools import PoolRequest, plan_pools, pool_request
from tinysched.arena.scratch import KeepDefault, with_wide_scratch
from tinysched.budget import Budget, Shortfall, shortfalls_line
from tinysched.errors import EXIT_DOES_NOT_FIT, TinyschedError
from tinysched.memory.expand import (
    ExpandDepthwise,
    expansion_of,
    expansion_pairs,
    fuse_expansions,
    macs_added,
    opcode_text,
    rows_again_macs,
)
from tinysched.memory.inplace import (
    DEFAULT_PREFERENCE,
    PREFERENCES,
    select_variants,
    step_gains,
    unneeded_variants,
)
from tinysched.memory.overlap import MODELS, memory_model
from tinysched.memory.stream import (
    SHORT_CHAIN,
    Stream,
    TwoPass,
    candidates,
    choose,
    fuse,
    input_chains,
    members,
    pass_bytes,
    stream_of,
    tiled,
    two_pass,
)
from tinysched.memory.tensor import profile
from tinysched.memory.variants import KernelVariant, variant_of, with_variants
from tinysched.model.fold import FoldResult, fold_constants, no_folding
from tinysched.model.graph import Graph
from tinysched.model.interface import DEFAULT_IO, IO_MODES, Interface, choose_interface
from tinysched.model.rewrite import RewriteResult, compose, no_rewrites, rewrite_graph
from tinysched.model.shapes import check_graph
from tinysched.order.recompute import (
    RecomputePlan,
    RecomputeRequest,
    operator_macs,
    request_from_values,
    total_macs,
)
from tinysched.order.scheduler import Schedule, schedule

DEFAULT_TIME_LIMIT = 6.0  # seconds for all of planning (see stage_budget)
DEFAULT_MEMORY_MODEL = "refined"  # --memory-model tensor gives the tensor model's plan
# the share (%) of one inference's MACs the two-pass streams (tinysched.memory.stream.TwoPass) may
# add by computing a squeeze-excitation block's rows twice, unless --mac-budget says otherwise
DEFAULT_STREAM_MAC_BUDGET = 10.0
MAX_INPUT_PASSES = 4  # --input-passes: column tiles of a stage run 2 to 4
MAX_ALIGNMENT = 4096  # the generated C aligns the arena with _Alignas / __attribute__((aligned))


@dataclass(frozen=True)
class PlanOptions:
    """Everything a user can ask of planning; one record travels through every verb."""

    alignment: int = DEFAULT_ALIGNMENT
    time_limit: float = DEFAULT_TIME_LIMIT  # the whole planning budget, seconds
    recompute: RecomputeRequest | None = None  # None: every operator runs once
    fold: bool = True  # evaluate shape/constant sub-graphs at compile time
    rewrite: bool = True  # exact graph rewrites (tinysched.model.rewrite): dilated convolutions, PAD fusion
    memory_model: str = DEFAULT_MEMORY_MODEL  # "tensor" | "refined" (tinysched.memory.overlap.MODELS)
    io: str = DEFAULT_IO  # "model" | "int8": the generated API's edge types (tinysched.model.interface)
    prefer: str = (
        DEFAULT_PREFERENCE  # "memory": in-place kernel variants where they lower a step; "speed": none
    )
    pools: PoolRequest | None = None  # the board's RAM regions, --pool limits, --pin (tinysched.arena.pools)
    # --arena-budget: the plan with the fewest estimated instructions whose arena fits these bytes,
    # among the plans `plan` considers (tinysched.pipeline.BudgetChoice); None: the least memory
    arena_budget: int | None = None
    core: str = (
        DEFAULT_CORE  # the core (boards.yaml) whose kernel cost lines rank them (tinysched.arena.cost)
    )
    # --stream-input: the application hands the input's rows to `<prefix>_invoke_streamed` and the
    # first operators take them through a window (tinysched.memory.stream.input_chains)
    stream_input: bool = False
    # --input-passes: how many times the application can hand over the input's rows (a camera or a
    # microphone delivers them once; a frame buffer or a sensor that reads out again, more): a first
    # stage over column tiles asks for them once per tile
    input_passes: int = 1
    # --mac-budget without --recompute: the share (%) of one inference's MACs that two-pass streams
    # may add (None: DEFAULT_STREAM_MAC_BUDGET; 0: none streams)
    stream_mac_budget: float | None = None

    def __post_init__(self) -> None:
        check_alignment(self.alignment)
        if self.stream_mac_budget is not None and not 0 <= self.stream_mac_budget < math.inf:
            raise TinyschedError(
                f"--mac-budget must be a non-negative percentage, got {self.stream_mac_budget}"
            )
        if self.arena_budget is not None and not 0 < self.arena_budget < 1 << 40:
            raise TinyschedError(
                f"--arena-budget must be a positive number of bytes, got {self.arena_budget}"
            )
        if self.alignment & (self.alignment - 1):
            raise TinyschedError(f"--alignment must be a power of two, got {self.alignment}")
        if self.memory_model not in MODELS:
            raise TinyschedError(
                f"--memory-model must be one of {', '.join(MODELS)}, got {self.memory_model!r}"
            )
        if self.io not in IO_MODES:
            raise TinyschedError(f"--io must be one of {', '.join(IO_MODES)}, got {self.io!r}")
        if self.prefer not in PREFERENCES:
            raise TinyschedError(f"--prefer must be one of {', '.join(PREFERENCES)}, got {self.prefer!r}")
        if self.alignment > MAX_ALIGNMENT:
            raise TinyschedError(f"--alignment must be at most {MAX_ALIGNMENT} bytes, got {self.alignment}")
        if self.arena_budget is not None and self.recomputing:
            raise TinyschedError(
                "--arena-budget does not combine with --recompute (--ram-budget is recomputation's budget)"
            )
        if not 0 <= self.time_limit < math.inf:
            raise TinyschedError(
                f"--time-limit must be a non-negative number of seconds, got {self.time_limit}"
            )
        if not 1 <= self.input_passes <= MAX_INPUT_PASSES:
            raise TinyschedError(
                f"--input-passes must be a whole number from 1 to {MAX_INPUT_PASSES}, got {self.input_passes}"
            )
        if self.stream_input and not self.streams_allowed:
            asked = (
                "--recompute"
                if self.recomputing
                else f"--memory-model {self.memory_model}"
                if self.memory_model != "refined"
                else f"--prefer {self.prefer}"
            )
            raise TinyschedError(
                "--stream-input streams the input's rows into the first operators, which the refined "
                f"memory model with --prefer memory does, not {asked}"
            )

    @property
    def recomputing(self) -> bool:
        return self.recompute is not None and self.recompute.active

    @property
    def streams_allowed(self) -> bool:
        """Streamed fusion (tinysched.memory.stream) is part of the refined model with --prefer memory: the
        tensor model stays whole tensors and black-box kernels, --prefer speed the plain kernels."""
        return self.planned_memory_model == "refined" and self.prefer == "memory"

    @property
    def planned_memory_model(self) -> str:
        """The model the plan is made in: a recomputation sequence is planned in the tensor model
        (tinysched.order.recompute has no refined step cost), whatever `memory_model` asks."""
        return "tensor" if self.recomputing else self.memory_model

    @property
    def memory_model_note(self) -> str | None:
        """Why the plan is not in the asked-for model (None: it is)."""
        if self.planned_memory_model == self.memory_model:
            return None
        return (
            f"--recompute plans in the tensor memory model (asked: {self.memory_model}): recomputation "
            "sequences have no refined step cost yet, so every tensor gets its own bytes"
        )


DEFAULT_PLAN_OPTIONS = PlanOptions()


@dataclass(frozen=True)
class StageBudget:
    schedule: float  # certified order search
    recompute: float  # the recomputation search (0 without --recompute)
    placement: float  # offsets (greedy placers, then CP-SAT, over the orders of equal peak)


# Shares of --time-limit, each a share of what is left when the stage starts (tinysched.budget):
# what a stage does not use flows to the next. Ordering gets most: placement of a certified order
# is usually proven in milliseconds, while order search on irregular graphs uses all it gets; a
# certified order search is charged nothing, so placement then has the whole budget. Under
# --recompute the ordering share is split: 3/4 to the recomputation search (which finds its own
# baseline order), 1/4 to the certified order the report compares it with.
ORDERING_SHARE = 5 / 6
PLACEMENT_SHARE = 1 / 6
RECOMPUTE_SHARE_OF_ORDERING = 3 / 4


def stage_budget(options: PlanOptions) -> StageBudget:
    """How `options.time_limit` is split between the stages when none hands time on (the one place
    that says so; `plan` draws the shares from one `Budget`, so unused time flows on)."""
    ordering = options.time_limit * ORDERING_SHARE
    recompute = ordering * RECOMPUTE_SHARE_OF_ORDERING if options.recomputing else 0.0
    return StageBudget(
        schedule=ordering - recompute, recompute=recompute, placement=options.time_limit * PLACEMENT_SHARE
    )


class BudgetTooSmall(TinyschedError):
    """--arena-budget below the least arena tinysched plans: exit code 3, as a model too big for
    its board."""

    exit_code = EXIT_DOES_NOT_FIT


@dataclass(frozen=True)
class BudgetCandidate:
    """One plan `--arena-budget` considered: its arena, its estimated instructions per inference and
    what it runs."""

    label: str  # what distinguishes it, in words
    arena_bytes: int
    instructions_estimate: int
    streams: int  # chains run row by row
    variants: int  # operators running an in-place variant
    wide: int  # CONV_2D operators running the widened kernel
    fits: bool
    chosen: bool = False
    default: bool = False  # the plan without a budget (the least memory)

    def as_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "arena_bytes": self.arena_bytes,
            "instructions_estimate": self.instructions_estimate,
            "streams": self.streams,
            "variants": self.variants,
            "wide": self.wide,
            "fits": self.fits,
            "chosen": self.chosen,
            "default": self.default,
        }


@dataclass(frozen=True)
class BudgetChoice:
    """What `--arena-budget` chose: among the considered plans that fit, the fewest estimated
    instructions (ties: the smaller arena), if that is at least BUDGET_MIN_SAVING below the
    least-memory plan's estimate (else the least-memory plan)."""

    budget_bytes: int
    least_bytes: int  # the least arena tinysched plans (the default, --prefer memory)
    core: str
    estimate_source: str  # the cost table's lines, in words (tinysched.arena.cost.table_note)
    candidates: tuple[BudgetCandidate, ...]

    @property
    def chosen(self) -> BudgetCandidate:
        return next(c for c in self.candidates if c.chosen)

    @property
    def least_memory(self) -> BudgetCandidate:
        """The plan without a budget (--prefer memory: the least arena)."""
        return next(c for c in self.candidates if c.default)

    def as_json(self) -> dict[str, Any]:
        return {
            "budget_bytes": self.budget_bytes,
            "least_arena_bytes": self.least_bytes,
            "core": self.core,
            "estimate_source": self.estimate_source,
            "chosen": self.chosen.label,
            "candidates": [c.as_json() for c in self.candidates],
        }

    def summary(self) -> str:
        """One line: which plan, its arena and estimate, against the least-memory plan's."""
        c, least = self.chosen, self.least_memory
        if c is least:
            return (
                f"--arena-budget {self.budget_bytes:,} B: {c.label}, arena {c.arena_bytes:,} B, est. "
                f"{c.instructions_estimate:,} instructions per inference; no plan of the "
                f"{len(self.candidates)} considered that fits is estimated {BUDGET_MIN_SAVING:.0%} faster"
            )
        saved = (
            1 - c.instructions_estimate / least.instructions_estimate if least.instructions_estimate else 0
        )
        return (
            f"--arena-budget {self.budget_bytes:,} B: {c.label}, arena {c.arena_bytes:,} B, est. "
            f"{c.instructions_estimate:,} instructions per inference, {100 * saved:.1f}% fewer than the "
            f"least-memory plan ({least.arena_bytes:,} B, est. {least.instructions_estimate:,}); "
            f"{len(self.candidates)} plans considered"
        )


@dataclass(frozen=True)
class InputStreaming:
    """What --stream-input gave: the input streamed or not (`note`: why not), and the arena both
    ways (the plan with the whole input in the arena, and the one with its window)."""

    tensor: int  # the model's input (a tensor index of the planned graph)
    streamed: bool  # its rows pass through a window; False: it is whole in the arena
    rows: int  # the rows the application delivers (dimension 1; 1 for a rank-1 input)
    row_bytes: int
    window_rows: int  # rows of it the arena holds at once (all of them when whole)
    whole_input_arena_bytes: int
    whole_input_lower_bound_bytes: int
    streamed_arena_bytes: int | None  # None: no plan streams it (`note`)
    streamed_lower_bound_bytes: int | None
    note: str | None  # why the input stays whole (None: it streams)

    def as_json(self) -> dict[str, Any]:
        return {
            "tensor": self.tensor,
            "streamed": self.streamed,
            "rows": self.rows,
            "row_bytes": self.row_bytes,
            "window_rows": self.window_rows,
            "arena_bytes_whole_input": self.whole_input_arena_bytes,
            "lower_bound_bytes_whole_input": self.whole_input_lower_bound_bytes,
            "arena_bytes_streamed_input": self.streamed_arena_bytes,
            "lower_bound_bytes_streamed_input": self.streamed_lower_bound_bytes,
            "note": self.note,
        }

    def summary(self) -> str:
        """One line: the arena both ways, or why the input stays whole."""
        whole = f"{self.whole_input_arena_bytes:,} B with the whole input"
        if not self.streamed:
            return f"input whole: {self.note}; arena {whole}; <prefix>_invoke_streamed reads its rows into it"
        return (
            f"input streamed: {self.window_rows} of its {self.rows} rows of {self.row_bytes:,} B in the arena "
            f"at once; arena {self.streamed_arena_bytes:,} B streamed, {whole}"
        )


def _tiles_text(count: int) -> str:
    return f" over {count} column tiles" if count > 1 else ""


def _input_streaming(
    graph: Graph, whole: _KernelPlan, streamed: _KernelPlan | None, note: str | None
) -> InputStreaming:
    x = graph.inputs[0]
    shape = graph.tensors[x].shape
    rows = int(shape[1]) if len(shape) > 1 else 1
    chain = (
        None
        if streamed is None
        else next(s for op in streamed.graph.operators if (s := stream_of(op)) is not None and s.source)
    )
    return InputStreaming(
        x,
        streamed is not None and note is None,
        rows,
        graph.tensors[x].nbytes // max(rows, 1),
        rows if chain is None or note is not None else chain.rows[0],
        whole.arena.arena_bytes,
        whole.arena.lower_bound_bytes,
        None if streamed is None else streamed.arena.arena_bytes,
        None if streamed is None else streamed.arena.lower_bound_bytes,
        note,
    )


@dataclass(frozen=True)
class Planned:
    """A model planned for code generation: everything later stages read, nothing they recompute."""

    source: Graph  # the model as read
    graph: Graph  # what is placed and generated: folded, rewritten, with declared kernel scratch tensors
    folding: FoldResult  # of the graph with its chosen interface; operator_map and folded are over `source`
    rewriting: RewriteResult  # of the folded graph; its operator_map is over folded operators
    schedule: Schedule  # the certified (or best found) order of `graph`
    recompute: RecomputePlan | None  # the sequence that runs, when operators run again
    arena: ArenaPlan  # offsets for `run_order`
    options: PlanOptions
    codegen_note: str | None  # why the code generator cannot take this model (None: it can)
    interface: Interface  # the edges --io int8 changed (none: the model's own inputs and outputs)
    stage_seconds: dict[str, float] = field(default_factory=dict, compare=False)
    # `graph` as the default kernels run it (no in-place variant, no variant scratch): what the
    # tensor model plans, for the optimum printed beside a refined certificate
    default_kernels_graph: Graph | None = field(default=None, compare=False)
    # steps the time limit stopped that could have given a smaller arena (tinysched.budget): what a
    # longer --time-limit would try
    shortfalls: tuple[Shortfall, ...] = field(default=(), compare=False)
    budget: BudgetChoice | None = field(default=None, compare=False)  # what --arena-budget chose

    @property
    def instructions_estimate(self) -> int:
        """Estimated instructions per inference on `options.core` (tinysched.arena.cost)."""
        return order_estimate(self.graph, self.run_order, self.options.core, self.arena, self.own_path_layers)

    @property
    def own_path_layers(self) -> KeepDefault | None:
        """The code generator's test for the CONV_2D layers it runs by a path of its own on
        `options.core` (the estimate's ``pixels`` and ``stem`` lines; None: the core has none)."""
        return _own_path_layers(self.options.core)

    # --stream-input: the input streamed or why not, and the arena both ways (None: not asked)
    input_streaming: InputStreaming | None = field(default=None, compare=False)
    # the arena of the same plan with no chain streamed (None: no chain was tried)
    unstreamed_arena_bytes: int | None = field(default=None, compare=False)
    # that plan's estimated instructions per operator (of the graph before streaming, with the wide
    # kernels where its arena has room): what a streamed chain's operators cost whole (None: as above)
    unstreamed_estimates: Mapping[int, int] | None = field(default=None, compare=False)

    @property
    def memory_model(self) -> str:
        """The memory model the schedule, certificate and arena are stated in."""
        return self.arena.memory_model

    @property
    def variants(self) -> dict[int, KernelVariant]:
        """operator -> the in-place kernel variant it runs (tinysched.memory.variants), as recorded on `graph`
        (the widened CONV_2D kernel, chosen after placement, is in `wide_variants`)."""
        return {
            op.index: v
            for op in self.graph.operators
            if (v := variant_of(self.graph, op)) is not None and v.name != "wide"
        }

    @property
    def wide_variants(self) -> dict[int, KernelVariant]:
        """operator -> its ``wide`` variant: the CONV_2D kernels given scratch where the placed arena
        had room at their step (tinysched.arena.scratch)."""
        return {
            op.index: v
            for op in self.graph.operators
            if (v := variant_of(self.graph, op)) is not None and v.name == "wide"
        }

    def shortfalls_json(self) -> list[dict[str, Any]]:
        """What a longer --time-limit would try, step by step, for JSON (`time_limit_shortfalls`)."""
        return [s.as_json() for s in self.shortfalls]

    def shortfalls_summary(self) -> str | None:
        """One line: what a longer --time-limit would try (None: nothing it stopped could help)."""
        return shortfalls_line(self.shortfalls, self.options.time_limit)

    def wide_json(self) -> list[dict[str, Any]]:
        """The widened CONV_2D kernels, by planned operator, for JSON."""
        return [
            {
                "operator": op,
                "model_op": self.source_operator(op),
                "kernel": v.kernel,
                "blocks": v.param,
                "scratch_bytes": v.scratch_bytes,
                "table_bytes": v.table_bytes,
            }
            for op, v in sorted(self.wide_variants.items())
        ]

    def variants_json(self) -> list[dict[str, Any]]:
        """The in-place kernel variants chosen (--prefer memory), by planned operator, for JSON."""
        return [
            {
                "operator": op,
                "model_op": self.source_operator(op),
                "opcode": v.opcode,
                "variant": v.name,
                "kernel": v.kernel,
                v.param_name: v.param,
                "scratch_bytes": v.scratch_bytes,
                "table_bytes": v.table_bytes,
            }
            for op, v in sorted(self.variants.items())
        ]

    def variants_summary(self) -> str:
        """One line: which operators run an in-place variant and the scratch they add to the arena
        (and how many run the widened CONV_2D kernel in room the arena has at their step)."""
        chosen = self.variants
        wide = list(self.wide_variants.values())
        more = (
            f"; {len(wide)} CONV_2D operator(s) run the widened kernel (DSP cores) with their scratch "
            f"in bytes the arena leaves free at their step (at most {max(v.scratch_bytes for v in wide):,} B, "
            f"the arena unchanged) and {sum(v.table_bytes for v in wide):,} B of requantisation tables in flash"
            if wide
            else ""
        )
        if not chosen:
            why = (
                "--prefer speed"
                if self.options.prefer == "speed"
                else f"the {self.memory_model} memory model"
                if self.memory_model == "tensor"
                else "no in-place variant lowers the peak"
            )
            return f"default kernels everywhere ({why}){more}"
        scratch = max(v.scratch_bytes for v in chosen.values())
        table = sum(v.table_bytes for v in chosen.values())
        ops = ", ".join(f"{self.source_operator(op)} ({v.opcode})" for op, v in sorted(chosen.items()))
        return (
            f"{len(chosen)} operator(s) run in place, each with its scratch in the arena at its own step "
            f"(at most {scratch:,} B) and {table:,} B of requantisation tables in flash; `--prefer speed` "
            f"keeps the default kernels: model operators {ops}{more}"
        )

    def _chains(self) -> list[tuple[Any, Stream]]:
        """(rewrite, chain) of every streamed chain, in the planned operators' order."""
        found = []
        for r in self.rewriting.rewrites:
            chain = stream_of(self.graph.operators[r.operator]) if r.kind == "stream" else None
            if chain is not None:
                found.append((r, chain))
        return found

    def stream_macs(self) -> tuple[int, int]:
        """(MACs the streams add, MACs of one inference without them): a two-pass stream's second
        pass computes its feature map's rows again (tinysched.memory.stream.TwoPass), which the
        planned graph counts (its members are in both fused operators); column tiles compute their
        halo columns again, and an expansion in a stage the rows its windows share, which it does
        not (a fused operator counts its members' MACs once)."""
        chains = [c for _, c in self._chains()]
        added = sum(stream_macs_added(chains, self.graph))
        halo = sum(tile_macs_added(self.graph, c) for c in chains)
        # (nor the rows an expansion member computes again: tinysched.memory.expand counts them once)
        regrouped = sum(rows_again_macs(self.graph, c.operators) for c in chains)
        return added, total_macs(self.graph) - (added - halo - regrouped)

    def stream_macs_json(self) -> dict[str, Any]:
        added, whole = self.stream_macs()
        budget = self.options.stream_mac_budget
        return {
            "macs_added": added,
            "macs_without_streams": whole,
            "macs_added_percent": round(100 * added / whole, 3) if whole else 0.0,
            "mac_budget_percent": DEFAULT_STREAM_MAC_BUDGET if budget is None else budget,
        }

    def stream_macs_summary(self) -> str | None:
        """One line on the MACs two-pass streams and column tiles add (None: they add none)."""
        added, whole = self.stream_macs()
        if not added:
            return None
        chains = self._chains()
        twice = [r for r, c in chains if c in stream_macs_pairs([c for _, c in chains])]
        tiles = [(r, c) for r, c in chains if c.tiles is not None and tile_macs_added(self.graph, c)]
        budget = self.stream_macs_json()["mac_budget_percent"]
        parts = []
        if twice:
            blocks = "; ".join(" -> ".join(map(str, self._stream_model_ops(r))) for r in twice)
            parts.append(
                "squeeze-excitation blocks streamed by two passes, their feature map's rows computed twice: "
                f"model operators {blocks}"
            )
        if tiles:
            stages = "; ".join(
                f"{' -> '.join(map(str, self._stream_model_ops(r)))} over {c.tiles.count} tiles "
                f"({tile_macs_added(self.graph, c):,})"
                for r, c in tiles
            )
            parts.append(f"column tiles computing their halo columns again: model operators {stages}")
        regrouped = [
            (self.source_operator(v), macs_added(self.graph, e))
            for v, op in enumerate(self.graph.operators)
            if (c := stream_of(op)) is not None
            for e in (expansion_of(m) for m in c.operators)
            if e is not None and macs_added(self.graph, e)
        ]
        if regrouped:
            pairs = ", ".join(f"{v} ({n:,})" for v, n in regrouped)
            parts.append(
                "1x1 expansions computed into their depthwise row by row in a stage, the rows consecutive "
                f"output rows share computed again: in the stages of model operators {pairs}"
            )
        return (
            f"{added:,} MACs added ({100 * added / whole:.1f}% of {whole:,}; --mac-budget {budget:g}%): "
            + "; ".join(parts)
        )

    def streams_json(self) -> list[dict[str, Any]]:
        """The streamed chains (tinysched.memory.stream), by planned operator, for JSON."""
        rows = []
        chains = [c for _, c in self._chains()]
        added = dict(zip(map(id, chains), stream_macs_added(chains, self.graph), strict=True))
        twice = {id(c) for c in stream_macs_pairs(chains)}
        for r, chain in self._chains():
            if chain is not None:
                rows.append(
                    {
                        "operator": r.operator,
                        "model_ops": self._stream_model_ops(r),
                        "opcodes": [opcode_text(op) for op in chain.operators],
                        "input_rows": chain.source,  # the first tensor is the input, rows from the application
                        "tensors": list(chain.tensors),  # never whole: their windows hold them
                        "tensor_bytes": sum(chain.tensor_bytes),
                        "window_rows": list(chain.rows),
                        "window_bytes": chain.window_bytes,
                        # what its steps hold less: its tensors whole against their windows
                        "bytes_saved_at_its_steps": chain.saving,
                        # a pass of a two-pass stream; the second's MACs of the rows it computes again
                        "two_pass": id(chain) in twice,
                        "macs_added": added[id(chain)],
                        # column tiles (1: whole rows) and the sink's output columns [lo, hi) of each
                        "column_tiles": 1 if chain.tiles is None else chain.tiles.count,
                        "tile_columns": []
                        if chain.tiles is None
                        else [list(t[-1]) for t in chain.tiles.members],
                    }
                )
        return rows

    def _stream_model_ops(self, rewrite: Any) -> list[int]:
        """The model operators of a stream rewrite in chain order (its sources keep the last first)."""
        fold = self.folding.operator_map
        return [*(fold[v] for v in rewrite.sources[1:]), fold[rewrite.sources[0]]]

    def certificate_scope(self) -> str:
        """What the order's certificate covers: its memory model, and the streamed chains it holds
        fixed (the order is optimal among orders of the graph with those chains fused, not of
        every choice of chains)."""
        rows = self.streams_json()
        if self.memory_model == "tensor":
            scope = "orders of the operators in the tensor memory model (each tensor in bytes of its own" + (
                "; a streamed chain's tensors as its windows)" if rows else ")"
            )
        else:
            scope = (
                "orders of the operators in the refined memory model (views and slices share their buffer, "
                "outputs overlap dying inputs as far as the kernels allow)"
            )
        if not rows:
            return scope
        chains = "; ".join(" -> ".join(map(str, r["model_ops"])) for r in rows)
        input_note = " (one headed by the input's rows)" if any(r.get("input_rows") for r in rows) else ""
        return (
            f"{scope}, with the streamed chains fixed, each run as one operator: model operators {chains}"
            f"{input_note}; another choice of chains is not covered"
        )

    def streams_summary(self) -> str | None:
        """One line: which chains run row by row and what their tensors cost instead (None: none)."""
        rows = self.streams_json()
        if not rows:
            return None
        chains = ", ".join(
            f"{'input rows -> ' * r['input_rows']}{' -> '.join(map(str, r['model_ops']))} ({r['tensor_bytes']:,} B as windows of "
            f"{r['window_bytes']:,} B{_tiles_text(r['column_tiles'])})"
            for r in rows
        )
        text = (
            f"{len(rows)} chain(s) of operators run row by row, the tensors between them never whole; "
            f"`--prefer speed` keeps whole tensors: model operators {chains}"
        )
        costs = self.stream_costs_summary()
        return text if costs is None else f"{text}; {costs}"

    def stream_overhead(self, op: int) -> tuple[int, int] | None:
        """(streamed, unstreamed) estimates of chain `op` against its operators in the plan without
        streams (tinysched.arena.cost.stream_overhead); None for an operator that is not a chain."""
        if self.unstreamed_estimates is None:  # no chain was tried
            return None
        return stream_overhead(
            self.graph, op, self.unstreamed_estimates, self.options.core, self.own_path_layers
        )

    def costly_streams(self) -> list[tuple[dict[str, Any], tuple[int, int]]]:
        """The streamed chains (`streams_json` rows) estimated over STREAM_COST_LIMIT times their
        operators run whole (issue 34: a chain should cost at most 3% more), with both estimates."""
        return [
            (r, over)
            for r in self.streams_json()
            if (over := self.stream_overhead(r["operator"])) is not None
            and over[0] > STREAM_COST_LIMIT * over[1]
        ]

    def stream_costs_summary(self) -> str | None:
        """`costly_streams` in words (None: none is)."""
        costly = self.costly_streams()
        if not costly:
            return None
        text = "; ".join(
            f"chain {' -> '.join(map(str, r['model_ops']))} est. {streamed:,} instructions, "
            f"{100 * (streamed / whole - 1):.0f}% over the same operators in the plan without streams (est. {whole:,})"
            for r, (streamed, whole) in costly
        )
        error = stream_estimate_error(self.options.core)
        if error:
            text += f" (a chain's estimate was within {100 * error:.0f}% of its measured count on the chains measured)"
        if self.budget is None:
            text += ": `--arena-budget BYTES` chooses the fastest plan that fits"
        return text

    @property
    def run_order(self) -> tuple[int, ...]:
        """What the firmware runs: the order, or the recomputation sequence."""
        return self.arena.order

    @property
    def operator_sources(self) -> tuple[tuple[int, ...], ...]:
        """Planned operator -> the input model's operators it computes, the one it keeps first
        (a rewritten operator also stands for the operators it replaced)."""
        fold = self.folding.operator_map
        return tuple(tuple(fold[v] for v in srcs) for srcs in self.rewriting.operator_map)

    def source_operator(self, op: int) -> int:
        """Operator index in the input model of operator `op` of the planned graph."""
        return self.folding.operator_map[self.rewriting.operator_map[op][0]]

    def operator_label(self, op: int) -> str:
        """Operator `op`'s type in words: its opcode, or for a streamed chain which model operators
        feed it, row by row."""
        operator = self.graph.operators[op]
        chain = stream_of(operator)
        if chain is None:
            return opcode_text(operator)
        rewrite = next(r for r in self.rewriting.rewrites if r.kind == "stream" and r.operator == op)
        feeders = ", ".join(
            f"{v} ({opcode_text(member)})"
            for v, member in zip(self._stream_model_ops(rewrite), chain.operators[:-1], strict=False)
        )
        if chain.source:
            through = f" through operator(s) {feeders}" if feeders else ""
            return f"{chain.consumer.opcode} streamed from the input's rows{through}"
        return f"{chain.consumer.opcode} streamed from operator(s) {feeders}"

    def model_order(self, order: Sequence[int]) -> list[int]:
        """An order (or sequence) of planned operators as operator indices of the input model."""
        return [self.source_operator(v) for v in order]

    @property
    def rewritten_operators(self) -> tuple[int, ...]:
        """Operators of the input model that a rewrite removed (their work is in another operator)."""
        fold = self.folding.operator_map
        return tuple(sorted(fold[v] for v in self.rewriting.removed))

    def rewrites_json(self) -> list[dict[str, Any]]:
        """Each rewrite with the input model's operator indices (`plan --json`, the metadata)."""
        fold = self.folding.operator_map
        return [
            {
                "kind": r.kind,
                "operator": r.operator,
                "model_op": fold[r.sources[0]],
                "model_ops": sorted(fold[v] for v in r.sources),
                "removed_model_ops": sorted(fold[v] for v in r.sources[1:]),
                "removed_tensors": [self.graph.tensors[t].name for t in r.removed_tensors],
                "removed_bytes": r.removed_bytes,
                "detail": r.detail,
            }
            for r in self.rewriting.rewrites
        ]


def plan(graph: Graph, options: PlanOptions = DEFAULT_PLAN_OPTIONS) -> Planned:
    """Fold, check what the code generator can take, schedule, place and re-check the placement."""
    from tinysched import codegen

    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    budget = stage_budget(options)
    interface = choose_interface(graph, options.io, uint8_as_int8=options.fold)  # not for plan --tflm
    io_graph = interface.graph
    folding = fold_constants(io_graph) if options.fold else no_folding(io_graph)
    if interface.operator_map != tuple(range(len(graph.operators))):  # later stages report the model's
        io_map = interface.operator_map
        folding = replace(
            folding,
            folded=tuple(io_map[v] for v in folding.folded),
            operator_map=tuple(io_map[v] for v in folding.operator_map),
        )
    rewriting = rewrite_graph(folding.graph) if options.rewrite else no_rewrites(folding.graph)
    placed = rewriting.graph
    # again, now that folded shape inputs are constants and dilated triples are rewritten (a triple
    # left with a placeholder batch is refused by the code generator: `codegen_note`)
    check_graph(placed, batch_placeholders=True)
    note = None
    base = placed  # the graph before streamed fusion, kernel variants and scratch
    default_kernels = placed  # replaced below by the graph with the default kernels' scratch
    try:
        codegen.check_supported(placed)
        default_kernels = codegen.with_scratch(placed, codegen.scratch_needs(placed))
    except TinyschedError as err:
        note = str(err)
    if options.stream_input and len(base.inputs) != 1:
        raise TinyschedError(
            f"--stream-input: the model has {len(base.inputs)} inputs; the streamed entry takes the rows "
            "of a model's only input"
        )
    seconds["fold"] = time.perf_counter() - clock  # folding, rewrites and the code generator's check

    clock = time.perf_counter()
    rplan = None
    expanding = no_rewrites(base)
    streaming = no_rewrites(base)
    choice: BudgetChoice | None = None
    ceiling: int | None = None  # --arena-budget: bytes the wide kernels' scratch may grow the arena to
    ledger = Budget(options.time_limit)  # what every stage below draws on (tinysched.budget)
    input_streaming = None
    unstreamed: int | None = None
    unstreamed_estimates: dict[int, int] | None = None
    if options.recomputing:
        assert options.recompute is not None
        placed = default_kernels if note is None else base
        rplan = options.recompute.plan(placed, budget.recompute)
        ledger.spend(budget.recompute)
        sched = schedule(placed, time_limit=budget.schedule)
        ledger.spend(0.0 if sched.certified else budget.schedule)
        seconds["schedule"] = time.perf_counter() - clock
        clock = time.perf_counter()
        arena = plan_arena(placed, rplan.sequence, options.alignment, budget=ledger.part())
        refinement = None
    else:
        # (with --stream-input: each round plans the streams again, and the arena they lower is the
        # one with the input never whole)
        expansions = (
            expansion_pairs(base)
            if options.streams_allowed and options.stream_input and note is None and not _pins(options)
            else []
        )
        # (the expansion rounds get what the plan without them leaves of the budget)
        found = _streamed_plans(base, options, note, ledger)
        unstreamed, unstreamed_estimates = found.unstreamed, found.unstreamed_estimates
        if expansions:
            found = _expansion_rounds(base, options, expansions, found, ledger)
        best, considered, input_streaming = found.best, found.considered, found.input_streaming
        if options.arena_budget is not None:
            # the budget chooses among plans that take the input as `best` does (whole or streamed)
            considered = [p for p in considered if _streams_input(p) == _streams_input(best)]
            if note is None:  # the plans with the default kernels: no variants, streams as chosen
                expanded = best.expanding or no_rewrites(base)
                fast = _KernelPlanner(
                    expanded.graph, replace(options, prefer="speed", stream_input=False), True, best.expanding
                )
                if not _streams_input(best):
                    considered.append(
                        fast.plan(
                            no_rewrites(expanded.graph), ledger.part(2 if best.streaming.rewrites else 1)
                        )
                    )
                if best.streaming.rewrites:
                    considered.append(fast.plan(best.streaming, ledger.part()))
            choice, best, ceiling = _fit_budget(options, considered, best)
        expanding = best.expanding or no_rewrites(base)  # (a plan of an expansion round: its graph's)
        placed, refinement, sched, arena, streaming = (
            best.graph,
            best.refinement,
            best.schedule,
            best.arena,
            best.streaming,
        )
        seconds["schedule"] = sched.seconds
    if options.pools is not None:
        arena = plan_pools(placed, arena, options.pools, budget.placement, refinement, ledger.part())
    if note is None and not options.recomputing:  # faster kernels where the arena has room at their step
        placed, arena = with_wide_scratch(placed, arena, ceiling, _own_path_layers(options.core))
    seconds["placement"] = arena.seconds
    clock = time.perf_counter()
    check_plan(placed, arena)
    seconds["check"] = time.perf_counter() - clock
    return Planned(
        graph,
        placed,
        folding,
        compose(compose(rewriting, expanding), streaming),
        sched,
        rplan,
        arena,
        options,
        note,
        interface,
        seconds,
        default_kernels,
        tuple(s for s in ledger.shortfalls if s.bound_bytes < arena.arena_bytes),
        choice,
        input_streaming,
        unstreamed,
        unstreamed_estimates,
    )


@dataclass(frozen=True)
class _Streamed:
    """What the streaming rounds made of one graph before fusion (`_streamed_plans`)."""

    best: _KernelPlan
    considered: list[_KernelPlan]  # every plan made, for --arena-budget
    unstreamed: int | None  # the arena with no chain streamed (None: no chain was tried)
    unstreamed_estimates: dict[int, int] | None
    input_streaming: InputStreaming | None


def _streamed_plans(base: Graph, options: PlanOptions, note: str | None, ledger: Budget) -> _Streamed:
    """The least-memory plan of `base` (no stream fused yet) with the chains, two-pass blocks and
    column tiles at its peaks streamed, the input streamed where asked.

    Without candidate streams the budget goes to the one plan (to its kernel-variant plans in
    turn); with them, half of it goes to the plan without streams and the rounds that stream
    the chains at the peak share the rest, each what is left over the rounds to come. Every
    plan's allowance is work (tinysched.budget), so what is chosen does not depend on the
    machine's load, and what a plan does not use is there for the next. With --stream-input
    and chains headed by the input, the whole-input plan has half of the budget and the plans
    with the input streamed the rest."""
    streams: list[Stream] = []
    pairs: list[TwoPass] = []  # squeeze-excitation blocks that can stream by two passes
    heads: list[Stream] = []  # --stream-input: chains headed by the input (input_note: why none)
    input_note: str | None = None
    if note is None and options.streams_allowed:
        # a pinned tensor stays whole (it is placed in its region), so no chain streams it
        named = {tensor for tensor, _ in options.pools.pins} if options.pools is not None else set()
        pinned = {t for t in base.activation_tensors if base.tensors[t].name in named or str(t) in named}
        try:
            streams = [c for c in candidates(base) if not pinned & set(c.tensors)]
            pairs = [p for p in two_pass(base) if not pinned & {*p.first.tensors, *p.second.tensors}]
            if options.stream_input:
                heads, input_note = input_chains(base)
                heads = [c for c in heads if not pinned & set(c.tensors)]
                if input_note is None and not heads:
                    input_note = "input 0 is pinned to a region"
        except TinyschedError as err:
            note, streams, heads, pairs = str(err), [], [], []
    kernels = _KernelPlanner(base, options, note is None)
    whole_ledger = ledger.part(2) if heads else ledger
    best = kernels.plan(no_rewrites(base), whole_ledger.part(2 if streams else 1))
    considered = [best]
    unstreamed = best.arena.arena_bytes if streams or heads else None
    unstreamed_estimates = (
        _operator_estimates(best, options.core) if (streams or heads) and note is None else None
    )
    short = [s for s in streams if len(s.operators) <= SHORT_CHAIN]
    whole_plan, best = best, _stream_rounds(base, kernels, short, best, [], whole_ledger, considered)
    if len(short) < len(streams):  # the longer stages, from the plan without streams (SHORT_CHAIN)
        longer = _stream_rounds(base, kernels, streams, whole_plan, [], whole_ledger, considered)
        if longer.arena.arena_bytes < best.arena.arena_bytes:
            best = longer
    if pairs:
        best = _two_pass_rounds(base, kernels, pairs, best, whole_ledger, considered, options)
    if streams:
        best = _tiles_then_streams(base, kernels, streams, best, whole_ledger, considered, options)
    input_streaming = None
    if options.stream_input:
        streamed = (
            _streamed_input_plan(base, kernels, streams, heads, best, ledger, considered, options)
            if heads
            else None
        )
        if streamed is not None and streamed.arena.arena_bytes >= best.arena.arena_bytes:
            input_note = (
                f"streaming it gives an arena of {streamed.arena.arena_bytes:,} B, no smaller than the "
                f"{best.arena.arena_bytes:,} B with the whole input"
            )
        elif streamed is None and input_note is None:
            input_note = "the code generator runs no chain headed by the input"
        if note is not None:
            input_note = "the code generator cannot take this model"
        input_streaming = _input_streaming(base, best, streamed, input_note)
        if input_note is None and streamed is not None:
            best = streamed
    return _Streamed(best, considered, unstreamed, unstreamed_estimates, input_streaming)


def _pins(options: PlanOptions) -> bool:
    """Tensors pinned to a region (--pin): they stay whole, and no round maps them again."""
    return options.pools is not None and bool(options.pools.pins)


EXPAND_ROUNDS = 6  # plans that compute one more expansion at the peak into its depthwise by groups


MIN_GROUP = 2  # channels per group at the least: one channel a call costs more calls than it saves bytes


def _narrower(pair: ExpandDepthwise) -> ExpandDepthwise:
    """The pair in groups of half its channels."""
    return replace(pair, group=max(pair.group // 2, MIN_GROUP))


def _expansion_rounds(
    base: Graph,
    options: PlanOptions,
    pairs: Sequence[ExpandDepthwise],
    found: _Streamed,
    ledger: Budget,
) -> _Streamed:
    """Up to EXPAND_ROUNDS plans of the streamed input that run, on top of the last kept, every 1x1
    expansion at the peak into its depthwise by channel groups (tinysched.memory.expand); where every
    pair at the peak is taken, those in narrower groups. A round fuses the pairs into `base`, finds
    the kept plan's chains again among the chains of that graph, and streams on from them (the
    rounds at the peak, then column tiles); it is kept when it lowers the arena and the MACs its
    stages add (rows computed again, with the two-pass blocks' and the tiles') fit --mac-budget."""
    expanding = no_rewrites(base)
    streaming = found.input_streaming
    if streaming is None or not streaming.streamed:
        return found
    percent = DEFAULT_STREAM_MAC_BUDGET if options.stream_mac_budget is None else options.stream_mac_budget
    cap = math.floor(total_macs(base) * percent / 100)
    chosen: list[ExpandDepthwise] = []
    best = found.best
    considered = list(found.considered)
    for _ in range(EXPAND_ROUNDS):
        peak = {u for v in best.peak_operators() for u in expanding.operator_map[v]}
        at_peak = {p.depthwise.index for p in pairs if {p.expand.index, p.depthwise.index} & peak}
        taken = {p.depthwise.index for p in chosen}
        more = [p for p in pairs if p.depthwise.index in at_peak - taken]
        # no new pair at the peak: the chosen ones there in narrower groups (less scratch, more calls)
        narrower = (
            []
            if more
            else [_narrower(p) for p in chosen if p.depthwise.index in at_peak and p.group > MIN_GROUP]
        )
        if not more and not narrower:
            break
        kept = [p for p in chosen if p.depthwise.index not in {q.depthwise.index for q in narrower}]
        trying = sorted([*kept, *more, *narrower], key=lambda p: p.depthwise.index)
        expanded = fuse_expansions(base, trying)
        graph = expanded.graph
        heads, _ = input_chains(graph)
        pool = [*candidates(graph), *heads]
        # the kept plan's chains, by the model operators they run
        wanted = {
            _model_members(s, expanding) for op in best.graph.operators if (s := stream_of(op)) is not None
        }
        again = sorted(
            (s for s in pool if _model_members(s, expanded) in wanted), key=lambda s: s.consumer.index
        )  # in `choose`'s order, so a round that adds nothing compares equal
        if not any(s.source for s in again) or not _fusable(fuse(graph, again)):
            continue
        share = ledger.part(2)
        kernels = _KernelPlanner(graph, options, True, expanded)
        trial = kernels.plan(fuse(graph, again), share.part(2))
        tried = [trial]
        trial = _stream_rounds(graph, kernels, pool, trial, again, share, tried)
        trial = _tiles_then_streams(graph, kernels, pool, trial, share, tried, options)
        considered += tried
        streams = [s for op in trial.graph.operators if (s := stream_of(op)) is not None]
        if not _streams_input(trial) or sum(stream_macs_added(streams, graph)) > cap:
            continue
        if trial.arena.arena_bytes < best.arena.arena_bytes:
            best, chosen, expanding = trial, trying, expanded
    if best is found.best:
        return replace(found, considered=considered)
    streaming = replace(
        streaming,
        streamed_arena_bytes=best.arena.arena_bytes,
        streamed_lower_bound_bytes=best.arena.lower_bound_bytes,
    )
    return replace(found, best=best, considered=considered, input_streaming=streaming)


def _model_members(stream: Stream, fused: RewriteResult) -> frozenset[int]:
    """The operators of the graph before `fused` that a chain of `fused.graph` runs (-1: the input's
    rows)."""
    return frozenset(u for v in members(stream) for u in ((v,) if v < 0 else fused.operator_map[v]))


def _own_path_layers(core: str) -> KeepDefault | None:
    """The code generator's test for the layers it runs by a path of its own that needs no strip
    (codegen.own_path: the pixel in registers, the stem), which the planner leaves on their
    default kernel (no ``wide`` strip), on a DSP core; None on a Helium core, whose kernels have
    neither path."""
    from tinysched import codegen

    return None if CORE_FAMILIES.get(core) == "mve" else codegen.own_path


def _operator_estimates(plan: _KernelPlan, core: str) -> dict[int, int]:
    """Estimated instructions of each operator of `plan`, with the wide kernels where its arena has
    room (as the final plan gets them)."""
    graph, arena, own = plan.graph, plan.arena, _own_path_layers(core)
    if arena.memory_model != "tensor":
        graph, arena = with_wide_scratch(graph, arena, keep_default=own)
    return {v: operator_estimate(graph, v, core, arena, own) for v in dict.fromkeys(arena.order)}


def _fit_budget(
    options: PlanOptions, considered: list[_KernelPlan], least: _KernelPlan
) -> tuple[BudgetChoice, _KernelPlan, int | None]:
    """Among the considered plans, each as placed and with the wide kernels' scratch grown up to the
    budget, the one that fits with the fewest estimated instructions (the least-memory plan unless
    that is BUDGET_MIN_SAVING fewer): the choice, the plan, and the ceiling its wide scratch was
    given (None: only the bytes the arena leaves free)."""
    budget = options.arena_budget
    assert budget is not None
    if least.arena.arena_bytes > budget:
        raise BudgetTooSmall(
            f"--arena-budget {budget:,} B is below the least arena tinysched plans for this model: "
            f"{least.arena.arena_bytes:,} B (its lower bound {least.arena.lower_bound_bytes:,} B)"
        )
    rows: list[tuple[BudgetCandidate, _KernelPlan, int | None]] = []
    seen: set[tuple[int, int, int, int, int]] = set()
    for kernel_plan in [least, *(p for p in considered if p is not least)]:  # the default first
        for ceiling in (None, budget):
            graph, arena = kernel_plan.graph, kernel_plan.arena
            if arena.memory_model != "tensor":
                graph, arena = with_wide_scratch(graph, arena, ceiling, _own_path_layers(options.core))
            chosen = [variant_of(graph, op) for op in graph.operators]
            wide = sum(1 for v in chosen if v is not None and v.name == "wide")
            variants = sum(1 for v in chosen if v is not None and v.name != "wide")
            chains = sum(1 for r in kernel_plan.streaming.rewrites if r.kind == "stream")
            estimate = order_estimate(graph, arena.order, options.core, arena, _own_path_layers(options.core))
            key = (arena.arena_bytes, estimate, chains, variants, wide)
            if key in seen:
                continue
            seen.add(key)
            label = f"{chains} chain(s) streamed, {variants} operator(s) in place, {wide} CONV_2D wide" + (
                " (arena grown for their scratch)" if ceiling is not None else ""
            )
            candidate = BudgetCandidate(
                label,
                arena.arena_bytes,
                estimate,
                chains,
                variants,
                wide,
                arena.arena_bytes <= budget,
                default=kernel_plan is least and ceiling is None,
            )
            rows.append((candidate, kernel_plan, ceiling))
    best = min((r for r in rows if r[0].fits), key=lambda r: (r[0].instructions_estimate, r[0].arena_bytes))
    if best[0].instructions_estimate > (1 - BUDGET_MIN_SAVING) * rows[0][0].instructions_estimate:
        best = rows[0]  # not clearly faster than the least memory: keep the least memory
    candidates = tuple(replace(c, chosen=c is best[0]) for c, _, _ in rows)
    choice = BudgetChoice(budget, least.arena.arena_bytes, options.core, table_note(options.core), candidates)
    return choice, best[1], best[2]


# --arena-budget spends bytes over the least arena only on a plan estimated at least this much faster:
# on the models measured the estimate of a plan is within 0.89-1.05 of its count, and of two plans
# of one model their ratio within about 7% of the measured one (docs/BENCHMARKS.md, "RAM budget")
BUDGET_MIN_SAVING = 0.06
STREAM_COST_LIMIT = 1.03  # issue 34: a chain estimated dearer than this over its operators whole is named


def _fusable(fused: RewriteResult) -> bool:
    """The code generator runs every chain of `fused` as one loop."""
    from tinysched import codegen

    try:
        codegen.check_supported(codegen.with_scratch(fused.graph, codegen.scratch_needs(fused.graph)))
    except TinyschedError:
        return False
    return True


def _stream_rounds(
    base: Graph,
    kernels: _KernelPlanner,
    found: Sequence[Stream],
    best: _KernelPlan,
    chosen: list[Stream],
    ledger: Budget,
    considered: list[_KernelPlan],
) -> _KernelPlan:
    """Up to STREAM_ROUNDS plans that stream, on top of `chosen` (the streams of `best`), the chains
    of `found` with the fewest own bytes through the operators at the peak step; the smallest arena."""
    basis = best  # the plan the next round streams from, and its streams
    rounds = STREAM_ROUNDS if found else 0
    for done in range(rounds):
        peak = basis.peak_operators()
        trying = choose(base, found, chosen, peak)
        if trying == chosen:
            # nothing scores below the chains at the peak: counted with the inputs read after them
            # whole (a residual block's skip), a stage with its ADD may (issue 33: mcunet's blocks)
            trying = choose(base, found, chosen, peak, by="kept")
        if trying == chosen:
            break
        fused = fuse(base, trying)
        if not _fusable(fused):  # a chain the code generator cannot run as one loop is not tried again
            break
        trial = kernels.plan(fused, ledger.part(rounds - done))
        considered.append(trial)  # every plan made, for --arena-budget
        wider = choose(base, found, chosen, peak, by="saving")
        if trial.arena.arena_bytes >= best.arena.arena_bytes and wider not in (trying, chosen):
            # the chains with the fewest own bytes left a whole tensor at the peak: those removing
            # the most bytes instead (a residual block's whole stage), on what this round has left
            fused = fuse(base, wider)
            if _fusable(fused):
                other = kernels.plan(fused, ledger.part(rounds - done))
                considered.append(other)
                if other.arena.arena_bytes < trial.arena.arena_bytes:
                    trial, trying = other, wider
        if trial.arena.arena_bytes < best.arena.arena_bytes:
            best = trial
        elif trial.arena.optimal or trial.arena.lower_bound_bytes >= best.arena.arena_bytes:
            break  # no placement of this plan beats the best, so no round streams on from it
        # a plan not smaller yet, whose placement is above a bound below the best, is streamed
        # on from too: more placement work could still make it (or its successors) the best
        basis, chosen = trial, trying
    return best


TWO_PASS_ROUNDS = 4  # plans that add two-pass streams at the peak, each on top of the last kept


def stream_macs_added(streams: Sequence[Stream], graph: Graph) -> list[int]:
    """Per chain (in `streams`' order), the MACs of its operators an earlier chain runs too (a
    two-pass stream's second pass computing the feature map's rows again) and the halo columns its
    column tiles compute again (`tile_macs_added`)."""
    seen: set[int] = set()
    added = []
    for s in streams:
        twice = sum(operator_macs(graph, op) for op in s.operators if op.index in seen)
        # an expansion into its depthwise, called row by row, computes the rows its windows share again
        regrouped = rows_again_macs(graph, s.operators)
        added.append(twice + tile_macs_added(graph, s) + regrouped)
        seen |= {op.index for op in s.operators}
    return added


def tile_macs_added(graph: Graph, stream: Stream) -> int:
    """The MACs a stage run over column tiles adds: per member, its MACs per output column times the
    halo columns the tiles compute again (tinysched.memory.stream.ColumnTiles)."""
    if stream.tiles is None:
        return 0
    added = 0
    for j, op in enumerate(stream.operators):
        width = int(graph.tensors[op.outputs[0]].shape[2])
        added += operator_macs(graph, op) * (stream.tiles.computed_columns(j) - width) // width
    return added


TILE_ROUNDS = 3  # plans that run the stages at the peak over column tiles, each on top of the last kept


@dataclass(frozen=True)
class TileOffer:
    """One stage at the peak run over column tiles (`tiled`): the window bytes it saves at the
    stage's step and the halo MACs it adds (`tile_macs_added`)."""

    stage: Stream
    tiles: Stream
    saved: int
    halo: int

    def cost_key(self) -> tuple[float, int, int]:
        """Halo MACs per window byte saved, then the fewer tiles and the earlier stage: the
        cheapest saving first."""
        assert self.tiles.tiles is not None
        return self.halo / self.saved, self.tiles.tiles.count, self.stage.consumer.index


def tile_offers(
    graph: Graph, chosen: Sequence[Stream], peak: set[int], budget_macs: int, passes: int
) -> list[TileOffer]:
    """The tilings a round may try, the cheapest saving first (`TileOffer.cost_key`): every tile
    count of the untiled stage of `chosen` that holds every operator at the peak (where another
    step is at the peak too, tiling one stage cannot lower it, and planning it would only spend
    the budget) whose halo fits `budget_macs` (what --mac-budget leaves after the chains' added
    MACs), a stage headed by the input only over at most `passes` tiles (the application's rows
    are asked for once per tile)."""
    offers = []
    for stage in chosen:
        if stage.tiles is not None or not peak or not peak <= members(stage):
            continue
        for tiles in tiled(graph, stage):
            assert tiles.tiles is not None
            if stage.source and tiles.tiles.count > passes:
                continue
            halo = tile_macs_added(graph, tiles)
            if halo <= budget_macs:
                offers.append(TileOffer(stage, tiles, stage.window_bytes - tiles.window_bytes, halo))
    return sorted(offers, key=TileOffer.cost_key)


def _tile_rounds(
    base: Graph,
    kernels: _KernelPlanner,
    best: _KernelPlan,
    ledger: Budget,
    considered: list[_KernelPlan],
    options: PlanOptions,
) -> _KernelPlan:
    """Up to TILE_ROUNDS rounds that run one more stage at the peak over column tiles (issue 33 part
    2), the arena they save against the MACs they add. A round plans every `tile_offers` tiling
    (the halo charged against --mac-budget, the hard limit, with the MACs the plan's chains add
    already) and keeps the smallest arena, of equal arenas the fewest halo MACs (then the fewest
    tiles): the default flags mean least memory, and --mac-budget is what a plan may spend for it.

    Why no cap of its own (it was 5% of the stage's MACs): a tiling that does not lower the arena
    is never kept, so tiles cost time only where they save bytes; with one pass over the input's
    rows (the default) a stage headed by the input is never tiled, and no other tiling lowers a
    shared model's default or --stream-input arena, so none of those plans changes. Where tiles
    do lower it, the instructions rise by more than the halo: tiled CONV_2D members find no room
    for the widened kernel's strip in the stage's output, each tile calls the kernels again on
    narrower rows, and the lower peak makes later steps choose in-place kernels (VWW --stream-input
    --input-passes 2: 15,072 -> 10,848 B, 10.1 M -> 16.9 M instructions on the emulated M7). That is the
    least-memory plan the flags ask for; --mac-budget lower, or --arena-budget (the fastest plan
    that fits), keeps a plan faster."""
    percent = DEFAULT_STREAM_MAC_BUDGET if options.stream_mac_budget is None else options.stream_mac_budget
    cap = math.floor(total_macs(base) * percent / 100)
    if percent == 0:
        return best  # no stream may add work: not even a tiling without halo MACs (it reads rows again)
    for done in range(TILE_ROUNDS):
        chosen = [s for op in best.graph.operators if (s := stream_of(op)) is not None]
        spent = sum(stream_macs_added(chosen, base))
        offers = tile_offers(base, chosen, best.peak_operators(), cap - spent, options.input_passes)
        kept: tuple[int, int, int] | None = None  # (arena, halo, tiles) of the round's best
        round_best = best
        for k, offer in enumerate(offers):
            fused = fuse(base, [offer.tiles if c is offer.stage else c for c in chosen])
            if not _fusable(fused):
                continue
            trial = kernels.plan(fused, ledger.part((len(offers) - k) * (TILE_ROUNDS - done)))
            considered.append(trial)
            assert offer.tiles.tiles is not None
            key = (trial.arena.arena_bytes, offer.halo, offer.tiles.tiles.count)
            if trial.arena.arena_bytes < best.arena.arena_bytes and (kept is None or key < kept):
                round_best, kept = trial, key
        if kept is None:
            break
        best = round_best
    return best


def _two_pass_rounds(
    base: Graph,
    kernels: _KernelPlanner,
    pairs: Sequence[TwoPass],
    best: _KernelPlan,
    ledger: Budget,
    considered: list[_KernelPlan],
    options: PlanOptions,
) -> _KernelPlan:
    """Up to TWO_PASS_ROUNDS plans that stream, on top of `best`'s chains, the squeeze-excitation
    blocks at the peak by two passes (replacing the chains they cut into), within the MACs
    --mac-budget allows: per block, of the pairs whose MACs fit, the one with the fewest own bytes
    (both passes' `pass_bytes`) and then the fewest MACs; a round is kept when it lowers the arena."""
    percent = DEFAULT_STREAM_MAC_BUDGET if options.stream_mac_budget is None else options.stream_mac_budget
    cap = math.floor(total_macs(base) * percent / 100)
    chosen = [s for op in best.graph.operators if (s := stream_of(op)) is not None]
    paired: set[int] = set()  # the operators of the pairs kept: no later pair cuts into them
    for done in range(TWO_PASS_ROUNDS):
        spent = sum(stream_macs_added(chosen, base))
        peak = best.peak_operators()
        taken = {members(s) for s in chosen}
        trying = list(chosen)
        for pair in _pairs_by_cost(base, pairs):
            both = members(pair.first) | members(pair.second)
            if (
                not (both | pair.between) & peak
                or both & paired
                or {members(pair.first), members(pair.second)} & taken
            ):
                continue
            extra = sum(operator_macs(base, op) for op in pair.recomputed)
            if spent + extra > cap or any(members(c) & both for c in trying if c not in chosen):
                continue  # over the budget, or cutting into a pair this round already adds
            trying = [c for c in trying if not members(c) & both] + [pair.first, pair.second]
            spent += extra
        if trying == chosen:
            break
        fused = fuse(base, sorted(trying, key=lambda s: s.consumer.index))
        if not _fusable(fused):
            break
        trial = kernels.plan(fused, ledger.part(TWO_PASS_ROUNDS - done))
        considered.append(trial)
        if trial.arena.arena_bytes >= best.arena.arena_bytes:
            break
        best, chosen = trial, trying
        paired = {v for s in stream_macs_pairs(chosen) for v in members(s)}
    return best


def stream_macs_pairs(streams: Sequence[Stream]) -> list[Stream]:
    """The chains that share an operator with another: the two passes of two-pass streams."""
    return [s for s in streams if any(members(s) & members(o) for o in streams if o is not s)]


def _pairs_by_cost(graph: Graph, pairs: Sequence[TwoPass]) -> list[TwoPass]:
    """The pairs by the bytes they leave at their steps (`pass_bytes` of both passes), then by the
    MACs they add: the arena they save against the MACs they cost."""

    def key(p: TwoPass) -> tuple[int, int, int]:
        own = max(pass_bytes(graph, p.first), pass_bytes(graph, p.second))
        return own, sum(operator_macs(graph, op) for op in p.recomputed), p.second.consumer.index

    return sorted(pairs, key=key)


def _streamed_input_plan(
    base: Graph,
    kernels: _KernelPlanner,
    streams: Sequence[Stream],
    heads: Sequence[Stream],
    whole: _KernelPlan,
    ledger: Budget,
    considered: list[_KernelPlan],
    options: PlanOptions,
) -> _KernelPlan | None:
    """The smallest arena with the input streamed (--stream-input): each chain headed by the input
    planned with the chains of the whole-input plan `whole` it does not touch (half of `ledger`,
    shared), then rounds streaming more chains on top of the best."""
    kept = [s for op in whole.graph.operators if (s := stream_of(op)) is not None]
    seeds = ledger.part(2)
    tries = [[h, *_untouched(kept, h)] for h in heads]
    tries = [t for t in tries if _fusable(fuse(base, t))]
    best, chosen = None, None
    for k, trying in enumerate(tries):
        trial = kernels.plan(fuse(base, trying), seeds.part(len(tries) - k))
        considered.append(trial)
        if best is None or trial.arena.arena_bytes < best.arena.arena_bytes:
            best, chosen = trial, trying
    if best is None or chosen is None:
        return None
    best = _stream_rounds(base, kernels, [*streams, *heads], best, chosen, ledger, considered)
    return _tiles_then_streams(base, kernels, [*streams, *heads], best, ledger, considered, options)


def _tiles_then_streams(
    base: Graph,
    kernels: _KernelPlanner,
    found: Sequence[Stream],
    best: _KernelPlan,
    ledger: Budget,
    considered: list[_KernelPlan],
    options: PlanOptions,
) -> _KernelPlan:
    """`_tile_rounds` on `best`, and while they lower the arena, `_stream_rounds` on the new peak
    (column tiles shrink one stage's windows; the step the peak moves to may need a stage of its
    own), at most TILE_ROUNDS times."""
    for _ in range(TILE_ROUNDS):
        tiled_plan = _tile_rounds(base, kernels, best, ledger, considered, options)
        if tiled_plan is best:
            break
        grown = _grown_stages(base, kernels, found, tiled_plan, ledger, considered)
        chosen = [s for op in grown.graph.operators if (s := stream_of(op)) is not None]
        best = _stream_rounds(base, kernels, found, grown, chosen, ledger, considered)
    return _untiled(base, kernels, found, best, ledger, considered)


def _untiled(
    base: Graph,
    kernels: _KernelPlanner,
    found: Sequence[Stream],
    best: _KernelPlan,
    ledger: Budget,
    considered: list[_KernelPlan],
) -> _KernelPlan:
    """`best` with each stage over column tiles run whole again, or over fewer tiles, where the
    arena stays as it is (the fewest halo MACs first): the rounds after a tiling may have lowered
    the peak below the step the tiles were for, and tiles cost MACs and more instructions than
    those (mcunet --stream-input: two stages)."""
    for stage in [
        s for op in best.graph.operators if (s := stream_of(op)) is not None and s.tiles is not None
    ]:
        whole = next((s for s in found if s.tiles is None and members(s) == members(stage)), None)
        if whole is None:
            continue
        assert stage.tiles is not None
        fewer = [t for t in tiled(base, whole) if t.tiles is not None and t.tiles.count < stage.tiles.count]
        for option in sorted([whole, *fewer], key=lambda t: tile_macs_added(base, t)):
            chosen = [s for op in best.graph.operators if (s := stream_of(op)) is not None]
            if stage not in chosen:
                break
            fused = fuse(base, [option if s is stage else s for s in chosen])
            if not _fusable(fused):
                continue
            trial = kernels.plan(fused, ledger.part(2))
            considered.append(trial)
            if trial.arena.arena_bytes <= best.arena.arena_bytes:
                best = trial
                break
    return best


GROWN_TRIES = 3  # per stage at the peak, the larger stages holding it tried, most bytes saved first


def _grown_stages(
    base: Graph,
    kernels: _KernelPlanner,
    found: Sequence[Stream],
    best: _KernelPlan,
    ledger: Budget,
    considered: list[_KernelPlan],
) -> _KernelPlan:
    """`best` with stages at its peak replaced by larger ones holding them (cutting into no other
    chosen stage), the choice that lowers the arena most: every stage at the peak grown by the
    fewest operators at once (two blocks at the same peak), or one grown by GROWN_TRIES choices of
    the most bytes saved. Once column tiles have lowered another stage, the peak can be a stage that
    leaves an operand of the next ADD whole (`choose` scores its own bytes as if that operand died
    there), which the stage through the ADD streams."""
    chosen = [s for op in best.graph.operators if (s := stream_of(op)) is not None]
    peak = best.peak_operators()

    def larger(stage: Stream) -> list[Stream]:
        mine = members(stage)
        return [
            f
            for f in found
            if members(f) > mine
            and all(members(c) <= members(f) or not members(c) & members(f) for c in chosen)
        ]

    at_peak = [c for c in chosen if members(c) & peak and c.tiles is None]
    tries: list[list[Stream]] = []
    least = {
        id(c): min(larger(c), key=lambda f: (len(f.operators), -f.saving), default=None) for c in at_peak
    }
    grown = [g for g in least.values() if g is not None]
    if len(grown) > 1 and all(not members(a) & members(b) for a in grown for b in grown if a is not b):
        tries.append([*[c for c in chosen if not any(members(c) <= members(g) for g in grown)], *grown])
    for stage in at_peak:
        for f in sorted(larger(stage), key=lambda f: (-f.saving, f.consumer.index))[:GROWN_TRIES]:
            tries.append([c for c in chosen if not members(c) <= members(f)] + [f])
    smallest = best
    for trying in tries:
        fused = fuse(base, sorted(trying, key=lambda c: c.consumer.index))
        if not _fusable(fused):
            continue
        trial = kernels.plan(fused, ledger.part(2 * len(tries)))
        considered.append(trial)
        if trial.arena.arena_bytes < smallest.arena.arena_bytes:
            smallest = trial
    return smallest


def _untouched(kept: Sequence[Stream], head: Stream) -> list[Stream]:
    """The chains of `kept` that share no operator with `head`, a two-pass stream's passes kept or
    dropped together (one pass alone would leave its feature map computed by no operator)."""
    dropped = [c for c in kept if members(c) & members(head)]
    while more := [c for c in kept if c not in dropped and any(members(c) & members(d) for d in dropped)]:
        dropped += more
    return [c for c in kept if c not in dropped]


def _streams_input(plan: _KernelPlan) -> bool:
    """The plan's input is streamed (a chain headed by it, --stream-input)."""
    return any((s := stream_of(op)) is not None and s.source for op in plan.graph.operators)


STREAM_ROUNDS = (
    8  # plans that stream chains through the peak step's operators, each kept if it lowers the arena
)


@dataclass(frozen=True)
class _KernelPlan:
    streaming: RewriteResult  # the streams fused into `base` (no rewrites: none)
    graph: Graph  # with the chosen variants and every kernel's scratch
    refinement: Any
    schedule: Schedule
    arena: ArenaPlan
    # the expansions by groups fused into the model's graph to make `base` (None: none)
    expanding: RewriteResult | None = None

    def peak_operators(self) -> set[int]:
        """Operators of the graph before fusion whose step (fused or not) is at the peak."""
        steps = profile(self.graph, self.schedule.order, self.refinement).steps
        return {
            u
            for st in steps
            if st.live_bytes >= self.schedule.peak_bytes
            for u in self.streaming.operator_map[st.op]
        }


@dataclass(frozen=True)
class _KernelPlanner:
    """Plans one choice of streams with the in-place kernel variants that lower a step: a plan with
    every useful variant, then (if some lowered no peak) one without those, kept when no larger,
    else one without those far below the peak (the first plan a third of the budget, the others
    what it left)."""

    base: Graph
    options: PlanOptions
    generable: bool  # the code generator takes `base` (else: no kernel variants, no scratch)
    expanding: RewriteResult | None = None  # what made `base` of the model's graph (_KernelPlan's)

    def _plan(self, graph: Graph, budget: Budget) -> tuple[Any, Schedule, ArenaPlan]:
        refinement = memory_model(graph, self.options.planned_memory_model)
        sched, arena = plan_model(
            graph,
            alignment=self.options.alignment,
            model=refinement,
            budget=budget,
            order_share=ORDERING_SHARE,
        )
        return refinement, sched, arena

    def plan(self, streaming: RewriteResult, budget: Budget) -> _KernelPlan:
        from tinysched import codegen

        options, unvaried = self.options, streaming.graph
        if not self.generable:
            return _KernelPlan(streaming, unvaried, *self._plan(unvaried, budget.part()), self.expanding)
        scratch = codegen.scratch_needs(unvaried)
        chosen = select_variants(unvaried, options.memory_model, options.prefer, options.alignment)
        placed = _with_kernel_variants(unvaried, scratch, chosen)
        refinement, sched, arena = self._plan(placed, budget.part(3 if chosen else 1))
        step_bytes = {st.op: st.live_bytes for st in profile(placed, sched.order, refinement).steps}
        gains = step_gains(unvaried, options.planned_memory_model, chosen)
        drop = unneeded_variants({v: step_bytes.get(v, 0) for v in chosen}, gains, sched.peak_bytes)
        # Without the variants whose step would stay under the peak; if the default kernels' drift
        # down the arena then costs bytes, without those whose step stays under half the peak.
        low = {v for v in drop if step_bytes.get(v, 0) + gains.get(v, 0) <= sched.peak_bytes // 2}
        tries = [dropped for dropped in (drop, low if low != drop else set()) if dropped]
        for k, dropped in enumerate(tries):
            kept = {v: c for v, c in chosen.items() if v not in dropped}
            trial = _with_kernel_variants(unvaried, scratch, kept)
            trial_model, trial_sched, trial_arena = self._plan(trial, budget.part(len(tries) - k))
            if trial_arena.arena_bytes <= arena.arena_bytes and trial_sched.peak_bytes <= sched.peak_bytes:
                placed, refinement, sched, arena = trial, trial_model, trial_sched, trial_arena
                break
        return _KernelPlan(streaming, placed, refinement, sched, arena, self.expanding)


def _with_kernel_variants(graph: Graph, scratch: dict[int, int], chosen: dict[int, KernelVariant]) -> Graph:
    """`graph` with the chosen variants recorded and every kernel's scratch tensor (streamed pairs'
    windows included) added."""
    from tinysched import codegen

    needs = {**scratch, **{v: variant.scratch_bytes for v, variant in chosen.items()}}
    return codegen.with_scratch(with_variants(graph, chosen), needs)


def tensor_model_optimum(planned: Planned, time_limit: float | None = None) -> Schedule:
    """The least peak of any order with whole, separate tensors (the tensor model), printed beside a
    refined certificate so the two models' numbers are never confused: the planned schedule itself
    when it is in the tensor model, else a search within `time_limit` (default: the schedule's share
    of the planning budget)."""
    if planned.schedule.memory_model == "tensor":
        return planned.schedule
    limit = stage_budget(planned.options).schedule if time_limit is None else time_limit
    return schedule(planned.default_kernels_graph or planned.graph, time_limit=limit)


def generate(planned: Planned, prefix: str | None = None) -> Any:
    """The C module of a planned model (a codegen.GeneratedModule); refuses what it cannot lower."""
    from tinysched import codegen

    if planned.codegen_note is not None:
        raise TinyschedError(planned.codegen_note)
    notes = {e.tensor: e.header_note() for e in planned.interface.edges}
    return codegen.generate(
        planned.graph,
        planned.arena,
        prefix=prefix,
        schedule=planned.schedule,
        edge_notes=notes,
        stream_entry=planned.options.stream_input,
        dsp_tables=CORE_FAMILIES.get(planned.options.core) != "mve",
    )


# ---- the command line's view -------------------------------------------------------------------------


def add_plan_arguments(parser: Any, *, placement: bool = True) -> None:
    """The planning flags, the same on every verb that plans (`schedule` orders the file's operators
    and places nothing, so it has no --alignment or --no-rewrite and gives its whole --time-limit to
    the order search)."""
    if placement:
        parser.add_argument(
            "--alignment",
            type=int,
            default=DEFAULT_ALIGNMENT,
            metavar="BYTES",
            help=f"tensor offset and arena alignment in bytes (default {DEFAULT_ALIGNMENT})",
        )
        parser.add_argument(
            "--memory-model",
            choices=tuple(MODELS),
            default=None,  # None: the default, so a verb can tell an explicit choice (plan --tflm)
            help="refined: views, split outputs and in-place concatenations share one buffer, and outputs "
            "overlap dying inputs as far as the "
            "kernels' access order allows; tensor: every tensor its own bytes (TFLM's model, for "
            f"comparison; --tflm and --recompute plan in it) (default {DEFAULT_MEMORY_MODEL})",
        )
        parser.add_argument(
            "--io",
            choices=tuple(IO_MODES),
            default=DEFAULT_IO,
            help="model: the model's own input and output types; int8: int8 in place of a float input "
            "read only by a QUANTIZE and a float output written by a DEQUANTIZE, which are removed "
            f"(the header gives each edge's scale and zero point) (default {DEFAULT_IO})",
        )
        parser.add_argument(
            "--prefer",
            choices=tuple(PREFERENCES),
            default=DEFAULT_PREFERENCE,
            help="memory: in the refined model, run an in-place kernel variant (a little scratch in the "
            "arena) where it lowers that step's bytes; speed: only the default kernels "
            f"(default {DEFAULT_PREFERENCE})",
        )
        parser.add_argument(
            "--arena-budget",
            type=_byte_count,
            metavar="BYTES",
            help="the plan with the fewest estimated instructions per inference whose arena fits BYTES "
            "(65536, 64K), among the least-memory plan, plans with fewer streamed chains or in-place "
            "variants and plans whose arena grows for the widened CONV_2D kernel's scratch; "
            "says which it chose and its estimate (default: the least memory)",
        )
        parser.add_argument(
            "--stream-input",
            action="store_true",
            help="the application hands the input's rows to <prefix>_invoke_streamed() as they arrive "
            "(a read_rows callback, rows in order, each once) and the first operators take them through "
            "a window, so the input is never whole in the arena; the plan gives the arena both ways, and "
            "says why when the input must stay whole (docs/integration.md)",
        )
        parser.add_argument(
            "--input-passes",
            type=int,
            default=1,
            metavar="N",
            help="with --stream-input: how many times the application can hand over the input's rows "
            "(default 1: a camera or microphone delivers them once); with more, the first stage may run "
            "over up to N column tiles, the rows asked for once per tile (docs/integration.md, Passes)",
        )
        parser.add_argument(
            "--no-rewrite",
            action="store_true",
            help="plan the graph as converted: no dilated-convolution rewrite, no PAD fusion",
        )
        parser.add_argument(
            "--pool",
            action="append",
            default=[],
            metavar="NAME=BYTES",
            help="with --board: let the arena use at most BYTES (65536, 64K, 1M) of RAM region NAME; "
            "the arena is then split over the board's regions, fastest first (repeatable)",
        )
        parser.add_argument(
            "--pin",
            action="append",
            default=[],
            metavar="TENSOR=REGION",
            help="with --board: keep activation tensor TENSOR (name or index) in RAM region REGION (repeatable)",
        )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=DEFAULT_TIME_LIMIT,
        metavar="S",
        help=f"seconds for all of planning: order search and placement (default {DEFAULT_TIME_LIMIT:g})",
    )
    parser.add_argument(
        "--recompute",
        type=int,
        default=0,
        metavar="K",
        help="let each operator run up to 1 + K times when that lowers the peak (default 0: never)",
    )
    parser.add_argument(
        "--ram-budget",
        type=int,
        metavar="BYTES",
        help="with --recompute: fewest extra MACs that fit this peak, instead of the lowest peak",
    )
    parser.add_argument(
        "--mac-budget",
        type=float,
        metavar="PERCENT",
        help="cap the extra MACs at this share of one inference: with --recompute, of the "
        "recomputed operators; else of the squeeze-excitation blocks streamed by two passes, which "
        f"compute their feature map's rows twice (default {DEFAULT_STREAM_MAC_BUDGET:g}; 0: none)",
    )


def options_from_args(args: Any, *, fold: bool = True) -> PlanOptions:
    """The PlanOptions the parsed flags ask for (flags a verb lacks take their defaults).

    `fold=False` (`plan --tflm`, which reorders the file's own operators) also turns rewrites off."""
    request = request_from_values(
        getattr(args, "recompute", 0) or 0,
        getattr(args, "ram_budget", None),
        getattr(args, "mac_budget", None),
    )
    return PlanOptions(
        pools=pools_from_args(args),
        alignment=getattr(args, "alignment", DEFAULT_ALIGNMENT),
        time_limit=getattr(args, "time_limit", DEFAULT_TIME_LIMIT),
        recompute=request,
        fold=fold,
        rewrite=fold and not getattr(args, "no_rewrite", False),
        memory_model=getattr(args, "memory_model", None) or DEFAULT_MEMORY_MODEL,
        io=getattr(args, "io", DEFAULT_IO),
        prefer=getattr(args, "prefer", DEFAULT_PREFERENCE),
        arena_budget=getattr(args, "arena_budget", None),
        core=core_of_args(args),
        stream_input=getattr(args, "stream_input", False),
        input_passes=getattr(args, "input_passes", 1),
        stream_mac_budget=getattr(args, "mac_budget", None) if request is None else None,
    )


def core_of_args(args: Any) -> str:
    """The core of --board (the cost table's lines the estimate reads); the default without one."""
    from tinysched.boards import get_board

    board = getattr(args, "board", None)
    if board in (None, "host", "selftest"):
        return DEFAULT_CORE
    return get_board(board).core


def _byte_count(text: str) -> int:
    """--arena-budget's value: bytes, with an optional K or M (1024s), as --pool takes them."""
    import argparse

    from tinysched.arena.pools import parse_bytes

    try:
        return parse_bytes(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a byte count (69296, 64K, 1M), got {text!r}") from None


def pools_from_args(args: Any) -> PoolRequest | None:
    """The board's arena regions with --pool / --pin applied (None without a board: one arena)."""
    from tinysched.boards import get_board

    board = getattr(args, "board", None)
    pools, pins = getattr(args, "pool", None) or [], getattr(args, "pin", None) or []
    if board in (None, "host", "selftest"):
        if pools or pins:
            flag = "--pool" if pools else "--pin"
            raise TinyschedError(f"{flag} needs --board: it names one of the board's RAM regions")
        return None
    return pool_request(get_board(board), pools, pins)
