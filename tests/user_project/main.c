/* main.c - this project's application: every model of app_models.c run in place (a streamed input:
 * through <name>_invoke_streamed, the rows from this file's row source), then copying. */
#include <string.h>

#include "app.h"
#include "app_models.h"

#ifdef APP_SHARED_ARENA_BYTES
/* One buffer for every model, run one after the other, in the project's own arena section. */
static uint8_t shared_arena[APP_SHARED_ARENA_BYTES] __attribute__((aligned(16), section(".model_arena")));
#endif

#ifndef APP_HAS_CXX
int app_cxx_check(void)
{
    return 0;
}
#endif

static uint8_t copy_out[APP_MAX_OUTPUT_BYTES];

/* The streamed input's row source, as a camera driver would be: the test's input bytes stand in for
 * the lines the DMA delivers; it notes whether the rows come as the header promises (in order, each
 * row once). */
typedef struct {
    const app_model *m;
    int32_t next;
    int32_t calls;
    int out_of_order;
} app_feed;

static int app_read_rows(int32_t first_row, int32_t rows, void *dst, void *ctx)
{
    app_feed *feed = (app_feed *)ctx;
    if (first_row != feed->next || rows < 1) {
        feed->out_of_order = 1;
    }
    memcpy(dst, feed->m->inputs[0] + (size_t)first_row * feed->m->input0_row_bytes,
           (size_t)rows * feed->m->input0_row_bytes);
    feed->next = first_row + rows;
    feed->calls += 1;
    return 0;
}

static int run(const app_model *m)
{
    size_t i;
    int rc;
    app_feed feed = {0, 0, 0, 0};
#ifdef APP_SHARED_ARENA_BYTES
    rc = m->init(shared_arena, sizeof shared_arena);
#else
    rc = m->init(NULL, 0);
#endif
    if (rc != 0) {
        console_puts("INIT ");
        console_puts(m->error_string(rc));
        console_puts("\n");
        return rc;
    }
    if (m->invoke_streamed != NULL) { /* the rows pulled as the model needs them, outputs left in place */
        feed.m = m;
        rc = m->invoke_streamed(app_read_rows, &feed, NULL);
        console_puts("MODEL ");
        console_puts(m->name);
        console_puts(" arena=");
        console_hex((uint32_t)(uintptr_t)((uint8_t *)m->output(0) - m->output0_offset));
        console_puts(" input0=streamed rc=");
        console_dec(rc);
        console_puts("\n");
        console_puts("ROWS ");
        console_puts(m->name);
        console_puts(" ");
        console_dec(feed.next);
        console_puts(" calls=");
        console_dec(feed.calls);
        console_puts(feed.out_of_order ? " out-of-order\n" : " in-order\n");
        console_puts("IN_PLACE ");
        console_dec(m->invoke_in_place()); /* refused: the input is never in the arena */
        console_puts(m->input(0) == NULL ? " input0=NULL\n" : " input0=set\n");
    } else {
        for (i = 0; i < m->num_inputs; ++i) { /* written where the model reads it: no copy at invoke */
            memcpy(m->input(i), m->inputs[i], m->input_bytes[i]);
        }
        rc = m->invoke_in_place();
        console_puts("MODEL ");
        console_puts(m->name);
        console_puts(" arena=");
        console_hex((uint32_t)(uintptr_t)((uint8_t *)m->input(0) - m->input0_offset));
        console_puts(" input0=");
        console_hex((uint32_t)(uintptr_t)m->input(0));
        console_puts(" rc=");
        console_dec(rc);
        console_puts("\n");
    }
    for (i = 0; i < m->num_outputs; ++i) {
        console_puts("OUT ");
        console_puts(m->name);
        console_puts(" ");
        console_dec((int32_t)i);
        console_puts(" ");
        console_bytes((const uint8_t *)m->output(i), m->output_bytes[i]);
        console_puts("\n");
    }
    if (m->num_outputs == 1) { /* the copying invoke: the inputs from the test's buffers */
        void *outs[1];
        outs[0] = copy_out;
        rc = m->invoke((const void *const *)m->inputs, outs);
        console_puts("COPY ");
        console_puts(m->name);
        console_puts(" 0 ");
        console_bytes(copy_out, m->output_bytes[0]);
        console_puts("\n");
    }
    return rc;
}

int main(void)
{
    static uint8_t probe[32] __attribute__((aligned(16)));
    size_t r;
    int failed = 0;
    console_init();
    for (r = 0; r < app_num_runs; ++r) {
        failed |= run(&app_models[app_runs[r]]) != 0;
    }
    console_puts("ERRORS ");
    console_dec(app_models[0].init(probe, sizeof probe)); /* smaller than any arena here */
    console_puts(" ");
    console_dec(app_models[0].init(probe + 1, (size_t)-1)); /* misaligned */
    console_puts(" ");
    console_puts(app_models[0].error_string(app_models[0].init(probe, sizeof probe)));
    console_puts("\n");
    failed |= app_cxx_check() != 0;
    console_puts(failed ? "FAILED\n" : "DONE\n");
    return failed;
}
