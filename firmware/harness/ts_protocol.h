/*
 * ts_protocol.h - the frame protocol between the device harness and the host (tinysched/device/link.py).
 * Documented in docs/firmware.md; every number here has its twin in link.py.
 *
 * Frame:  'T' 'S' | type u8 | seq u8 | length u32 | header check u16 | payload[length] | crc u32
 *   header check = low 16 bits of CRC-32 over the first 8 bytes (a corrupted length is caught
 *   before anyone waits for that many bytes); crc = CRC-32 (IEEE, as zlib) over header and payload.
 *   All integers little-endian.
 */
#ifndef TS_PROTOCOL_H
#define TS_PROTOCOL_H

/* 2: the hello ends with a fourth string, the image id (TS_IMAGE_ID, see harness.c)
 * 3: the result ends with the counter ticks of each step
 * 4: the hello ends with a split arena's regions (u32 count, then u32 address, u32 bytes each), the
 *    result with each region's high-water and touched bytes (u32 count, then u32, u32 each)
 * 5: each step of the result carries its output's bytes and CRC-32 (first painted run) after its
 *    counter ticks
 * 6: the result ends with the streamed stages' members (u32 count, u32 ticks of one hook call, then
 *    u32 step, u32 ticks, u32 calls each, from a pass before the timed run; run_members in harness.c) */
#define TS_PROTOCOL_VERSION 6u
#define TS_FRAME_MAGIC0 0x54u /* 'T' */
#define TS_FRAME_MAGIC1 0x53u /* 'S' */
#define TS_FRAME_HEADER_BYTES 10u

/* host -> device */
#define TS_MSG_QUERY 0x51u  /* 'Q': send the hello frame again */
#define TS_MSG_RUN 0x52u    /* 'R': u32 flags, u32 reserved, inputs concatenated */
#define TS_MSG_REBOOT 0x5Au /* 'Z': reset the device */

/* device -> host */
/* 'H': u8 version, u8 counter kind, u16 flags, u32 cpu_hz, arena_bytes, arena_alignment,
 * arena_address, state_bytes, stack_bytes, free_ram, watched_bytes, num_inputs, num_outputs, u32
 * input sizes, u32 output sizes, then four strings (u16 length, UTF-8 bytes): board, build id,
 * model name, image id; then u32 regions and (u32 address, u32 bytes) per region of a split arena */
#define TS_MSG_HELLO 0x48u
#define TS_MSG_ACK 0x41u    /* 'A': a run request arrived intact; the result follows */
#define TS_MSG_NAK 0x4Eu    /* 'N': u8 reason */
#define TS_MSG_RESULT 0x4Fu /* 'O' */
#define TS_MSG_FAULT 0x46u  /* 'F': u32 pc, cfsr, hfsr, exception number */
#define TS_MSG_ERROR 0x45u  /* 'E': text */

#define TS_RUN_RESET_STATE 1u /* run flag: call the model's reset() first */
/* run flag, emulated boards only (built with TS_SEMIHOSTING, announced by TS_HELLO_SEMIHOSTING): the
 * payload is u32 flags, u32 reserved, u32 CRC-32 of the inputs, then the path of a host file holding
 * the inputs concatenated, which the harness reads by Arm semihosting and checks against the CRC.
 * Only sent when the host opts in (`measure --semihost-inputs`); by default inputs come over the UART. */
#define TS_RUN_INPUTS_SEMIHOSTED 4u

#define TS_NAK_BAD_CRC 1u
#define TS_NAK_BAD_LENGTH 2u
#define TS_NAK_UNKNOWN_TYPE 3u
#define TS_NAK_BAD_HEADER 4u

#define TS_HELLO_TOUCHED_EXACT 1u /* the touched-byte bitmap fits in free RAM */
#define TS_HELLO_BUFFERS_OK 2u    /* input/output buffers fit in free RAM */
#define TS_HELLO_SEMIHOSTING 4u   /* accepts TS_RUN_INPUTS_SEMIHOSTED (emulated boards) */
#define TS_HELLO_STREAMED_INPUT 8u /* runs the model's invoke_streamed, the harness feeding the input's rows */

/* result status of a streamed-input run whose rows were not asked for in order, each row once */
#define TS_STATUS_INPUT_ROW_ORDER 0x524F5753u /* 'SWOR' */

#define TS_RESULT_OUTPUTS_AGREE 1u /* the three runs gave the same outputs */
#define TS_RESULT_TOUCHED_EXACT 2u /* arena_touched is the union over both patterns */

#endif /* TS_PROTOCOL_H */
