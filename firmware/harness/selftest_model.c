/*
 * selftest_model.c - a hand-written model module for testing the device harness and the
 * measurement path without the code generator. It follows firmware/include/ts_model.h exactly.
 *
 * One input of 64 bytes, one output of 16 bytes, an arena of SELFTEST_ARENA bytes (default 300):
 *   arena[0, 64)             <- the input
 *   arena[64, A-16)          t1[j] = 3 * in[j mod 64] + j                      (mod 256)
 *   arena[A-16, A)           t2[k] = k XOR (sum of t1[j] over j = k mod 16)    (mod 256)
 *   output                   <- t2
 * so every arena byte is written, with a value that depends on the input. The same function in
 * Python is tinysched.device.selftest_reference.
 *
 * -DSELFTEST_OVERRUN also writes 4 bytes past the declared arena, as a broken plan would: the
 * harness must then measure a high-water above arena_bytes. -DSELFTEST_FAULT executes a permanently
 * undefined instruction in invoke, so the fault path (fault frame, reboot) can be tested.
 * -DSELFTEST_SPIN=N adds a loop of exactly 2N + 1 instructions, to check instruction counting.
 */
#include <stdint.h>
#include <string.h>

#include "ts_model.h"

#ifndef SELFTEST_ARENA
#define SELFTEST_ARENA 300
#endif
#ifndef TS_SELFTEST_ID
#define TS_SELFTEST_ID "0"
#endif
#define IN_BYTES 64u
#define OUT_BYTES 16u

#if defined(SELFTEST_OVERRUN)
#define ARENA_STORAGE (SELFTEST_ARENA + 4)
#else
#define ARENA_STORAGE SELFTEST_ARENA
#endif

static uint8_t selftest_arena[ARENA_STORAGE] __attribute__((section(".ts_arena"), aligned(16)));
static const uint32_t input_bytes[1] = {IN_BYTES};
static const uint32_t output_bytes[1] = {OUT_BYTES};

static int selftest_invoke(const void *const *inputs, void *const *outputs)
{
    uint8_t *a = selftest_arena;
    uint8_t *t1 = a + IN_BYTES;
    uint8_t *t2 = a + SELFTEST_ARENA - OUT_BYTES;
    const uint32_t n1 = SELFTEST_ARENA - IN_BYTES - OUT_BYTES;
    volatile uint8_t scratch[OUT_BYTES]; /* some stack use for the harness to measure */

    memcpy(a, inputs[0], IN_BYTES);
#if defined(SELFTEST_FAULT)
    __asm volatile("udf #0");
#endif
#if defined(SELFTEST_SPIN)
    {
        uint32_t n = SELFTEST_SPIN;
        __asm volatile("1:\n\tsubs %0, %0, #1\n\tbne 1b" : "+r"(n) : : "cc"); /* 2 per turn */
    }
#endif
    for (uint32_t j = 0; j < n1; j++) {
        t1[j] = (uint8_t)(3u * a[j % IN_BYTES] + j);
    }
    for (uint32_t k = 0; k < OUT_BYTES; k++) {
        uint32_t sum = 0;
        for (uint32_t j = k; j < n1; j += OUT_BYTES) {
            sum += t1[j];
        }
        scratch[k] = (uint8_t)(sum ^ k);
    }
    for (uint32_t k = 0; k < OUT_BYTES; k++) {
        t2[k] = scratch[k];
    }
#if defined(SELFTEST_OVERRUN)
    for (uint32_t k = 0; k < 4; k++) {
        a[SELFTEST_ARENA + k] = (uint8_t)(0x40u + k + a[k]);
    }
#endif
    memcpy(outputs[0], t2, OUT_BYTES);
    return 0;
}

const ts_model_info selftest_info = {
    .name = "selftest",
    .build_id = "selftest-" TS_SELFTEST_ID,
    .arena = selftest_arena,
    .arena_bytes = SELFTEST_ARENA,
    .arena_alignment = 16,
    .state = 0,
    .state_bytes = 0,
    .num_inputs = 1,
    .input_bytes = input_bytes,
    .num_outputs = 1,
    .output_bytes = output_bytes,
    .invoke = selftest_invoke,
    .reset = 0,
};
