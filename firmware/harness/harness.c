/*
 * harness.c - the device side of `tinysched measure`.
 *
 * Linked with one generated model module (its `const ts_model_info` is named by -DTS_MODEL_INFO)
 * and one target (targets/). On boot it sends a hello frame; then for each run request it
 *   1. paints the arena with pattern A and the free stack with a word pattern, runs the model, and
 *      notes which arena bytes differ from the paint and how deep the stack went;
 *   2. does the same with pattern B = NOT A, so a byte the model happens to write with the paint's
 *      own value still shows up in one of the two runs;
 *   3. runs once more between counter start and stop, with nothing painted, for the timing;
 * and answers with the outputs of run 1, whether all three runs agreed, the counter ticks, the
 * arena high-water (highest touched offset + 1), the number of bytes touched and the stack depth.
 * A split arena (model->regions, tinysched.pools) is watched region by region: the arena figures are
 * over the regions laid end to end, as the plan's offsets are, and each region's high-water and
 * touched bytes follow in the result.
 *
 * Everything the harness needs beyond its few globals (receive buffer, output copies, the
 * touched-byte bitmap, a snapshot of the model's state) comes from the free RAM between .bss and
 * the stack, so the image's static RAM is the model's and the target's alone.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ts_model.h"
#include "ts_protocol.h"
#include "ts_target.h"

#ifndef TS_MODEL_INFO
#error "define TS_MODEL_INFO to the name of the model's ts_model_info (e.g. -DTS_MODEL_INFO=mymodel_info)"
#endif
#ifndef TS_BOARD_NAME
#define TS_BOARD_NAME "unknown"
#endif
#ifndef TS_CPU_HZ
#define TS_CPU_HZ 0u
#endif
/* The image's id, a hash of everything it was built from (tinysched.device.image_id), sent in the
 * hello so the host can refuse a board that still runs an older image than the one it flashed.
 * Kept as a symbol too: the host reads the id it expects from the ELF it flashes. */
#ifndef TS_IMAGE_ID
#define TS_IMAGE_ID ""
#endif
__attribute__((used)) const char ts_image_id[] = TS_IMAGE_ID;

extern const ts_model_info TS_MODEL_INFO;
static const ts_model_info *const model = &TS_MODEL_INFO;

/* Bytes after the arena that the linker reserves and the harness watches (targets/linker.ld.j2). */
extern uint8_t __arena_start[], __arena_guard_start[], __arena_guard_end[];

/* ---- CRC-32 (IEEE 802.3, reflected, as zlib), four bits at a time ------------------------------ */

static const uint32_t crc_nibble[16] = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
    0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu, 0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
};

static uint32_t crc_update(uint32_t crc, const uint8_t *data, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        crc ^= data[i];
        crc = (crc >> 4) ^ crc_nibble[crc & 0xFu];
        crc = (crc >> 4) ^ crc_nibble[crc & 0xFu];
    }
    return crc;
}

/* ---- frames out -------------------------------------------------------------------------------- */

static uint32_t tx_crc;

static void put_bytes(const void *data, uint32_t n)
{
    const uint8_t *p = (const uint8_t *)data;
    tx_crc = crc_update(tx_crc, p, n);
    for (uint32_t i = 0; i < n; i++) {
        ts_uart_putc(p[i]);
    }
}

static void put_u32(uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put_bytes(b, 4);
}

static void put_u16(uint16_t v)
{
    uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put_bytes(b, 2);
}

static void put_str(const char *s)
{
    uint32_t n = s ? (uint32_t)strlen(s) : 0u;
    put_u16((uint16_t)n);
    put_bytes(s, n);
}

static uint32_t str_field(const char *s)
{
    return 2u + (s ? (uint32_t)strlen(s) : 0u);
}

static void frame_begin(uint8_t type, uint8_t seq, uint32_t length)
{
    uint8_t h[8] = {TS_FRAME_MAGIC0, TS_FRAME_MAGIC1, type, seq,
                    (uint8_t)length, (uint8_t)(length >> 8), (uint8_t)(length >> 16), (uint8_t)(length >> 24)};
    uint32_t check = crc_update(0xFFFFFFFFu, h, 8) ^ 0xFFFFFFFFu;
    tx_crc = 0xFFFFFFFFu;
    put_bytes(h, 8);
    put_u16((uint16_t)check);
}

static void frame_end(void)
{
    uint32_t crc = tx_crc ^ 0xFFFFFFFFu;
    uint8_t b[4] = {(uint8_t)crc, (uint8_t)(crc >> 8), (uint8_t)(crc >> 16), (uint8_t)(crc >> 24)};
    for (int i = 0; i < 4; i++) {
        ts_uart_putc(b[i]);
    }
    ts_uart_flush();
}

static void send_simple(uint8_t type, uint8_t seq, const void *payload, uint32_t n)
{
    frame_begin(type, seq, n);
    put_bytes(payload, n);
    frame_end();
}

static void send_error(uint8_t seq, const char *text)
{
    send_simple(TS_MSG_ERROR, seq, text, (uint32_t)strlen(text));
}

/* ---- free-RAM buffers -------------------------------------------------------------------------- */

static uint8_t *heap_next;

static void *heap_take(uint32_t n)
{
    uintptr_t p = ((uintptr_t)heap_next + 7u) & ~(uintptr_t)7u;
    if (p + n > (uintptr_t)__heap_end) {
        return NULL;
    }
    heap_next = (uint8_t *)(p + n);
    return (void *)p;
}

static uint32_t total_input_bytes, total_output_bytes;
static uint8_t *rx_buf;       /* run payload: 8 header bytes, then the inputs */
static uint32_t rx_cap;
static uint8_t *out_a, *out_b; /* outputs of run 1, and of runs 2 and 3 for comparison */
static uint8_t *state_snapshot;
static uint8_t *touched_map;   /* one bit per watched byte, or NULL */
static uint32_t *step_ticks;   /* per step of the timed invoke (TS_PROFILE_STEPS), or NULL */
static uint32_t *step_outputs; /* per step of the first run: its output's bytes and CRC-32, or NULL */
static uint32_t profile_steps; /* entries of step_ticks (and pairs of step_outputs) */
static volatile int profiling; /* set during the timed invoke only */
static volatile int checking;  /* set during the first painted run only */
static uint64_t step_last;
static uint32_t *member_counts; /* per member slot of the streamed stages: step, ticks, calls, or NULL */
static uint32_t profile_members; /* slots of member_counts (two more follow: the hook's calibration) */
static uint32_t member_hook;     /* ticks of one hook call (ts_member_done), measured in the members' pass */
static volatile int members_on;  /* set during the members' pass only */
static uint64_t member_mark;     /* the counter at the last member's end (TS_MEMBER_DONE) */
static const void *input_ptrs[16];
static void *output_ptrs_a[16];
static void *output_ptrs_b[16];
static uint32_t heap_free_at_boot;
static int buffers_ok;
static int counter_kind;

/* The watched spans, laid end to end (byte i of the watch is byte i - span_base[k] of span k): the
 * arena, plus the linker's guard bytes when the arena is the last thing in .ts_arena, so a write
 * past arena_bytes is seen as a high-water above the plan; or each region of a split arena. */
#define TS_MAX_SPANS 8u
static uint8_t *span_start[TS_MAX_SPANS];
static uint32_t span_base[TS_MAX_SPANS + 1u];
static uint32_t n_spans;
static uint32_t n_regions; /* regions reported (0: one arena) */
static uint32_t watch_bytes;
static uint32_t region_high_water[TS_MAX_SPANS];
static uint32_t region_touched[TS_MAX_SPANS];

static void setup_buffers(void)
{
    heap_next = __heap_start;
    heap_free_at_boot = (uint32_t)(__heap_end - __heap_start);
    buffers_ok = 0;
    if (model->num_inputs > 16u || model->num_outputs > 16u) {
        return;
    }
    total_input_bytes = 0;
    for (uint32_t i = 0; i < model->num_inputs; i++) {
        total_input_bytes += model->input_bytes[i];
    }
    total_output_bytes = 0;
    for (uint32_t i = 0; i < model->num_outputs; i++) {
        total_output_bytes += model->output_bytes[i];
    }
    rx_cap = 8u + total_input_bytes;
    rx_buf = heap_take(rx_cap);
    out_a = heap_take(total_output_bytes + 1u);
    out_b = heap_take(total_output_bytes + 1u);
    state_snapshot = model->state_bytes ? heap_take(model->state_bytes) : NULL;
    if (!rx_buf || !out_a || !out_b || (model->state_bytes && !state_snapshot)) {
        rx_cap = 64u; /* still able to receive queries; runs get an error frame */
        rx_buf = NULL;
        return;
    }
    uint32_t off = 0;
    for (uint32_t i = 0; i < model->num_inputs; i++) {
        input_ptrs[i] = rx_buf + 8u + off;
        off += model->input_bytes[i];
    }
    off = 0;
    for (uint32_t i = 0; i < model->num_outputs; i++) {
        output_ptrs_a[i] = out_a + off;
        output_ptrs_b[i] = out_b + off;
        off += model->output_bytes[i];
    }
    n_regions = model->regions && model->num_regions <= TS_MAX_SPANS ? model->num_regions : 0u;
    watch_bytes = 0;
    if (n_regions) {
        for (uint32_t k = 0; k < n_regions; k++) {
            span_start[k] = model->regions[k].base;
            span_base[k] = watch_bytes;
            watch_bytes += model->regions[k].bytes;
        }
        n_spans = n_regions;
    } else {
        span_start[0] = model->arena;
        span_base[0] = 0;
        watch_bytes = model->arena_bytes;
        if (model->arena >= __arena_start && model->arena + model->arena_bytes <= __arena_guard_start) {
            watch_bytes = (uint32_t)(__arena_guard_end - model->arena);
        }
        n_spans = 1;
    }
    span_base[n_spans] = watch_bytes;
    touched_map = heap_take((watch_bytes + 7u) / 8u);
    profile_steps = model->num_steps;
    step_ticks = profile_steps ? heap_take(4u * profile_steps) : NULL;
    step_outputs = step_ticks ? heap_take(8u * profile_steps) : NULL;
    if (!step_ticks || !step_outputs) {
        profile_steps = 0;
    }
    profile_members = profile_steps ? model->num_members : 0u;
    member_counts = profile_members ? heap_take(12u * (profile_members + 2u)) : NULL;
    if (!member_counts) {
        profile_members = 0;
    }
    buffers_ok = 1;
}

/* ---- hello ------------------------------------------------------------------------------------- */

static void send_hello(uint8_t seq)
{
    uint32_t n = 4u + 4u * 8u + 8u + 4u * (model->num_inputs + model->num_outputs) +
                 str_field(TS_BOARD_NAME) + str_field(model->build_id) + str_field(model->name) + str_field(ts_image_id) +
                 4u + 8u * n_regions;
    uint16_t flags = (uint16_t)((touched_map ? TS_HELLO_TOUCHED_EXACT : 0u) | (buffers_ok ? TS_HELLO_BUFFERS_OK : 0u) |
                                (model->invoke_streamed ? TS_HELLO_STREAMED_INPUT : 0u));
#ifdef TS_SEMIHOSTING
    flags |= TS_HELLO_SEMIHOSTING;
#endif
    frame_begin(TS_MSG_HELLO, seq, n);
    uint8_t head[4] = {(uint8_t)TS_PROTOCOL_VERSION, (uint8_t)counter_kind, (uint8_t)flags, (uint8_t)(flags >> 8)};
    put_bytes(head, 4);
    put_u32(ts_cpu_hz()); /* the clock ts_target_init actually set up (the reset clock if the PLL failed) */
    put_u32(model->arena_bytes);
    put_u32(model->arena_alignment);
    put_u32((uint32_t)(uintptr_t)model->arena);
    put_u32(model->state_bytes);
    put_u32((uint32_t)((uintptr_t)__stack_top - (uintptr_t)__stack_limit));
    put_u32(heap_free_at_boot);
    put_u32(watch_bytes);
    put_u32(model->num_inputs);
    put_u32(model->num_outputs);
    for (uint32_t i = 0; i < model->num_inputs; i++) {
        put_u32(model->input_bytes[i]);
    }
    for (uint32_t i = 0; i < model->num_outputs; i++) {
        put_u32(model->output_bytes[i]);
    }
    put_str(TS_BOARD_NAME);
    put_str(model->build_id);
    put_str(model->name);
    put_str(ts_image_id);
    put_u32(n_regions);
    for (uint32_t k = 0; k < n_regions; k++) {
        put_u32((uint32_t)(uintptr_t)span_start[k]);
        put_u32(span_base[k + 1u] - span_base[k]);
    }
    frame_end();
}

/* ---- painting and measuring -------------------------------------------------------------------- */

/* Pattern A for byte i of the watched span; pattern B is its complement. Position-dependent, so a
 * kernel that fills memory with a constant cannot match it by accident over more than a byte. */
static inline uint32_t pattern_word(uint32_t word_index)
{
    return word_index * 0x9E3779B1u + 0x7F4A7C15u;
}

static void paint_arena(uint32_t invert)
{
    for (uint32_t k = 0; k < n_spans; k++) {
        uint8_t *start = span_start[k];
        for (uint32_t i = span_base[k]; i < span_base[k + 1u]; i++) {
            uint32_t w = pattern_word(i >> 2) ^ invert;
            start[i - span_base[k]] = (uint8_t)(w >> (8u * (i & 3u)));
        }
    }
}

typedef struct {
    uint32_t high_water; /* highest touched offset + 1, 0 if none */
    uint32_t low;        /* lowest touched offset, watch_bytes if none */
    uint32_t touched;
} arena_scan;

static void scan_arena(uint32_t invert, arena_scan *s)
{
    uint32_t count = 0;
    for (uint32_t k = 0; k < n_spans; k++) {
        const uint8_t *start = span_start[k];
        uint32_t in_span = 0;
        for (uint32_t i = span_base[k]; i < span_base[k + 1u]; i++) {
            uint32_t w = pattern_word(i >> 2) ^ invert;
            if (start[i - span_base[k]] != (uint8_t)(w >> (8u * (i & 3u)))) {
                in_span++;
                if (i + 1u > s->high_water) {
                    s->high_water = i + 1u;
                }
                if (i < s->low) {
                    s->low = i;
                }
                if (i + 1u - span_base[k] > region_high_water[k]) {
                    region_high_water[k] = i + 1u - span_base[k];
                }
                if (touched_map) {
                    touched_map[i >> 3] |= (uint8_t)(1u << (i & 7u));
                }
            }
        }
        if (in_span > region_touched[k]) {
            region_touched[k] = in_span;
        }
        count += in_span;
    }
    if (count > s->touched) {
        s->touched = count;
    }
}

/* Bytes of span k the touched-byte bitmap marks (both patterns' union). */
static uint32_t span_touched(uint32_t k)
{
    uint32_t n = 0;
    for (uint32_t i = span_base[k]; i < span_base[k + 1u]; i++) {
        n += (touched_map[i >> 3] >> (i & 7u)) & 1u;
    }
    return n;
}

/* Paints the words from `limit` up to (not including) the caller's stack pointer. Naked, so it
 * touches no stack of its own: on entry SP is exactly the caller's SP. */
__attribute__((naked, noinline)) static void stack_paint(__attribute__((unused)) uint32_t *limit,
                                                         __attribute__((unused)) uint32_t pattern)
{
    __asm volatile("mov r2, sp\n\t"
                   "1:\n\t"
                   "cmp r0, r2\n\t"
                   "bhs 2f\n\t"
                   "str r1, [r0], #4\n\t"
                   "b 1b\n\t"
                   "2:\n\t"
                   "bx lr\n\t");
}

/* ---- the streamed input (tinysched --stream-input) ---------------------------------------------
 * A model generated with invoke_streamed runs through it, the harness being the application's row
 * source: it copies the rows asked for from its own input buffer (rx_buf, on the heap, outside the
 * arena, so the painted high-water counts only the window the model keeps) and checks the order the
 * header promises: rows ascending, each exactly once per pass (one pass, or one per column tile of a
 * tiled first stage), every row asked for in every pass. A run that breaks it
 * returns TS_STATUS_INPUT_ROW_ORDER. */
typedef struct {
    const uint8_t *input;
    uint32_t row_bytes;
    uint32_t rows;
    uint32_t next; /* the row the next call must start at */
    int out_of_order;
} row_feed;

static int feed_rows(int32_t first_row, int32_t rows, void *dst, void *ctx)
{
    row_feed *feed = (row_feed *)ctx;
    if (first_row == 0 && feed->next == feed->rows) {
        feed->next = 0u; /* the next pass of a stage run over column tiles: every row again */
    }
    if (rows < 1 || first_row != (int32_t)feed->next || (uint32_t)rows > feed->rows - feed->next) {
        feed->out_of_order = 1;
        return 1;
    }
    memcpy(dst, feed->input + (size_t)first_row * feed->row_bytes, (size_t)rows * feed->row_bytes);
    feed->next += (uint32_t)rows;
    return 0;
}

/* One inference on the received inputs, through invoke_streamed when the model has it. */
static int run_model(void *const *outputs)
{
    if (model->invoke_streamed == NULL) {
        return model->invoke(input_ptrs, outputs);
    }
    row_feed feed = {(const uint8_t *)input_ptrs[0], model->streamed_row_bytes, model->streamed_rows, 0u, 0};
    int rc = model->invoke_streamed(feed_rows, &feed, outputs);
    if (feed.out_of_order || (rc == 0 && feed.next != feed.rows)) {
        return (int)TS_STATUS_INPUT_ROW_ORDER;
    }
    return rc;
}

/* Paints the free stack, runs the model, and gives back the SP it was called with. */
__attribute__((noinline)) static int invoke_on_painted_stack(uint32_t pattern, void *const *outputs, uint32_t *sp_out)
{
    uint32_t sp;
    __asm volatile("mov %0, sp" : "=r"(sp));
    stack_paint(__stack_limit, pattern);
    int rc = run_model(outputs);
    *sp_out = sp;
    return rc;
}

static uint32_t stack_lowest(uint32_t pattern)
{
    const uint32_t *p = __stack_limit;
    while (p < __stack_top && *p == pattern) {
        p++;
    }
    return (uint32_t)(uintptr_t)p;
}

static void restore_state(void)
{
    if (state_snapshot) {
        memcpy(model->state, state_snapshot, model->state_bytes);
    }
}

void ts_member_done(uint32_t step, uint32_t slot) __attribute__((noinline)); /* timed as the model calls it */

/* The members' pass, before the timed run (which then counts the steps and the whole invoke with
 * the hooks returning at once): each streamed member's ticks with the hooks on, and first the ticks
 * of one hook call measured on its own (two calls in a row, the second's ticks), which the host
 * takes off each member's count per call. */
static void run_members(int *status)
{
    const uint32_t calibration = profile_members; /* the two slots after the members' */
    memset(member_counts, 0, 12u * (profile_members + 2u));
    restore_state();
    step_last = 0;
    member_mark = 0;
    members_on = 1;
    profiling = 1;
    ts_counter_start();
    ts_member_done(0u, calibration);      /* marks the counter */
    ts_member_done(0u, calibration + 1u); /* the ticks since: one call */
    member_hook = member_counts[3u * (calibration + 1u) + 1u];
    int rc = run_model(output_ptrs_b);
    (void)ts_counter_stop();
    profiling = 0;
    members_on = 0;
    if (rc && !*status) {
        *status = rc;
    }
}

static void handle_run(uint8_t seq)
{
    uint32_t flags = (uint32_t)rx_buf[0] | ((uint32_t)rx_buf[1] << 8) | ((uint32_t)rx_buf[2] << 16) |
                     ((uint32_t)rx_buf[3] << 24);
    send_simple(TS_MSG_ACK, seq, NULL, 0);
    if ((flags & TS_RUN_RESET_STATE) && model->reset) {
        model->reset();
    }
    if (state_snapshot) {
        memcpy(state_snapshot, model->state, model->state_bytes);
    }
    if (touched_map) {
        memset(touched_map, 0, (watch_bytes + 7u) / 8u);
    }
    arena_scan scan = {0u, watch_bytes, 0u};
    memset(region_high_water, 0, sizeof region_high_water);
    memset(region_touched, 0, sizeof region_touched);
    uint32_t stack_invoke = 0, stack_total = 0, sp = 0;
    int status = 0;
    const uint32_t stack_patterns[2] = {0x5AC3A53Cu, ~0x5AC3A53Cu};
    if (step_outputs) {
        memset(step_outputs, 0, 8u * profile_steps);
    }
    for (uint32_t run = 0; run < 2; run++) {
        uint32_t invert = run ? 0xFFFFFFFFu : 0u;
        restore_state();
        paint_arena(invert);
        checking = run == 0; /* the steps' outputs: read only, so the scans below see the same writes */
        int rc = invoke_on_painted_stack(stack_patterns[run], run ? output_ptrs_b : output_ptrs_a, &sp);
        checking = 0;
        if (rc && !status) {
            status = rc;
        }
        scan_arena(invert, &scan);
        uint32_t lowest = stack_lowest(stack_patterns[run]);
        if (lowest < sp && sp - lowest > stack_invoke) {
            stack_invoke = sp - lowest;
        }
        uint32_t top = (uint32_t)(uintptr_t)__stack_top;
        if (top - lowest > stack_total) {
            stack_total = top - lowest;
        }
    }
    uint32_t agree = memcmp(out_a, out_b, total_output_bytes) == 0;
    restore_state();
    if (step_ticks) {
        memset(step_ticks, 0, 4u * profile_steps);
    }
    if (member_counts) {
        run_members(&status);
        agree = agree && memcmp(out_a, out_b, total_output_bytes) == 0;
    }
    step_last = 0;
    profiling = 1;
    ts_counter_start();
    int rc = run_model(output_ptrs_b);
    uint64_t ticks = ts_counter_stop();
    profiling = 0;
    if (rc && !status) {
        status = rc;
    }
    agree = agree && memcmp(out_a, out_b, total_output_bytes) == 0;
    uint32_t touched = scan.touched;
    if (touched_map) {
        touched = 0;
        for (uint32_t i = 0; i < (watch_bytes + 7u) / 8u; i++) {
            touched += (uint32_t)__builtin_popcount(touched_map[i]);
        }
    }
    uint32_t rflags = (agree ? TS_RESULT_OUTPUTS_AGREE : 0u) | (touched_map ? TS_RESULT_TOUCHED_EXACT : 0u);
    if (touched_map) {
        for (uint32_t k = 0; k < n_regions; k++) {
            region_touched[k] = span_touched(k);
        }
    }
    frame_begin(TS_MSG_RESULT, seq,
                4u * 10u + total_output_bytes + 4u + 12u * profile_steps + 4u + 8u * n_regions + 8u +
                    12u * profile_members);
    put_u32((uint32_t)status);
    put_u32(rflags);
    put_u32((uint32_t)ticks);
    put_u32((uint32_t)(ticks >> 32));
    put_u32(scan.high_water);
    put_u32(scan.touched ? touched : 0u);
    put_u32(scan.low);
    put_u32(stack_invoke);
    put_u32(stack_total);
    put_u32(total_output_bytes);
    put_bytes(out_a, total_output_bytes);
    put_u32(profile_steps); /* then per step: the timed invoke's counter ticks, its output's bytes and CRC-32 */
    for (uint32_t i = 0; i < profile_steps; i++) {
        put_u32(step_ticks[i]);
        put_u32(step_outputs[2u * i]);
        put_u32(step_outputs[2u * i + 1u]);
    }
    put_u32(n_regions); /* then each region's high-water and touched bytes */
    for (uint32_t k = 0; k < n_regions; k++) {
        put_u32(region_high_water[k]);
        put_u32(region_touched[k]);
    }
    put_u32(profile_members); /* then one hook call's ticks, and per member slot: its step, ticks, calls */
    put_u32(member_hook);
    for (uint32_t i = 0; i < 3u * profile_members; i++) {
        put_u32(member_counts[i]);
    }
    frame_end();
}

/* Called by the generated invoke after each step (TS_STEP_DONE in ts_model.h) with the step's
 * output: during the timed run the ticks since the previous step (reading the counter costs a few
 * instructions a step); during the first painted run the CRC-32 of the output's bytes, which the
 * host compares with TFLite's tensor of the same name. */
void ts_step_done(uint32_t step, const void *output, uint32_t output_bytes)
{
    if (step >= profile_steps) {
        return;
    }
    if (checking && output != NULL) {
        step_outputs[2u * step] = output_bytes;
        step_outputs[2u * step + 1u] = crc_update(0xFFFFFFFFu, (const uint8_t *)output, output_bytes) ^ 0xFFFFFFFFu;
    }
    if (!profiling) {
        return;
    }
    uint64_t now = ts_counter_now();
    step_ticks[step] = (uint32_t)(now - step_last);
    step_last = now;
}

/* Called by a streamed stage's loop after each call of a member's row kernel (TS_MEMBER_DONE in
 * ts_model.h): in the members' pass (run_members) the ticks since the last member's or step's end
 * go to this member, so a member's count holds its kernel calls and the loop's work for its rows
 * (window slides, row bounds, the application's rows), and one hook call (the host takes that off);
 * elsewhere, the timed run included, it returns at once (a few instructions a call). The later of
 * ts_step_done's mark and the last member's is where a member's ticks start. */
void ts_member_done(uint32_t step, uint32_t slot)
{
    if (!members_on || slot > profile_members + 1u) {
        return;
    }
    uint64_t now = ts_counter_now();
    uint64_t since = member_mark > step_last ? member_mark : step_last;
    uint32_t *m = member_counts + 3u * slot;
    m[0] = step;
    m[1] += (uint32_t)(now - since);
    m[2] += 1u;
    member_mark = now;
}

/* ---- inputs by semihosting (emulated boards only) ---------------------------------------------- */

#ifdef TS_SEMIHOSTING
/* QEMU's CMSDK UART takes one byte per turn of its main loop (5-10 KB/s whatever the baud), so on the
 * emulated boards the host may opt in (`measure --semihost-inputs`, a test-speed shortcut) to send an
 * input set as a host file read with Arm semihosting (BKPT 0xAB) in one call. The request still
 * arrives over the UART, with the inputs' CRC-32, which is checked. By default inputs come over the UART. */
static int semihost_call(uint32_t op, void *args)
{
    register uint32_t r0 __asm("r0") = op;
    register void *r1 __asm("r1") = args;
    __asm volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return (int)r0;
}

/* rx_buf holds: u32 flags, u32 reserved, u32 crc, path[len - 12]. Returns NULL or an error text. */
static const char *load_inputs_semihosted(uint32_t len)
{
    static char path[256];
    uint32_t n = len - 12u;
    if (len < 13u || n >= sizeof path) {
        return "semihosted run request: bad path length";
    }
    memcpy(path, rx_buf + 12, n);
    path[n] = '\0';
    uint32_t want = (uint32_t)rx_buf[8] | ((uint32_t)rx_buf[9] << 8) | ((uint32_t)rx_buf[10] << 16) |
                    ((uint32_t)rx_buf[11] << 24);
    uint32_t open_args[3] = {(uint32_t)(uintptr_t)path, 1u /* "rb" */, (uint32_t)strlen(path)};
    int handle = semihost_call(0x01u /* SYS_OPEN */, open_args);
    if (handle < 0) {
        return "semihosting: cannot open the inputs file";
    }
    uint32_t read_args[3] = {(uint32_t)handle, (uint32_t)(uintptr_t)(rx_buf + 8), total_input_bytes};
    int left = semihost_call(0x06u /* SYS_READ */, read_args);
    uint32_t close_args[1] = {(uint32_t)handle};
    (void)semihost_call(0x02u /* SYS_CLOSE */, close_args);
    if (left != 0) {
        return "semihosting: the inputs file is shorter than the model's inputs";
    }
    if ((crc_update(0xFFFFFFFFu, rx_buf + 8, total_input_bytes) ^ 0xFFFFFFFFu) != want) {
        return "semihosting: the inputs read do not match their CRC-32";
    }
    return NULL;
}
#endif

/* ---- frames in --------------------------------------------------------------------------------- */

static void serve(void)
{
    for (;;) {
        uint8_t h[10];
        h[0] = ts_uart_getc();
        if (h[0] != TS_FRAME_MAGIC0) {
            continue;
        }
        h[1] = ts_uart_getc();
        while (h[1] == TS_FRAME_MAGIC0) {
            h[1] = ts_uart_getc();
        }
        if (h[1] != TS_FRAME_MAGIC1) {
            continue;
        }
        for (int i = 2; i < 10; i++) {
            h[i] = ts_uart_getc();
        }
        uint8_t type = h[2], seq = h[3];
        uint32_t len = (uint32_t)h[4] | ((uint32_t)h[5] << 8) | ((uint32_t)h[6] << 16) | ((uint32_t)h[7] << 24);
        uint32_t check = crc_update(0xFFFFFFFFu, h, 8) ^ 0xFFFFFFFFu;
        if ((uint16_t)check != (uint16_t)(h[8] | (h[9] << 8))) {
            uint8_t reason = TS_NAK_BAD_HEADER;
            send_simple(TS_MSG_NAK, seq, &reason, 1);
            continue;
        }
        int want = type == TS_MSG_RUN && rx_buf;
        if (len > (want ? rx_cap : 64u)) {
            uint8_t reason = TS_NAK_BAD_LENGTH;
            send_simple(TS_MSG_NAK, seq, &reason, 1);
            continue;
        }
        uint32_t crc = crc_update(0xFFFFFFFFu, h, 10);
        uint8_t small[64];
        uint8_t *dst = want ? rx_buf : small;
        for (uint32_t i = 0; i < len; i++) {
            dst[i] = ts_uart_getc();
        }
        crc = crc_update(crc, dst, len) ^ 0xFFFFFFFFu;
        uint8_t c[4];
        for (int i = 0; i < 4; i++) {
            c[i] = ts_uart_getc();
        }
        uint32_t got = (uint32_t)c[0] | ((uint32_t)c[1] << 8) | ((uint32_t)c[2] << 16) | ((uint32_t)c[3] << 24);
        if (got != crc) {
            uint8_t reason = TS_NAK_BAD_CRC;
            send_simple(TS_MSG_NAK, seq, &reason, 1);
            continue;
        }
        switch (type) {
        case TS_MSG_QUERY:
            send_hello(seq);
            break;
        case TS_MSG_RUN:
            if (!rx_buf) {
                send_error(seq, "harness buffers do not fit in the free RAM between .bss and the stack");
            } else if (len != rx_cap) {
#ifdef TS_SEMIHOSTING
                if (len >= 12u && (rx_buf[0] & TS_RUN_INPUTS_SEMIHOSTED)) {
                    const char *problem = load_inputs_semihosted(len);
                    if (problem) {
                        send_error(seq, problem);
                    } else {
                        handle_run(seq);
                    }
                    break;
                }
#endif
                uint8_t reason = TS_NAK_BAD_LENGTH;
                send_simple(TS_MSG_NAK, seq, &reason, 1);
            } else {
                handle_run(seq);
            }
            break;
        case TS_MSG_REBOOT:
            ts_uart_flush();
            ts_system_reset();
        default: {
            uint8_t reason = TS_NAK_UNKNOWN_TYPE;
            send_simple(TS_MSG_NAK, seq, &reason, 1);
            break;
        }
        }
    }
}

void ts_fault(uint32_t pc, uint32_t cfsr, uint32_t hfsr, uint32_t kind)
{
    frame_begin(TS_MSG_FAULT, 0, 16);
    put_u32(pc);
    put_u32(cfsr);
    put_u32(hfsr);
    put_u32(kind);
    frame_end();
    ts_system_reset();
}

int main(void)
{
    counter_kind = ts_counter_init();
    setup_buffers();
    send_hello(0);
    serve();
    return 0;
}
