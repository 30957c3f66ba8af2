/* One layer of tinysched.order.layered's exact decision, in C: every down-set of the layer expanded by
 * each of its ready operators whose step fits under the cap, duplicates dropped.
 *
 * It computes exactly what layered.py's numpy loop computes, in the same order, so either gives
 * the same states, floors and orders:
 *   - parents in their order, each parent's ready operators by increasing local index;
 *   - a step above the cap is not taken, and the cheapest such step is the layer's cut floor;
 *   - with dominance, a parent with a free move keeps only its first one (the cut floor still sees
 *     every ready operator);
 *   - a child equal to an earlier child is dropped; survivors keep the order they were found in.
 *
 * Two directions. Forward, a layer adds one operator to each down-set: the ready operators have
 * every predecessor done, and a free move frees at least what it keeps (running it at once never
 * raises a later step). Backward, a layer takes the last operator off each down-set, starting from
 * the whole stage: the ready operators have no successor done, the step is the one that operator
 * took when it ran last, and a free move keeps at least what it frees (plus, when the stage starts
 * the graph, the bytes live in the first step only): an order that reaches the down-set can run
 * it last instead, since running it later lowers every step it is moved past.
 *
 * Down-sets are `words` 64-bit words (local operator i is bit i % 64 of word i / 64). Each down-set
 * carries its ready operators, updated from its parent's through the neighbours of the operator
 * moved, so a parent's scan touches its ready operators only. Tensors are columns: column 0 is a
 * dummy that never frees; a column with no reader bits is never freed in the stage (read after
 * it). Built by tinysched/order/native.py with the host C compiler. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_WORDS 4

typedef struct {
    int32_t m;                    /* operators in the stage */
    int32_t words;                /* 64-bit words per down-set, 1..MAX_WORDS */
    const uint64_t *pred;         /* m x words: predecessors inside the stage */
    const int64_t *out;           /* m: bytes live in the operator's step */
    const int64_t *kept;          /* m: bytes of its outputs that outlive the step */
    const int64_t *input_start;   /* m + 1: CSR offsets into input_list */
    const int64_t *input_list;    /* the tensor columns each operator may free */
    const uint64_t *readers;      /* columns x words: readers inside the stage */
    const int64_t *tensor_bytes;  /* columns */
    const int64_t *succ_start;    /* m + 1: CSR offsets into succ_list */
    const int64_t *succ_list;     /* successors inside the stage */
} ts_stage;

typedef struct {
    int64_t count, capacity, words;
    uint64_t *done, *ready;
    int64_t *resident, *peak;
    int32_t *parent;
    int16_t *op;
    int64_t *slots; /* open addressing: see add_child */
    int64_t slot_count;
    double deadline; /* now_seconds() past which the expansion stops */
} ts_layer;

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t hash_words(const uint64_t *key, int64_t words) {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int64_t w = 0; w < words; w++) {
        h ^= key[w];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

/* realloc that leaves the block as it was when memory runs out: 1 grown, 0 not. */
static int resize(void **block, size_t bytes) {
    void *grown = realloc(*block, bytes);
    if (!grown) return 0;
    *block = grown;
    return 1;
}
#define RESIZE(array, count) resize((void **)&(array), sizeof(*(array)) * (size_t)(count))

static int grow_children(ts_layer *layer) {
    int64_t capacity = layer->capacity ? 2 * layer->capacity : 1024, words = layer->words;
    if (!RESIZE(layer->done, words * capacity) || !RESIZE(layer->ready, words * capacity) ||
        !RESIZE(layer->resident, capacity) || !RESIZE(layer->peak, capacity) ||
        !RESIZE(layer->parent, capacity) || !RESIZE(layer->op, capacity))
        return 0;
    layer->capacity = capacity;
    return 1;
}

/* Doubles the hash table: 1, 0 when memory ran out, -1 past the deadline (a large table's rehash
 * takes a good part of a second, so it checks the clock as it goes). */
static int grow_slots(ts_layer *layer) {
    int64_t count = layer->slot_count ? 2 * layer->slot_count : 4096;
    if (now_seconds() > layer->deadline) return -1;
    int64_t *slots = calloc((size_t)count, sizeof(int64_t));
    if (!slots) return 0;
    for (int64_t i = 0; i < layer->count; i++) {
        if ((i & 65535) == 65535 && now_seconds() > layer->deadline) {
            free(slots);
            return -1;
        }
        uint64_t full = hash_words(layer->done + i * layer->words, layer->words);
        uint64_t h = full & (uint64_t)(count - 1);
        while (slots[h]) h = (h + 1) & (uint64_t)(count - 1);
        slots[h] = (int64_t)(((full >> 40) << 40) | (uint64_t)(i + 1));
    }
    free(layer->slots);
    layer->slots = slots;
    layer->slot_count = count;
    return 1;
}

/* Adds the child unless an equal down-set is there already: 1, or grow_slots' 0 or -1. A slot holds
 * the child's index + 1 in its low 40 bits and the top 24 bits of its hash above them, so that
 * most probes of other down-sets never touch the children. */
#define INDEX_BITS ((1ull << 40) - 1)
static int add_child(ts_layer *layer, const uint64_t *key, const uint64_t *ready, int64_t resident,
                     int64_t peak, int32_t parent, int16_t op) {
    int64_t words = layer->words;
    if (2 * (layer->count + 1) > layer->slot_count) {
        int grown = grow_slots(layer);
        if (grown != 1) return grown;
    }
    uint64_t mask = (uint64_t)(layer->slot_count - 1);
    uint64_t full = hash_words(key, words), tag = (full >> 40) << 40;
    uint64_t h = full & mask;
    for (uint64_t slot; (slot = (uint64_t)layer->slots[h]) != 0; h = (h + 1) & mask) {
        if ((slot & ~INDEX_BITS) == tag &&
            !memcmp(layer->done + ((slot & INDEX_BITS) - 1) * words, key, sizeof(uint64_t) * words))
            return 1;
    }
    if (layer->count == layer->capacity && !grow_children(layer)) return 0;
    int64_t i = layer->count++;
    memcpy(layer->done + i * words, key, sizeof(uint64_t) * words);
    memcpy(layer->ready + i * words, ready, sizeof(uint64_t) * words);
    layer->resident[i] = resident;
    layer->peak[i] = peak;
    layer->parent[i] = parent;
    layer->op[i] = op;
    layer->slots[h] = (int64_t)(tag | (uint64_t)(i + 1));
    return 1;
}

void ts_layer_free(ts_layer *layer) {
    if (!layer) return;
    free(layer->done);
    free(layer->ready);
    free(layer->resident);
    free(layer->peak);
    free(layer->parent);
    free(layer->op);
    free(layer->slots);
    free(layer);
}

/* Copies the children out (arrays of at least layer->count rows) and frees the layer. */
void ts_layer_take(ts_layer *layer, uint64_t *done, uint64_t *ready, int64_t *resident, int64_t *peak,
                   int32_t *parent, int16_t *op) {
    int64_t n = layer->count;
    memcpy(done, layer->done, sizeof(uint64_t) * layer->words * n);
    memcpy(ready, layer->ready, sizeof(uint64_t) * layer->words * n);
    memcpy(resident, layer->resident, sizeof(int64_t) * n);
    memcpy(peak, layer->peak, sizeof(int64_t) * n);
    memcpy(parent, layer->parent, sizeof(int32_t) * n);
    memcpy(op, layer->op, sizeof(int16_t) * n);
    ts_layer_free(layer);
}

/* Expands `count` parents: their down-sets, ready operators (the same words), resident bytes and
 * peaks so far. Returns the children's layer (their number in *children), or NULL with *children
 * = -1 past `seconds` of work, -2 when memory ran out. *cut_floor: the cheapest step above the cap
 * seen (INT64_MAX when none). `first_only`: bytes live in the first step only; forward, they come
 * off each child's resident bytes (pass them for the first layer only); backward, they are resident
 * in the empty down-set and a free move must keep that much more than it frees (pass them for
 * every layer). */
ts_layer *ts_expand(const ts_stage *s, const uint64_t *done, const uint64_t *ready, const int64_t *resident,
                    const int64_t *peak, int64_t count, int64_t cap, int32_t dominance, int32_t backward,
                    int64_t first_only, double seconds, int64_t *children, int64_t *cut_floor) {
    const int64_t words = s->words;
    const int32_t m = s->m;
    int64_t status = -2; /* why the expansion stopped: -1 the deadline, -2 memory */
    ts_layer *layer = calloc(1, sizeof(ts_layer));
    *cut_floor = INT64_MAX;
    *children = -2;
    if (!layer) return NULL;
    layer->words = words;
    layer->deadline = now_seconds() + seconds;
    int32_t *ready_op = malloc(sizeof(int32_t) * (size_t)m);
    int64_t *ready_step = malloc(sizeof(int64_t) * (size_t)m);
    int64_t *ready_resident = malloc(sizeof(int64_t) * (size_t)m);
    if (!ready_op || !ready_step || !ready_resident) goto out_of_memory;
    for (int64_t k = 0; k < count; k++) {
        if ((k & 4095) == 4095 && now_seconds() > layer->deadline) goto out_of_time;
        const uint64_t *d = done + k * words;
        int64_t r = resident[k];
        int n_ready = 0, first_free = -1;
        const uint64_t *rd = ready + k * words;
        /* backward, a parent of one operator has the empty down-set as its child, which holds the
         * first step's own bytes */
        int last_layer = 0;
        if (backward) {
            int held = 0;
            for (int64_t x = 0; x < words; x++) held += __builtin_popcountll(d[x]);
            last_layer = held == 1;
        }
        for (int32_t w = 0; w < words; w++) {
            for (uint64_t bits = rd[w]; bits; bits &= bits - 1) {
                int32_t i = 64 * w + __builtin_ctzll(bits);
                /* forward, the step is known before the bytes freed: skip those when it is cut or a
                 * free move was found already */
                int64_t step = r + s->out[i];
                if (!backward && (step > cap || (dominance && first_free >= 0))) {
                    if (step > cap && step < *cut_floor) *cut_floor = step;
                    continue;
                }
                /* bytes freed by i: its inputs with no pending reader but i (forward: readers other
                 * than i all done; backward: all done, i among them) */
                int64_t freed = 0;
                for (int64_t q = s->input_start[i]; q < s->input_start[i + 1]; q++) {
                    int64_t t = s->input_list[q];
                    const uint64_t *readers = s->readers + t * words;
                    int still_read = 0;
                    for (int64_t x = 0; x < words; x++) {
                        uint64_t others = ~d[x];
                        if (!backward && x == i / 64) others &= ~(1ull << (i % 64));
                        still_read |= (readers[x] & others) != 0;
                    }
                    if (!still_read) freed += s->tensor_bytes[t];
                }
                int64_t change = s->kept[i] - freed, child_resident = r + change - first_only;
                if (backward) {
                    /* i ran last: before it, the resident bytes were r less what it changed */
                    child_resident = r - change + (last_layer ? first_only : 0);
                    step = child_resident + s->out[i];
                    if (step > cap) {
                        if (step < *cut_floor) *cut_floor = step;
                        continue;
                    }
                    if (dominance && first_free >= 0) continue; /* only its floor mattered */
                }
                if (dominance && (backward ? change >= first_only : change <= 0)) first_free = n_ready;
                ready_op[n_ready] = i;
                ready_step[n_ready] = step;
                ready_resident[n_ready] = child_resident;
                n_ready++;
            }
        }
        int from = first_free >= 0 ? first_free : 0, to = first_free >= 0 ? first_free + 1 : n_ready;
        for (int c = from; c < to; c++) {
            int32_t i = ready_op[c];
            uint64_t key[MAX_WORDS], next[MAX_WORDS];
            memcpy(key, d, sizeof(uint64_t) * words);
            memcpy(next, rd, sizeof(uint64_t) * words);
            next[i / 64] &= ~(1ull << (i % 64));
            if (!backward) { /* the parent's ready operators but i, and i's successors it completes */
                key[i / 64] |= 1ull << (i % 64);
                for (int64_t q = s->succ_start[i]; q < s->succ_start[i + 1]; q++) {
                    int64_t v = s->succ_list[q];
                    const uint64_t *p = s->pred + v * words;
                    int blocked = 0;
                    for (int64_t x = 0; x < words; x++) blocked |= (p[x] & ~key[x]) != 0;
                    if (!blocked) next[v / 64] |= 1ull << (v % 64);
                }
            } else { /* the parent's but i, and i's predecessors with no successor left done */
                key[i / 64] &= ~(1ull << (i % 64));
                for (int64_t x = 0; x < words; x++) {
                    for (uint64_t preds = s->pred[i * words + x]; preds; preds &= preds - 1) {
                        int32_t u = 64 * (int32_t)x + __builtin_ctzll(preds);
                        int blocked = 0;
                        for (int64_t q = s->succ_start[u]; q < s->succ_start[u + 1]; q++)
                            blocked |= (int)(key[s->succ_list[q] / 64] >> (s->succ_list[q] % 64) & 1);
                        if (!blocked) next[u / 64] |= 1ull << (u % 64);
                    }
                }
            }
            int64_t child_peak = peak[k] > ready_step[c] ? peak[k] : ready_step[c];
            int added = add_child(layer, key, next, ready_resident[c], child_peak, (int32_t)k,
                                  (int16_t)i);
            if (added == 0) goto out_of_memory;
            if (added < 0) goto out_of_time;
        }
    }
    free(ready_op);
    free(ready_step);
    free(ready_resident);
    *children = layer->count;
    return layer;
out_of_time:
    status = -1;
out_of_memory:
    free(ready_op);
    free(ready_step);
    free(ready_resident);
    ts_layer_free(layer);
    *children = status;
    return NULL;
}
