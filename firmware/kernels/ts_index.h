/*
 * ts_index.h - walking an N-d index in row-major order while tracking strided offsets into up to
 * two source tensors (private to firmware/kernels). Used by the broadcasting, MEAN, PAD and
 * TRANSPOSE kernels, whose shapes arrive padded on the left to TS_MAX_DIMS dimensions; and the window
 * taps a convolution reads (CONV_2D, DEPTHWISE_CONV_2D, their Helium paths).
 */
#ifndef TS_INDEX_H
#define TS_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "ts_kernels.h"

typedef struct {
    int32_t index[TS_MAX_DIMS];
    int32_t off_a; /* offset into source a: sum index[d] * strides_a[d] */
    int32_t off_b; /* likewise for source b */
} ts_walk;

static inline size_t ts_dims_count(const int32_t *dims)
{
    size_t n = 1;
    int d;
    for (d = 0; d < TS_MAX_DIMS; ++d) {
        n *= (size_t)(dims[d] > 0 ? dims[d] : 0);
    }
    return n;
}

static inline void ts_walk_start(ts_walk *w)
{
    int d;
    for (d = 0; d < TS_MAX_DIMS; ++d) {
        w->index[d] = 0;
    }
    w->off_a = 0;
    w->off_b = 0;
}

/* Advance to the next index (the last dimension fastest); strides_b may be NULL. */
static inline void ts_walk_next(ts_walk *w, const int32_t *dims, const int32_t *strides_a,
                                const int32_t *strides_b)
{
    int d;
    for (d = TS_MAX_DIMS - 1; d >= 0; --d) {
        if (++w->index[d] < dims[d]) {
            w->off_a += strides_a[d];
            if (strides_b != NULL) {
                w->off_b += strides_b[d];
            }
            return;
        }
        w->off_a -= strides_a[d] * (dims[d] - 1);
        if (strides_b != NULL) {
            w->off_b -= strides_b[d] * (dims[d] - 1);
        }
        w->index[d] = 0;
    }
}

/* The taps [k0, k1) of a window starting at `start` (stride `dilation`) that land in [0, size): the
 * window rows or columns a convolution reads without padding. */
static inline void ts_tap_range(int32_t start, int32_t dilation, int32_t taps, int32_t size, int32_t *k0,
                                int32_t *k1)
{
    int32_t lo = 0, hi = taps;
    while (lo < taps && start + lo * dilation < 0) {
        ++lo;
    }
    while (hi > lo && start + (hi - 1) * dilation >= size) {
        --hi;
    }
    *k0 = lo;
    *k1 = hi;
}

#endif /* TS_INDEX_H */
