/*
 * ts_model.h - the one contract between a generated model module and whatever runs it
 * (the host runner used by `tinysched verify`, or the device harness used by `tinysched measure`).
 *
 * A generated module defines one `const ts_model_info <prefix>_info`. All activation memory of the
 * model is `arena[0 .. arena_bytes)` (a split arena: its `regions` laid end to end): graph inputs
 * are copied into it at their planned offsets,
 * every kernel reads and writes inside it, graph outputs are copied out of it. Nothing else is
 * written at run time (persistent state of stateful models is reported separately in `state_bytes`).
 */
#ifndef TS_MODEL_H
#define TS_MODEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One memory region of a split arena (tinysched.pools): a static array the linker places in the
 * board's region `name`. */
typedef struct {
    const char *name;
    uint8_t *base;
    uint32_t bytes;
} ts_arena_region;

/* The application's row source of a streamed input (tinysched --stream-input): writes rows
 * [first_row, first_row + rows) of the model's input (row_bytes each, contiguous) at `dst`; returns 0,
 * or non-zero to stop the invoke. The generated code asks for the rows in ascending order, each row
 * exactly once per pass, and returns only after the call: the callback may block (e.g. until a
 * camera's DMA has delivered them). One pass, unless the first stage runs over column tiles (the
 * header's input comment says so): then one pass per tile, each from row 0 to the last, so the
 * source must deliver the frame that many times (a frame buffer outside the arena, a sensor that
 * reads out again). `ctx` is what the application passed with it. */
typedef int (*ts_read_rows_fn)(int32_t first_row, int32_t rows, void *dst, void *ctx);

typedef struct {
    const char *name;            /* model name (file stem), for messages */
    const char *build_id;        /* "<tinysched version>-<first 16 hex digits of the model's sha256>" */
    uint8_t *arena;              /* the single static arena */
    uint32_t arena_bytes;        /* planned arena size, exactly */
    uint32_t arena_alignment;    /* alignment of the arena and of every tensor offset in it */
    uint8_t *state;              /* persistent state of stateful operators, or NULL */
    uint32_t state_bytes;
    uint32_t num_inputs;
    const uint32_t *input_bytes; /* bytes of each graph input, in model order */
    uint32_t num_outputs;
    const uint32_t *output_bytes;
    /* Runs one inference. inputs[i] / outputs[i] point to input_bytes[i] / output_bytes[i] bytes.
     * Returns 0 on success, non-zero on a kernel error. */
    int (*invoke)(const void *const *inputs, void *const *outputs);
    /* Resets persistent state (stateful models); NULL when there is none. */
    void (*reset)(void);
    /* Steps of one invoke (operators in run order; recomputed ones count again). */
    uint32_t num_steps;
    /* A split arena: its regions, laid end to end they are the arena_bytes (0 / NULL: one arena). */
    uint32_t num_regions;
    const ts_arena_region *regions;
    /* --stream-input: runs one inference asking read_rows for input 0's streamed_rows rows of
     * streamed_row_bytes, in order, each once (outputs as invoke's; NULL: left in the arena). NULL
     * when the model was generated without it. */
    int (*invoke_streamed)(ts_read_rows_fn read_rows, void *ctx, void *const *outputs);
    uint32_t streamed_rows;
    uint32_t streamed_row_bytes;
    /* The operators run inside streamed stages, each stage's in order, the stages in step order: the
     * slots TS_MEMBER_DONE counts (0: no streamed stage). */
    uint32_t num_members;
} ts_model_info;

/* Per-step profiling: a firmware build defines TS_PROFILE_STEPS and the harness provides
 * ts_step_done(), called after each step of invoke with the step's index and its output (the
 * first output of the step's operator: where it lies in the arena and its bytes; NULL, 0 where
 * none); elsewhere (the host runner, an application's build) the call compiles to nothing. */
#ifdef TS_PROFILE_STEPS
void ts_step_done(uint32_t step, const void *output, uint32_t output_bytes);
#define TS_STEP_DONE(step, output, output_bytes) ts_step_done((step), (output), (output_bytes))
#else
#define TS_STEP_DONE(step, output, output_bytes) ((void)0)
#endif

/* Per-member profiling, in the same builds: inside a streamed stage's row loop (one step running
 * several operators row by row) the generated code calls ts_member_done() after each call of a
 * member's row kernel with the step and the member's slot (0 .. num_members - 1), so the harness
 * can count each operator of the stage on its own (in a pass of its own: in the timed run the call
 * returns at once); elsewhere it compiles to nothing. */
#ifdef TS_PROFILE_STEPS
void ts_member_done(uint32_t step, uint32_t slot);
#define TS_MEMBER_DONE(step, slot) ts_member_done((step), (slot))
#else
#define TS_MEMBER_DONE(step, slot) ((void)0)
#endif

#ifdef __cplusplus
}
#endif

#endif /* TS_MODEL_H */
