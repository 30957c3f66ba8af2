/* main.c - this project's application: every model of app_models.c run in place, then copying. */
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

static int run(const app_model *m)
{
    size_t i;
    int rc;
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
