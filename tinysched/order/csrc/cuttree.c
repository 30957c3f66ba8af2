/* tinysched.order.bounds.precedence_tree_bound's tree, in C: branch and bound over the relative orders
 * of operator pairs, each leaf bounded by minimum cuts (bounds.py says why every leaf's least cut
 * is paid by every order obeying its precedences).
 *
 * The same tree as the Python loop, step for step, with its own random tie-breaks and its own
 * max-flow on the stage's small network (its source sides are OR-Tools': the least minimum cut
 * is the same for every maximum flow), so the trees differ where the tie-breaks do; the bound is
 * valid either way, and bounds.recheck re-derives every leaf with OR-Tools. Values stop at the
 * target (a leaf that high is closed). One leaf at a time:
 *   - the leaf of least value (its largest cut) is split on the incomparable (hot, member) pair
 *     whose two orders raise the cheaper branch most, screened among `candidate_pairs` pairs
 *     (hottest pair first, then the member's cut, then chance) with the conditioned cuts of
 *     pair_cut, reusing a cut whose down-set already obeys the condition;
 *   - each child inherits its parent's cuts (a child has fewer down-sets), forgets the down-sets
 *     its new precedence breaks, and solves again the `resolved_ops` largest cuts and the pair's;
 *   - it stops at `target`, `max_nodes`, a least leaf `max_depth` precedences deep, or when
 *     `stop()` says so (checked once a leaf).
 * Operators are the stage's, numbered 0..m-1 by the caller; network node 2 + i is operator i,
 * 0 the source (executed side), 1 the sink. Built by tinysched/order/native.py. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int (*ts_stop_fn)(void);

typedef struct {
    int32_t nodes, arcs;               /* the stage's cut network (bounds.CutNetwork) */
    const int32_t *tail, *head;
    const int64_t *cap;
    int32_t m, words;                  /* operators, 64-bit words per down-set */
    const int32_t *force_in_arc;       /* m: source -> operator, capacity 0 unless forced in */
    const int32_t *force_out_arc;      /* m: operator -> sink, its graph outputs unless forced out */
    const int32_t *pred_start;         /* m + 1: CSR of the predecessors inside the stage */
    const int32_t *pred_list;
    const int64_t *step_extra;         /* m: an operator's step = its cut + this */
    const int64_t *heat;               /* m: the operator's step in the order the tree follows */
    const int32_t *by_heat;            /* m: operators hottest first */
    int32_t hot_count;                 /* the first hot_count of by_heat are split on */
    int64_t infinite;                  /* a cut this large means no down-set */
    int64_t target, value_cap;
    int32_t max_nodes, max_depth, candidate_pairs, resolved_ops;
    uint64_t seed;
    ts_stop_fn stop;
} ts_tree;

typedef struct {
    int32_t nodes, leaves;
    int64_t cuts, bound;
    int32_t *split;    /* max_nodes x 2: the pair split on (-1 -1: a leaf) */
    int32_t *child;    /* max_nodes x 2 */
    int32_t *leaf_op;  /* max_nodes: the leaf's operator whose cut proves its value */
    int64_t *leaf_cut; /* max_nodes */
} ts_tree_out;

/* ---- max-flow (shortest augmenting paths) ---------------------------------------------------- */

/* Every query for operator w forces in at least w's predecessors and out at least w, and a leaf's
 * network only adds arcs to the root's: capacities only rise from the root's query for w, and a
 * flow stays feasible when capacities rise. So each query starts from the root's maximum flow for
 * w (residuals per operator, kept from the root) and augments only what the leaf's precedences
 * and the query's conditions add.
 *
 * Edges are stored by tail node (CSR: node u's are start[u]..start[u+1]-1), each arc as a forward
 * and a reverse edge; pos[2k] and pos[2k+1] say where the network's arc k went, so that flows
 * kept in arc order fit every leaf's network. */
typedef struct {
    int32_t n, edges;
    int32_t *start, *to, *rev, *pos, *level, *it, *queue, *mark, *count;
    int64_t *base, *res; /* capacities, residuals */
    int32_t stamp;       /* mark[e] == stamp: a forcing edge raised in the current query */
} flownet;

static void net_free(flownet *g) {
    free(g->start); free(g->to); free(g->rev); free(g->pos); free(g->level); free(g->it); free(g->queue);
    free(g->mark); free(g->base); free(g->res); free(g->count);
}

/* The stage's network plus an infinite arc b -> a for each precedence (a before b): a down-set
 * holding b holds a. Returns 0 when out of memory. */
static int net_build(flownet *g, const ts_tree *t, const int32_t *before, int32_t depth) {
    int32_t arcs = t->arcs + depth;
    memset(g, 0, sizeof(*g));
    g->n = t->nodes;
    g->edges = 2 * arcs;
    g->start = calloc((size_t)g->n + 1, sizeof(int32_t));
    g->level = malloc(sizeof(int32_t) * (size_t)g->n);
    g->it = malloc(sizeof(int32_t) * (size_t)g->n);
    g->queue = malloc(sizeof(int32_t) * (size_t)g->n);
    g->count = malloc(sizeof(int32_t) * ((size_t)g->n + 2));
    g->to = malloc(sizeof(int32_t) * (size_t)g->edges);
    g->rev = malloc(sizeof(int32_t) * (size_t)g->edges);
    g->pos = malloc(sizeof(int32_t) * (size_t)g->edges);
    g->mark = calloc((size_t)g->edges, sizeof(int32_t));
    g->base = malloc(sizeof(int64_t) * (size_t)g->edges);
    g->res = malloc(sizeof(int64_t) * (size_t)g->edges);
    if (!g->start || !g->level || !g->it || !g->queue || !g->count || !g->to || !g->rev || !g->pos || !g->mark ||
        !g->base || !g->res) {
        net_free(g);
        return 0;
    }
#define ARC_ENDS(k, u, v, c)                                                                   \
    if ((k) < t->arcs) {                                                                       \
        u = t->tail[k]; v = t->head[k]; c = t->cap[k];                                         \
    } else {                                                                                   \
        u = 2 + before[2 * ((k) - t->arcs) + 1]; v = 2 + before[2 * ((k) - t->arcs)]; c = t->infinite; \
    }
    for (int32_t k = 0; k < arcs; k++) {
        int32_t u, v;
        int64_t c;
        ARC_ENDS(k, u, v, c)
        (void)c;
        g->start[u + 1]++;
        g->start[v + 1]++;
    }
    for (int32_t u = 0; u < g->n; u++) g->start[u + 1] += g->start[u];
    memcpy(g->it, g->start, sizeof(int32_t) * (size_t)g->n); /* next free slot per node */
    for (int32_t k = 0; k < arcs; k++) {
        int32_t u, v;
        int64_t c;
        ARC_ENDS(k, u, v, c)
        int32_t f = g->it[u]++, r = g->it[v]++;
        g->to[f] = v; g->rev[f] = r; g->base[f] = c;
        g->to[r] = u; g->rev[r] = f; g->base[r] = 0;
        g->pos[2 * k] = f;
        g->pos[2 * k + 1] = r;
    }
#undef ARC_ENDS
    return 1;
}

/* What the source reaches in the residual network (level >= 0): once no path reaches the sink,
 * the source side of a minimum cut. */
static void reach_from_source(flownet *g) {
    int32_t head = 0, tail = 0;
    for (int32_t v = 0; v < g->n; v++) g->level[v] = -1;
    g->level[0] = 0;
    g->queue[tail++] = 0;
    while (head < tail) {
        int32_t u = g->queue[head++];
        for (int32_t e = g->start[u]; e < g->start[u + 1]; e++)
            if (g->res[e] > 0 && g->level[g->to[e]] < 0) {
                g->level[g->to[e]] = 0;
                g->queue[tail++] = g->to[e];
            }
    }
}

/* Shortest augmenting paths with distance labels and the gap rule (ISAP), from the residuals in
 * g->res whose flow is `total`: one breadth-first search for the labels, then each path is
 * followed from the source along edges one label down, relabelling where none leads on. Stops at
 * `limit` (a cut that large is all the caller needs to know). */
static int64_t augment_all(flownet *g, int64_t total, int64_t limit) {
    int32_t n = g->n, *dist = g->level, *cur = g->it, *path = g->queue, *count = g->count;
    int32_t head = 0, tail = 0;
    /* labels: residual distance to the sink, from a backward search (n: cannot reach it) */
    for (int32_t v = 0; v < n; v++) dist[v] = n;
    dist[1] = 0;
    cur[tail++] = 1; /* cur doubles as the search's queue here */
    while (head < tail) {
        int32_t x = cur[head++];
        for (int32_t e = g->start[x]; e < g->start[x + 1]; e++) {
            int32_t y = g->to[e];
            if (dist[y] == n && g->res[g->rev[e]] > 0) {
                dist[y] = dist[x] + 1;
                cur[tail++] = y;
            }
        }
    }
    memset(count, 0, sizeof(int32_t) * ((size_t)n + 2));
    for (int32_t v = 0; v < n; v++) count[dist[v]]++;
    memcpy(cur, g->start, sizeof(int32_t) * (size_t)n);
    int32_t u = 0, top = 0;
    while (dist[0] < n && total < limit) {
        if (u == 1) { /* a path: push its bottleneck, go back to the bottleneck's tail */
            int64_t f = limit - total;
            int32_t back = 0;
            for (int32_t k = 0; k < top; k++)
                if (g->res[path[k]] < f) { f = g->res[path[k]]; back = k; }
            for (int32_t k = 0; k < top; k++) {
                g->res[path[k]] -= f;
                g->res[g->rev[path[k]]] += f;
            }
            total += f;
            top = back;
            u = top ? g->to[path[top - 1]] : 0;
            continue;
        }
        int32_t e = cur[u];
        while (e < g->start[u + 1] && !(g->res[e] > 0 && dist[u] == dist[g->to[e]] + 1)) e++;
        cur[u] = e;
        if (e < g->start[u + 1]) {
            path[top++] = e;
            u = g->to[e];
            continue;
        }
        int32_t label = n; /* relabel: one above the lowest neighbour still reachable */
        for (int32_t k = g->start[u]; k < g->start[u + 1]; k++)
            if (g->res[k] > 0 && dist[g->to[k]] + 1 < label) label = dist[g->to[k]] + 1;
        if (--count[dist[u]] == 0) break; /* a gap: nothing above it reaches the sink any more */
        dist[u] = label;
        count[label]++;
        cur[u] = g->start[u];
        if (top) u = g->to[g->rev[path[--top]]];
    }
    return total;
}

static void raise_arc(flownet *g, const ts_tree *t, int32_t arc) {
    int32_t e = g->pos[2 * arc];
    if (g->mark[e] == g->stamp) return; /* already infinite in this query */
    g->mark[e] = g->stamp;
    g->res[e] += t->infinite - g->base[e];
}

/* A query's warm start: residuals in arc order (2 per arc of the stage's network) and their
 * flow, or none (res NULL: from zero). */
typedef struct {
    const int64_t *res;
    int64_t flow;
} warm_start;

/* Least resident bytes over the down-sets holding `in` and none of `out` (the cut, less the
 * network's constant) and its down-set (the source side) in `downset`, or `limit` when the cut is
 * at least that (no down-set: the cut is infinite), with `downset` untouched. `in` holds w's
 * predecessors and `out` w (the root's query for w, which `warm` solved). */
static int64_t min_cut(flownet *g, const ts_tree *t, int32_t w, warm_start warm, const int32_t *in, int32_t n_in,
                       const int32_t *out, int32_t n_out, int64_t limit, uint64_t *downset, int64_t *cuts) {
    int64_t total = 0;
    g->stamp++;
    if (warm.res) { /* the stage's arcs from the warm flow, the leaf's precedences empty */
        for (int32_t e = 0; e < 2 * t->arcs; e++) g->res[g->pos[e]] = warm.res[e];
        for (int32_t e = 2 * t->arcs; e < g->edges; e++) g->res[g->pos[e]] = g->base[g->pos[e]];
        total = warm.flow;
        for (int32_t k = t->pred_start[w]; k < t->pred_start[w + 1]; k++)
            g->mark[g->pos[2 * t->force_in_arc[t->pred_list[k]]]] = g->stamp; /* raised in the root's query */
        g->mark[g->pos[2 * t->force_out_arc[w]]] = g->stamp;
    } else {
        memcpy(g->res, g->base, sizeof(int64_t) * (size_t)g->edges);
    }
    for (int32_t k = 0; k < n_in; k++) raise_arc(g, t, t->force_in_arc[in[k]]);
    for (int32_t k = 0; k < n_out; k++) raise_arc(g, t, t->force_out_arc[out[k]]);
    (*cuts)++;
    total = augment_all(g, total, limit);
    if (total >= limit) return limit;
    if (downset) {
        reach_from_source(g);
        memset(downset, 0, sizeof(uint64_t) * (size_t)t->words);
        for (int32_t i = 0; i < t->m; i++)
            if (g->level[2 + i] >= 0) downset[i / 64] |= 1ull << (i % 64);
    }
    return total;
}

/* The residuals of the last query, in arc order (a warm start for later ones). */
static void keep_flow(const flownet *g, const ts_tree *t, int64_t *res) {
    for (int32_t e = 0; e < 2 * t->arcs; e++) res[e] = g->res[g->pos[e]];
}

/* ---- leaves ---------------------------------------------------------------------------------- */

typedef struct {
    int32_t depth, node;
    int32_t *before;    /* depth x 2: (first, second) precedences */
    int64_t *value;     /* m: a lower bound on the operator's step (its cut when known) */
    uint64_t *downset;  /* m x words */
    uint8_t *known;     /* m: downset reaches value */
    int64_t top, counter;
} leaf;

static void leaf_free(leaf *l) {
    if (!l) return;
    free(l->before); free(l->value); free(l->downset); free(l->known); free(l);
}

static leaf *leaf_new(const ts_tree *t, int32_t depth) {
    leaf *l = calloc(1, sizeof(leaf));
    if (!l) return NULL;
    l->depth = depth;
    l->before = malloc(sizeof(int32_t) * (size_t)(2 * depth + 2));
    l->value = malloc(sizeof(int64_t) * (size_t)t->m);
    l->downset = malloc(sizeof(uint64_t) * (size_t)(t->m * t->words));
    l->known = malloc((size_t)t->m);
    if (!l->before || !l->value || !l->downset || !l->known) {
        leaf_free(l);
        return NULL;
    }
    return l;
}

static int has(const uint64_t *set, int32_t i) { return (int)(set[i / 64] >> (i % 64) & 1); }

/* What every query needs besides the network: the tree's inputs, the root's flows (each later
 * query's warm start, once roots_ready; the root's own queries fill them) and the cuts solved. */
typedef struct {
    const ts_tree *t;
    int64_t *root_res;   /* m x (2 arcs): residuals of the root's flow for each operator */
    int64_t *root_flow;  /* m */
    int roots_ready;
    int64_t cuts;
} context;

/* The step of w with `done` executed and `pending` not, under the leaf's precedences, or the
 * target when it is at least that (then `downset`, if asked for, is not known: returns 0 in
 * `*exact`). Steps at the target close a leaf whatever their value, so no flow goes further. */
static int64_t conditioned(flownet *g, context *c, const leaf *l, int32_t w, const int32_t *done, int32_t n_done,
                           const int32_t *pending, int32_t n_pending, uint64_t *downset, uint8_t *exact) {
    const ts_tree *t = c->t;
    int32_t in[t->m + l->depth + 2], out[4], n_in = 0, n_out = 0;
    int64_t limit = t->target - t->step_extra[w];
    warm_start warm = {NULL, 0};
    if (c->roots_ready) {
        warm.res = c->root_res + (size_t)w * 2 * t->arcs;
        warm.flow = c->root_flow[w];
    }
    for (int32_t k = t->pred_start[w]; k < t->pred_start[w + 1]; k++) in[n_in++] = t->pred_list[k];
    for (int32_t k = 0; k < l->depth; k++)
        if (l->before[2 * k + 1] == w) in[n_in++] = l->before[2 * k];
    for (int32_t k = 0; k < n_done; k++) in[n_in++] = done[k];
    out[n_out++] = w;
    for (int32_t k = 0; k < n_pending; k++) out[n_out++] = pending[k];
    int64_t cut = limit;
    if (limit > warm.flow) cut = min_cut(g, t, w, warm, in, n_in, out, n_out, limit, downset, &c->cuts);
    if (!c->roots_ready) { /* the root: keep the flow (a maximum one, or one reaching the limit) */
        if (limit > 0) keep_flow(g, t, c->root_res + (size_t)w * 2 * t->arcs);
        c->root_flow[w] = cut; /* at the limit: so is every later query for w */
    }
    if (exact) *exact = cut < limit;
    return cut < limit ? cut + t->step_extra[w] : t->target;
}

static void solve_into(flownet *g, context *c, leaf *l, int32_t w) {
    l->value[w] = conditioned(g, c, l, w, NULL, 0, NULL, 0, l->downset + (size_t)w * c->t->words, &l->known[w]);
}

/* bounds.py's branch_cut: w's step with `done` executed and `pending` not, the leaf's own cut
 * when its down-set already agrees. */
static int64_t branch_cut(flownet *g, context *c, const leaf *l, int32_t w, int32_t done, int32_t pending) {
    const uint64_t *d = l->downset + (size_t)w * c->t->words;
    if (l->known[w] && (done < 0 || has(d, done)) && (pending < 0 || !has(d, pending))) return l->value[w];
    return conditioned(g, c, l, w, &done, done >= 0, &pending, pending >= 0, NULL, NULL);
}

static int64_t leaf_top(const ts_tree *t, const leaf *l) {
    int64_t top = 0;
    for (int32_t i = 0; i < t->m; i++)
        if (l->value[i] > top) top = l->value[i];
    return top;
}

/* Ancestors of each operator under the DAG and the leaf's precedences; 0 if they form a cycle.
 * succ_start/succ_list: the stage's successors (the predecessors' CSR turned round). */
static int closure(const ts_tree *t, const leaf *l, const int32_t *succ_start, const int32_t *succ_list,
                   uint64_t *anc, int32_t *indegree, int32_t *queue) {
    int32_t m = t->m, head = 0, tail = 0;
    memset(anc, 0, sizeof(uint64_t) * (size_t)(m * t->words));
    for (int32_t i = 0; i < m; i++) indegree[i] = t->pred_start[i + 1] - t->pred_start[i];
    for (int32_t k = 0; k < l->depth; k++) indegree[l->before[2 * k + 1]]++;
    for (int32_t i = 0; i < m; i++)
        if (!indegree[i]) queue[tail++] = i;
    while (head < tail) { /* v is final: hand its ancestors and itself to what follows it */
        int32_t v = queue[head++];
        const uint64_t *av = anc + (size_t)v * t->words;
        for (int32_t k = succ_start[v]; k <= succ_start[v + 1] + l->depth - 1; k++) {
            int32_t s;
            if (k < succ_start[v + 1]) {
                s = succ_list[k];
            } else {
                int32_t p = k - succ_start[v + 1];
                if (l->before[2 * p] != v) continue;
                s = l->before[2 * p + 1];
            }
            uint64_t *as = anc + (size_t)s * t->words;
            for (int32_t w = 0; w < t->words; w++) as[w] |= av[w];
            as[v / 64] |= 1ull << (v % 64);
            if (--indegree[s] == 0) queue[tail++] = s;
        }
    }
    return tail == m;
}

typedef struct {
    int64_t heat, cut;
    double chance;
    int32_t a, b;
} candidate;

/* The candidates' order: the hotter pair first, then the member's larger cut, then chance. */
static int ranks_before(const candidate *p, const candidate *q) {
    if (p->heat != q->heat) return p->heat > q->heat;
    if (p->cut != q->cut) return p->cut > q->cut;
    return p->chance > q->chance;
}

/* Keeps the best `keep` candidates in best[0..*count) in rank order (insertion: most candidates
 * lose to the last kept one at the first comparison). */
static void offer(candidate *best, int32_t *count, int32_t keep, const candidate *c) {
    int32_t i = *count;
    if (i == keep) {
        if (!ranks_before(c, &best[keep - 1])) return;
        i = keep - 1;
    } else {
        (*count)++;
    }
    while (i > 0 && ranks_before(c, &best[i - 1])) {
        best[i] = best[i - 1];
        i--;
    }
    best[i] = *c;
}

static double next_chance(uint64_t *state) { /* xorshift64*: a uniform double in [0, 1) */
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return (double)((*state * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

/* ---- the heap of leaves, least (top, counter) first ------------------------------------------ */

static int leaf_less(const leaf *a, const leaf *b) {
    return a->top < b->top || (a->top == b->top && a->counter < b->counter);
}

static void heap_push(leaf **heap, int32_t *size, leaf *l) {
    int32_t i = (*size)++;
    heap[i] = l;
    while (i > 0 && leaf_less(heap[i], heap[(i - 1) / 2])) {
        leaf *tmp = heap[i]; heap[i] = heap[(i - 1) / 2]; heap[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
}

static leaf *heap_pop(leaf **heap, int32_t *size) {
    leaf *top = heap[0];
    heap[0] = heap[--(*size)];
    for (int32_t i = 0;;) {
        int32_t l = 2 * i + 1, r = l + 1, s = i;
        if (l < *size && leaf_less(heap[l], heap[s])) s = l;
        if (r < *size && leaf_less(heap[r], heap[s])) s = r;
        if (s == i) break;
        leaf *tmp = heap[i]; heap[i] = heap[s]; heap[s] = tmp;
        i = s;
    }
    return top;
}

/* ---- the tree -------------------------------------------------------------------------------- */

/* Grows the tree into `o` (arrays of max_nodes); returns 0 when out of memory (then `o` means nothing). */
int ts_tree_grow(const ts_tree *t, ts_tree_out *o) {
    int32_t m = t->m, size = 0, ok = 1;
    int64_t counter = 0;
    uint64_t rng = t->seed ? t->seed : 0x9E3779B97F4A7C15ull;
    leaf **heap = malloc(sizeof(leaf *) * (size_t)(t->max_nodes + 1));
    uint64_t *anc = malloc(sizeof(uint64_t) * (size_t)(m * t->words));
    int32_t *indegree = malloc(sizeof(int32_t) * (size_t)m), *queue = malloc(sizeof(int32_t) * (size_t)m);
    int32_t *resolve = malloc(sizeof(int32_t) * ((size_t)m + 2)); /* the largest cuts and the pair */
    candidate *cands = malloc(sizeof(candidate) * (size_t)(t->candidate_pairs + 1));
    int32_t *succ_start = calloc((size_t)m + 1, sizeof(int32_t)), *succ_list = malloc(sizeof(int32_t) * (size_t)(t->pred_start[m] + 1));
    leaf *root = leaf_new(t, 0);
    context c = {t, malloc(sizeof(int64_t) * (size_t)m * 2 * (size_t)t->arcs), malloc(sizeof(int64_t) * (size_t)m),
                 0, 0};
    flownet g;
    o->nodes = 1;
    o->split[0] = o->split[1] = -1;
    if (!heap || !anc || !indegree || !queue || !resolve || !cands || !succ_start || !succ_list || !root || !c.root_res || !c.root_flow ||
        !net_build(&g, t, NULL, 0)) {
        free(heap); free(anc); free(indegree); free(queue); free(resolve); free(cands); leaf_free(root);
        free(succ_start); free(succ_list);
        free(c.root_res); free(c.root_flow);
        return 0;
    }
    for (int32_t k = 0; k < t->pred_start[m]; k++) succ_start[t->pred_list[k] + 1]++;
    for (int32_t i = 0; i < m; i++) succ_start[i + 1] += succ_start[i];
    memcpy(indegree, succ_start, sizeof(int32_t) * (size_t)m); /* next free slot per operator */
    for (int32_t i = 0; i < m; i++)
        for (int32_t k = t->pred_start[i]; k < t->pred_start[i + 1]; k++) succ_list[indegree[t->pred_list[k]]++] = i;
    for (int32_t k = 0; k < m; k++) solve_into(&g, &c, root, t->by_heat[k]);
    c.roots_ready = 1;
    net_free(&g);
    root->node = 0;
    root->top = leaf_top(t, root);
    root->counter = counter++;
    heap_push(heap, &size, root);

    while (size && heap[0]->top < t->target && o->nodes + 2 <= t->max_nodes && !t->stop()) {
        leaf *l = heap_pop(heap, &size);
        /* too deep to split, or (cannot happen: such leaves are infinite) precedences in a cycle:
         * the least leaf stays a leaf, and the bound stops here */
        if (l->depth >= t->max_depth || !closure(t, l, succ_start, succ_list, anc, indegree, queue)) {
            l->counter = -1;
            heap_push(heap, &size, l);
            break;
        }
        if (!net_build(&g, t, l->before, l->depth)) { ok = 0; leaf_free(l); break; }
        /* candidate pairs: incomparable (hot, member), hottest pair, then cut, then chance */
        int32_t n_cands = 0;
        for (int32_t h = 0; h < t->hot_count; h++) {
            int32_t x = t->by_heat[h];
            for (int32_t j = 0; j < m; j++) {
                if (j == x || has(anc + (size_t)x * t->words, j) || has(anc + (size_t)j * t->words, x)) continue;
                candidate c = {t->heat[x] > t->heat[j] ? t->heat[x] : t->heat[j], l->value[j], next_chance(&rng), x, j};
                offer(cands, &n_cands, t->candidate_pairs, &c);
            }
        }
        int32_t chosen_a = -1, chosen_b = -1;
        int64_t beat = -1;
        for (int32_t k = 0; k < n_cands; k++) {
            int32_t a = cands[k].a, b = cands[k].b, both = 1;
            int64_t low = INT64_MAX;
            for (int32_t side = 0; side < 2; side++) {
                int32_t first = side ? b : a, second = side ? a : b;
                int64_t cost = branch_cut(&g, &c, l, second, first, -1);
                if (cost <= beat) {
                    int64_t other = branch_cut(&g, &c, l, first, -1, second);
                    if (other > cost) cost = other;
                }
                if (cost < low) low = cost;
                if (cost <= beat) { both = 0; break; }
            }
            if (both && low > beat) { beat = low; chosen_a = a; chosen_b = b; }
        }
        net_free(&g);
        if (chosen_a < 0) { /* the leaf's precedences leave one order: keep its value */
            l->counter = -1;
            heap_push(heap, &size, l);
            break;
        }
        /* the parent's largest cuts, solved again in each child with the pair's two operators */
        int32_t n_resolve = 0;
        for (int32_t k = 0; k < m; k++) resolve[n_resolve++] = t->by_heat[k];
        for (int32_t i = 1; i < n_resolve; i++) { /* stable insertion sort by value, largest first */
            int32_t v = resolve[i], j = i;
            while (j > 0 && l->value[resolve[j - 1]] < l->value[v]) { resolve[j] = resolve[j - 1]; j--; }
            resolve[j] = v;
        }
        if (n_resolve > t->resolved_ops) n_resolve = t->resolved_ops;
        resolve[n_resolve++] = chosen_a;
        resolve[n_resolve++] = chosen_b;
        int32_t node = l->node;
        o->split[2 * node] = chosen_a;
        o->split[2 * node + 1] = chosen_b;
        for (int32_t side = 0; side < 2; side++) {
            int32_t first = side ? chosen_b : chosen_a, second = side ? chosen_a : chosen_b;
            leaf *child = leaf_new(t, l->depth + 1);
            if (!child) { ok = 0; break; }
            memcpy(child->before, l->before, sizeof(int32_t) * (size_t)(2 * l->depth));
            child->before[2 * l->depth] = first;
            child->before[2 * l->depth + 1] = second;
            memcpy(child->value, l->value, sizeof(int64_t) * (size_t)m);
            memcpy(child->downset, l->downset, sizeof(uint64_t) * (size_t)(m * t->words));
            memcpy(child->known, l->known, (size_t)m);
            for (int32_t w = 0; w < m; w++) { /* a down-set holding `second` without `first` is gone */
                const uint64_t *d = child->downset + (size_t)w * t->words;
                if (child->known[w] && !has(d, first) && (has(d, second) || w == second)) child->known[w] = 0;
            }
            if (!net_build(&g, t, child->before, child->depth)) { leaf_free(child); ok = 0; break; }
            for (int32_t k = 0; k < n_resolve; k++) {
                if (k && t->stop()) break;
                if (!child->known[resolve[k]]) solve_into(&g, &c, child, resolve[k]);
            }
            net_free(&g);
            child->node = o->nodes + side;
            o->split[2 * child->node] = o->split[2 * child->node + 1] = -1;
            o->child[2 * node + side] = child->node;
            child->top = leaf_top(t, child);
            child->counter = counter++;
            heap_push(heap, &size, child);
        }
        leaf_free(l);
        if (!ok) break;
        o->nodes += 2;
    }
    /* the least leaf value, every leaf with the operator that proves its value (out of memory: no
     * tree, the caller grows it in Python) */
    o->bound = t->value_cap;
    o->leaves = size;
    for (int32_t k = 0; k < size; k++) {
        leaf *l = heap[k];
        int32_t best = 0;
        for (int32_t i = 1; i < m; i++)
            if (l->value[i] > l->value[best]) best = i;
        int64_t value = l->value[best] < t->value_cap ? l->value[best] : t->value_cap;
        o->leaf_op[l->node] = best;
        o->leaf_cut[l->node] = value;
        if (l->top < o->bound) o->bound = l->top;
        leaf_free(l);
    }
    if (o->bound > t->value_cap) o->bound = t->value_cap;
    o->cuts = c.cuts;
    free(heap); free(anc); free(indegree); free(queue); free(resolve); free(cands); free(succ_start); free(succ_list);
    free(c.root_res); free(c.root_flow);
    return ok;
}
