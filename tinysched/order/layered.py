"""Layer-by-layer search over the down-sets of one stretch of operators, vectorised with numpy.

The exact search in scheduler.py expands one down-set at a time in Python. Between two cut
operators of an irregularly wired network (a RandWire stage) the down-sets number in the millions,
and most of them only need a yes/no: can the stage still finish without a step above `cap`? This
module answers that question for whole layers at once (layer k = the down-sets of k of the
stage's operators), holding each down-set as a few 64-bit words and deriving its ready operators
and freed inputs with bit operations on whole layers (no BLAS: on a shared 2-core machine its
threads cost more than the arithmetic), some 300,000-600,000 down-sets a second; exact decisions
expand their layers in C instead when tinysched.order.native can build it (about ten times faster, the
same down-sets in the same order).

Two uses, one function (`layered_search`):

- decision (`width=None`): every down-set reachable with all steps <= `cap`, deduplicated; the
  stage finishes under the cap or provably does not (`complete`). When it does not, the cheapest
  step that was cut is a lower bound on every order's peak for this stage (every order has a first
  step above the cap, taken from a down-set the search held), `floor_bytes`;
- beam (`width=W`): only the W down-sets with the lowest (peak so far, resident bytes) survive each
  layer; a fast upper bound.

The step costs are `OrderingProblem`'s (`resident + output_bytes[v]`, residents moved by
`kept_output_bytes` and the freeable tensors), so they follow whatever step cost it defines. One
dominance rule (the exact search's): a ready operator whose step fits under the cap and that frees
at least as much as it keeps can be run at once; running it earlier never raises a later step.

Decisions can also search backward (`backward=True`): layer k holds the down-sets of m - k
operators, reached from the whole stage by taking off, one at a time, an operator none of whose
successors is left; the step it costs is the one it took when it ran last. The mirror rule: an
operator that keeps at least as much as it frees when run last can be the last one run: run
earlier, it frees no more than at the end, so it raises every step it runs before. Most operators of a randomly wired stage
keep as much as they free (a conv after its input's last other reader), so backward most down-sets
have a single move: ws_88_43_81_s17's peak stage (140 operators) is refuted at 36 tensors with
342,000 down-sets, where the forward decision held 311 million in 400 s without finishing. Where
many operators free more than they keep when run last (dead ends: an output nobody reads), the
backward down-sets multiply instead; `backward=None` tries both directions briefly and finishes
the narrower. Both directions give the same answer and floor; the orders found may differ.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from tinysched.order import native

__all__ = ["LayeredResult", "StepModel", "layered_search", "stage_is_fixed"]


class StepModel(Protocol):
    """What the search reads of tinysched.order.bounds.OrderingProblem (not imported: bounds rechecks
    stage bounds with this module)."""

    n_ops: int
    topological_order: list[int]
    predecessors: tuple[tuple[int, ...], ...]
    ancestors: list[int]
    descendants: list[int]
    full_mask: int
    output_bytes: list[int]
    kept_output_bytes: list[int]
    freeable_bytes: list[int]
    freeable_consumers: list[tuple[int, ...]]
    op_freeable_inputs: tuple[tuple[int, ...], ...]
    first_step_only_bytes: int

    def resident_bytes(self, executed: int) -> int: ...


# Parent down-sets expanded at once: bounds the temporary arrays (chunk x operators x tensors).
CHUNK = 8192


@dataclass(frozen=True)
class LayeredResult:
    order: tuple[int, ...] | None  # the stage's operators in an order with every step <= cap (or None)
    peak_bytes: int | None  # that order's highest step
    complete: bool  # decision mode: True means `order` is None only because no such order exists
    states: int  # down-sets held, over all layers
    floor_bytes: int  # decision mode, complete and no order: every order of the stage peaks >= this
    layers: int = 0  # layers expanded
    backward: bool = False  # the direction searched


class _Stage:
    """The stage's operators in local numbering, as bit masks over them (no BLAS: matrix products
    on a shared 2-core machine spend more time in thread hand-offs than in arithmetic)."""

    def __init__(self, problem: StepModel, start: int, ops: int) -> None:
        self.ops = ops_list = [v for v in problem.topological_order if ops >> v & 1]
        m = self.m = len(ops_list)
        local = {v: i for i, v in enumerate(ops_list)}
        self.words = words = max(1, (m + 63) // 64)

        def bits_of(indices: list[int]) -> np.ndarray:
            row = np.zeros(words, dtype=np.uint64)
            for i in indices:
                row[i // 64] |= np.uint64(1) << np.uint64(i % 64)
            return row

        self.bit = np.array([bits_of([i]) for i in range(m)], dtype=np.uint64).reshape(m, words)
        pred_rows = []
        for v in ops_list:
            inside = []
            for u in problem.predecessors[v]:
                if u in local:
                    inside.append(local[u])
                elif not start >> u & 1:
                    raise ValueError(f"operator {v}'s predecessor {u} is neither done nor in the stage")
            pred_rows.append(bits_of(inside))
        self.pred = np.array(pred_rows, dtype=np.uint64).reshape(m, words)
        # Each operator's freeable inputs (padded with a dummy tensor, index 0, that never frees):
        # a tensor is freed by v when none of its other readers is pending: readers inside the stage
        # (a mask) not done, or readers after the stage (then it is never freed here).
        tensors = sorted({t for v in ops_list for t in problem.op_freeable_inputs[v]})
        column = {t: j + 1 for j, t in enumerate(tensors)}
        reader_rows = [np.zeros(words, dtype=np.uint64)]
        tensor_bytes = [0]
        for t in tensors:
            readers = problem.freeable_consumers[t]
            if any(not start >> c & 1 and c not in local for c in readers):
                reader_rows.append(np.zeros(words, dtype=np.uint64))
                tensor_bytes.append(0)  # read after the stage: resident throughout
            else:
                reader_rows.append(bits_of([local[c] for c in readers if c in local]))
                tensor_bytes.append(problem.freeable_bytes[t])
        self.readers = np.array(reader_rows, dtype=np.uint64).reshape(len(reader_rows), words)
        self.tensor_bytes = np.array(tensor_bytes, dtype=np.int64)
        # CSR: operator i's distinct freeable inputs are input_list[input_start[i]:input_start[i+1]]
        lists = [[column[t] for t in dict.fromkeys(problem.op_freeable_inputs[v])] for v in ops_list]
        self.input_count = np.array([len(x) for x in lists], dtype=np.int64)
        self.input_start = np.concatenate([[0], np.cumsum(self.input_count)]).astype(np.int64)
        self.input_list = np.array([t for x in lists for t in x] or [0], dtype=np.int64)
        self.out = np.array([problem.output_bytes[v] for v in ops_list], dtype=np.int64)
        self.kept = np.array([problem.kept_output_bytes[v] for v in ops_list], dtype=np.int64)
        # CSR: operator i's successors inside the stage (the C expansion keeps ready sets with them)
        succs = [sorted({local[s] for s in problem.successors[v] if s in local}) for v in ops_list]
        self.succ_start = np.concatenate([[0], np.cumsum([len(x) for x in succs])]).astype(np.int64)
        self.succ_list = np.array([i for x in succs for i in x] or [0], dtype=np.int64)
        self.succ = np.array([bits_of(x) for x in succs], dtype=np.uint64).reshape(m, words)
        self.first_only = problem.first_step_only_bytes if start == 0 else 0
        self.resident = problem.resident_bytes(start)
        self.resident_after = problem.resident_bytes(start | ops)  # where a backward search starts
        self._native: native.Stage | None = None

    def native_stage(self) -> native.Stage | None:
        """The arrays as downsets.c's ts_stage (None when the stage is too wide for it)."""
        if self.words > native.MAX_WORDS:
            return None
        if self._native is None:
            arrays = (
                self.pred,
                self.out,
                self.kept,
                self.input_start,
                self.input_list,
                self.readers,
                self.tensor_bytes,
                self.succ_start,
                self.succ_list,
            )
            assert all(a.flags.c_contiguous for a in arrays)
            self._native = native.Stage(self.m, self.words, *(a.ctypes.data for a in arrays))
        return self._native

    def ready(self, done: np.ndarray, backward: bool = False) -> np.ndarray:
        """(S, words) executed masks -> (S, m) bool: forward, not executed and every predecessor
        executed; backward, executed and no successor executed (it can have run last)."""
        if backward:
            ready = self.executed(done)
            for w in range(self.words):
                ready &= (self.succ[None, :, w] & done[:, w, None]) == 0
            return ready
        ready = ~self.executed(done)
        for w in range(self.words):  # a few words: loop, elementwise per word is cheapest
            ready &= (self.pred[None, :, w] & ~done[:, w, None]) == 0
        return ready

    def executed(self, done: np.ndarray) -> np.ndarray:
        """(S, words) uint64 -> (S, m) bool."""
        as_bytes = np.ascontiguousarray(done).view(np.uint8).reshape(len(done), -1)
        return np.unpackbits(as_bytes, axis=1, bitorder="little")[:, : self.m].astype(bool)

    def freed(self, done: np.ndarray, cols: np.ndarray, backward: bool = False) -> np.ndarray:
        """Bytes that running cols[i] right after done[i] frees (its inputs with no other reader
        pending); backward, done[i] holds cols[i] and it is the step that ran it last."""
        counts = self.input_count[cols]
        pair = np.repeat(np.arange(len(cols)), counts)  # one entry per (pair, input)
        offset = np.arange(len(pair)) - np.repeat(np.cumsum(counts) - counts, counts)
        tensor = self.input_list[self.input_start[cols][pair] + offset]
        others = ~done[pair] if backward else ~done[pair] & ~self.bit[cols[pair]]  # pending but v
        still_read = np.zeros(len(pair), dtype=bool)
        for w in range(self.words):
            still_read |= (self.readers[tensor, w] & others[:, w]) != 0
        return np.bincount(
            pair, weights=np.where(still_read, 0, self.tensor_bytes[tensor]), minlength=len(cols)
        ).astype(np.int64)


def _unique_rows(keys: np.ndarray) -> np.ndarray:
    """Index of the first occurrence of each distinct row of a (C, words) uint64 array (stable: the
    first of equal rows in array order). Rows sort by one 64-bit hash of their words (a 1-D sort
    is several times cheaper than a lexsort over the words), so equal rows are neighbours unless
    two different rows share a hash; then (rarely) the rows are lexsorted instead, and no
    duplicate survives (the C expansion, tinysched.order.native, keeps exactly these rows)."""
    if keys.shape[1] == 1:
        _, first = np.unique(keys[:, 0], return_index=True)
        return first
    mixed = keys[:, 0].copy()
    for w in range(1, keys.shape[1]):
        mixed *= np.uint64(0x9E3779B97F4A7C15)
        mixed ^= keys[:, w]
    by = np.argsort(mixed, kind="stable")
    ordered = keys[by]
    same = (ordered[1:] == ordered[:-1]).all(axis=1)
    hashes = mixed[by]
    if (~same & (hashes[1:] == hashes[:-1])).any():  # a collision: sort by the words
        by = np.lexsort(keys.T[::-1])
        ordered = keys[by]
        same = (ordered[1:] == ordered[:-1]).all(axis=1)
    new = np.ones(len(keys), dtype=bool)
    new[1:] = ~same
    return by[new]


_NO_FLOOR = 2**63 - 1  # downsets.c's INT64_MAX: no step was cut


def _expand_native(
    lib: ctypes.CDLL,
    stage: _Stage,
    done: np.ndarray,
    ready: np.ndarray,
    resident: np.ndarray,
    peak: np.ndarray,
    cap: int,
    dominance: bool,
    backward: bool,
    first_only: int,
    seconds: float,
) -> tuple[np.ndarray, ...] | None:
    """One decision layer in C: (children, their ready operators, resident bytes, peaks, parents,
    operators, the cheapest cut step or None), deduplicated as the numpy loop does; None past
    `seconds` or out of memory."""
    done = np.ascontiguousarray(done, dtype=np.uint64)
    ready = np.ascontiguousarray(ready, dtype=np.uint64)
    resident = np.ascontiguousarray(resident, dtype=np.int64)
    peak = np.ascontiguousarray(peak, dtype=np.int64)
    count, least = ctypes.c_int64(), ctypes.c_int64()
    handle = lib.ts_expand(
        ctypes.byref(stage.native_stage()),
        done.ctypes.data,
        ready.ctypes.data,
        resident.ctypes.data,
        peak.ctypes.data,
        len(done),
        cap,
        int(dominance),
        int(backward),
        first_only,
        seconds,
        ctypes.byref(count),
        ctypes.byref(least),
    )
    if not handle:
        return None
    n = count.value
    children = np.empty((n, stage.words), dtype=np.uint64)
    child_ready = np.empty((n, stage.words), dtype=np.uint64)
    child_resident = np.empty(n, dtype=np.int64)
    child_peak = np.empty(n, dtype=np.int64)
    parent = np.empty(n, dtype=np.int32)
    op = np.empty(n, dtype=np.int16)
    arrays = (children, child_ready, child_resident, child_peak, parent, op)
    lib.ts_layer_take(handle, *(a.ctypes.data for a in arrays))
    return (*arrays, None if least.value == _NO_FLOOR else least.value)


# Beam mode: children kept per layer before deduplication, as a multiple of the width (the best by
# (peak, resident) key; duplicates of one down-set share its resident bytes, so they crowd in).
BEAM_CANDIDATES = 3


# Down-sets each direction may hold before `layered_search(backward=None)` picks one: enough for
# the first layers (a RandWire stage's backward decision takes some 20 layers with this many, its
# forward one 7), a few hundredths of a second in C.
PROBE_STATES = 100_000


def layered_search(
    problem: StepModel,
    start: int,
    ops: int,
    cap: int,
    width: int | None = None,
    max_states: int = 4_000_000,
    deadline: float | None = None,
    dominance: bool = True,
    give_up: bool = False,
    stop: Callable[[], bool] | None = None,
    use_native: bool = True,
    backward: bool | None = False,
) -> LayeredResult:
    """Order the operators `ops` (a bitmask) after the down-set `start` with no step above `cap`.

    Decision mode (`width` None) holds every reachable down-set and is exact: `complete` and no
    order means no order of these operators (after `start`) keeps every step <= cap, and then
    `floor_bytes` (> cap) is the least step any order must pay. Beam mode (`width` W) keeps the W
    best down-sets per layer by (peak so far, resident bytes) and is a heuristic (never complete
    unless it finds nothing it could have cut). Stops early (complete False) past `max_states`
    held down-sets or `deadline` (time.perf_counter()); with `give_up`, also as soon as the first
    half of the layers, while they still widen, or the layer in progress, has taken longer than
    the time left (the widest layers are still to come, so the rest would not finish either: the
    time goes to other bounds instead). `stop`: asked with the deadline; True stops the search as
    the deadline would. Decisions expand their layers in C when tinysched.order.native can build it
    (`use_native`), with the same result as numpy's.

    `backward` (decisions only): True starts from the whole stage and takes off, layer by layer,
    an operator that can have run last (the same answer and floor, found from the other end; the
    module docstring says why it is often far cheaper, and it is dearer where many operators free
    more than they keep, as dead ends do). None tries both directions up to `PROBE_STATES`
    down-sets each and finishes the one that got further (more layers: narrower); the result
    says which direction it is (`LayeredResult.backward`)."""

    def search(direction: bool, states_cap: int, giving_up: bool) -> LayeredResult:
        return _search(
            problem,
            start,
            ops,
            cap,
            width,
            states_cap,
            deadline,
            dominance,
            giving_up,
            stop,
            use_native,
            direction,
        )

    if backward is not False and width is not None:
        raise ValueError("a beam searches forward only")
    if backward is not None:
        return search(backward, max_states, give_up)
    probes: list[LayeredResult] = []
    for direction in (True, False):
        probe = search(direction, min(PROBE_STATES, max_states), False)
        if probe.complete:
            return replace(probe, states=probe.states + sum(earlier.states for earlier in probes))
        probes.append(probe)
    tried = sum(probe.states for probe in probes)
    ahead = max(probes, key=lambda probe: (probe.layers, probe.backward))
    out_of_time = deadline is not None and time.perf_counter() > deadline or stop is not None and stop()
    if max_states <= PROBE_STATES or out_of_time:
        return replace(ahead, states=tried)
    found = search(ahead.backward, max_states, give_up)
    return replace(found, states=found.states + tried)


def _search(
    problem: StepModel,
    start: int,
    ops: int,
    cap: int,
    width: int | None,
    max_states: int,
    deadline: float | None,
    dominance: bool,
    give_up: bool,
    stop: Callable[[], bool] | None,
    use_native: bool,
    backward: bool,
) -> LayeredResult:
    """`layered_search` in one direction."""
    stage = _Stage(problem, start, ops)
    m = stage.m
    if m == 0:
        return LayeredResult((), 0, True, 1, 0, 0, bool(backward))
    done = np.zeros((1, stage.words), dtype=np.uint64)
    if backward:
        done[0] = np.bitwise_or.reduce(stage.bit, axis=0)
    resident = np.array([stage.resident_after if backward else stage.resident], dtype=np.int64)
    peak = np.zeros(1, dtype=np.int64)
    history: list[tuple[np.ndarray, np.ndarray]] = []  # per layer: (parent index, local op)
    states = 1
    cut_floor: int | None = None  # cheapest step cut by the cap
    exact = width is None
    began = time.perf_counter()

    def stopped() -> LayeredResult:
        """Out of time, states or asked to stop: undecided."""
        return LayeredResult(None, None, False, states, 0, len(history), backward)

    def exhausted() -> LayeredResult:
        """No down-set of the layer has a child under the cap: decided, at the cheapest cut step."""
        floor = cut_floor if cut_floor is not None else cap + 1
        return LayeredResult(None, None, exact, states, floor if exact else 0, len(history), backward)

    lib = native.library() if exact and use_native and stage.native_stage() is not None else None
    if lib is not None:
        ready = np.packbits(stage.ready(done, backward), axis=1, bitorder="little")
        ready = np.pad(ready, ((0, 0), (0, 8 * stage.words - ready.shape[1]))).view(np.uint64)
    narrowing = False  # the last layer held fewer down-sets than the one before it
    for layer in range(m):
        if give_up and deadline is not None and 2 * layer < m and not narrowing:
            now = time.perf_counter()
            if now - began > deadline - now:
                return stopped()
        width_before = len(done)
        layer_began = time.perf_counter()
        if lib is not None:
            if stop is not None and stop():
                return stopped()
            # the numpy loop's deadline checks, as a budget: past the deadline, or (giving up)
            # once the layer took longer than the time left
            budget = 1e18 if deadline is None else (deadline - layer_began) / (2 if give_up else 1)
            # forward, the first step's own bytes leave with the first layer; backward, every
            # layer needs them (the empty down-set holds them, and they bound the free moves)
            first_only = stage.first_only if layer == 0 or backward else 0
            expanded = _expand_native(
                lib, stage, done, ready, resident, peak, cap, dominance, backward, first_only, budget
            )
            if expanded is None:
                return stopped()
            done, ready, resident, peak, parents, ops_taken, least = expanded
            if least is not None:
                cut_floor = least if cut_floor is None else min(cut_floor, least)
            if not len(done):
                return exhausted()
            taken = (parents, ops_taken)
        else:
            children_resident = []
            children_peak = []
            children_parent = []
            children_op = []
            for lo in range(0, len(done), CHUNK):
                if stop is not None and stop():
                    return stopped()
                if deadline is not None:
                    now = time.perf_counter()
                    if now > deadline or (give_up and now - layer_began > deadline - now):
                        return stopped()
                block = done[lo : lo + CHUNK]
                rows, cols = np.nonzero(stage.ready(block, backward))
                if backward:  # the step that ran cols last, from the resident bytes before it
                    freed = stage.freed(block[rows], cols, backward=True)
                    change = stage.kept[cols] - freed
                    before = resident[lo + rows] - change
                    if layer == m - 1:
                        before = before + stage.first_only
                    step = before + stage.out[cols]
                else:
                    step = resident[lo + rows] + stage.out[cols]
                over = step > cap
                if over.any():
                    least = int(step[over].min())
                    cut_floor = least if cut_floor is None else min(cut_floor, least)
                rows, cols, step = rows[~over], cols[~over], step[~over]
                if not len(rows):
                    continue
                if backward:
                    change, before = change[~over], before[~over]
                else:
                    freed = stage.freed(block[rows], cols)
                    change = stage.kept[cols] - freed  # (bytes live in the first step only: shared by all)
                if dominance:
                    # a free move must not raise the peak (beam) / the cap (decision: already checked)
                    if backward:
                        free = change >= stage.first_only
                    else:
                        free = (change <= 0) & (step <= peak[lo + rows]) if not exact else change <= 0
                    if free.any():
                        # parents with a free move keep only their first one
                        has_free = np.zeros(len(block), dtype=bool)
                        has_free[rows[free]] = True
                        first_free = np.full(len(block), -1, dtype=np.int64)
                        idx = np.flatnonzero(free)
                        first_free[rows[idx[::-1]]] = idx[::-1]
                        keep = ~has_free[rows] | (np.arange(len(rows)) == first_free[rows])
                        rows, cols, step, change = rows[keep], cols[keep], step[keep], change[keep]
                        if backward:
                            before = before[keep]
                if layer == 0 and not backward:
                    change = change - stage.first_only
                parents = lo + rows
                children_resident.append(before if backward else resident[parents] + change)
                children_peak.append(np.maximum(peak[parents], step))
                children_parent.append(parents)
                children_op.append(cols)
            if not children_parent:
                return exhausted()
            if deadline is not None:
                # deduplicating a layer costs about as much as expanding it: past the deadline, or
                # (giving up, or a beam: a heuristic that can stop anywhere) with less time left than
                # the expansion took, stop before it
                now = time.perf_counter()
                if now > deadline or ((give_up or not exact) and now - layer_began > deadline - now):
                    return stopped()
            new_resident = np.concatenate(children_resident)
            new_peak = np.concatenate(children_peak)
            parent = np.concatenate(children_parent)
            op = np.concatenate(children_op)
            if width is not None:
                # best first (only the best few widths' worth: a partial selection), then one survivor
                # per down-set (its resident bytes are the same in all copies)
                first_key, second_key = new_peak, new_resident
                low = int(second_key.min())
                key = (first_key - int(first_key.min())) * (int(second_key.max()) - low + 1) + (
                    second_key - low
                )
                if len(key) > BEAM_CANDIDATES * width:
                    pick = np.argpartition(key, BEAM_CANDIDATES * width)[: BEAM_CANDIDATES * width]
                    rank = pick[np.argsort(key[pick], kind="stable")]
                else:
                    rank = np.argsort(key, kind="stable")
                new_resident, new_peak, parent, op = (
                    new_resident[rank],
                    new_peak[rank],
                    parent[rank],
                    op[rank],
                )
            new_done = done[parent] & ~stage.bit[op] if backward else done[parent] | stage.bit[op]
            first = np.sort(_unique_rows(new_done))
            if width is not None and len(first) > width:
                first = first[:width]
            done, resident, peak = new_done[first], new_resident[first], new_peak[first]
            taken = (parent[first].astype(np.int32), op[first].astype(np.int16))
        history.append(taken)
        states += len(done)
        narrowing = len(done) < width_before
        if states > max_states:
            return stopped()
    # one down-set left: everything (backward: nothing); walk the parents back
    best = int(np.argmin(peak))
    order = []
    index = best
    for parents, ops_taken in reversed(history):
        order.append(stage.ops[int(ops_taken[index])])
        index = int(parents[index])
    if not backward:  # walked from the last operator run; backward, from the first
        order.reverse()
    return LayeredResult(tuple(order), int(peak[best]), True, states, 0, len(history), backward)


def stage_is_fixed(problem: StepModel, start: int, ops: int) -> bool:
    """True when every order runs `ops` right after `start`: each of them has all of `start` among
    its ancestors and everything else among its descendants (a stage between cut operators), so
    the steps of `ops` in any order are the steps of some order of `ops` after `start`."""
    rest = problem.full_mask & ~(start | ops)
    if start & ops:
        return False
    v = ops
    while v:
        low = v & -v
        v ^= low
        op = low.bit_length() - 1
        if start & ~problem.ancestors[op] or rest & ~problem.descendants[op]:
            return False
    return True
