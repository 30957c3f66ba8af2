/* app.h - what main.c knows of the models it runs: one table row per model (app_models.c, written by
 * the test beside app_models.h for the models it exports). */
#ifndef APP_H
#define APP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *name;
    int (*init)(uint8_t *arena, size_t bytes);
    void *(*input)(size_t i);
    void *(*output)(size_t i);
    int (*invoke_in_place)(void);
    int (*invoke)(const void *const *inputs, void *const *outputs);
    const char *(*error_string)(int code);
    size_t arena_bytes;
    size_t input0_offset; /* <NAME>_INPUT0_OFFSET: where input 0 is in the arena (0: streamed) */
    size_t output0_offset; /* <NAME>_OUTPUT0_OFFSET */
    /* <name>_invoke_streamed (exported with --stream-input; NULL: none) and the input's row bytes */
    int (*invoke_streamed)(int (*read_rows)(int32_t first_row, int32_t rows, void *dst, void *ctx), void *ctx,
                           void *const *outputs);
    size_t input0_row_bytes;
    size_t num_inputs, num_outputs;
    const uint8_t *const *inputs; /* the test's input bytes */
    const size_t *input_bytes;
    const size_t *output_bytes;
} app_model;

extern const app_model app_models[];
extern const size_t app_num_models;
extern const size_t app_runs[]; /* which model runs when: indices into app_models */
extern const size_t app_num_runs;

void console_init(void);
void console_puts(const char *s);
void console_hex(uint32_t v);
void console_dec(int32_t v);
void console_bytes(const uint8_t *p, size_t n);
void app_exit(int code);
int app_cxx_check(void); /* cxx_check.cpp when the project has C++, else main.c's stub */

#endif
