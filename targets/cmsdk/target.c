/*
 * cmsdk/target.c - Arm MPS2/MPS3 FPGA images (AN386, AN500, AN505, AN547), as real boards and as
 * qemu-system-arm emulates them.
 *
 * The clocks are fixed by the FPGA image (TS_CPU_HZ); only the CMSDK APB UART needs setting up.
 * CMSDK APB UART registers: DATA +0x00, STATE +0x04 (bit 0 TX full, bit 1 RX full, bit 3 RX
 * overrun, write 1 to clear), CTRL +0x08 (bit 0 TX enable, bit 1 RX enable), BAUDDIV +0x10
 * (UART clock / baud, at least 16).
 */
#include <stdint.h>

#include "ts_target.h"

#define UART_DATA (TS_UART_BASE + 0x00u)
#define UART_STATE (TS_UART_BASE + 0x04u)
#define UART_CTRL (TS_UART_BASE + 0x08u)
#define UART_BAUDDIV (TS_UART_BASE + 0x10u)

#define STATE_TX_FULL (1u << 0)
#define STATE_RX_FULL (1u << 1)
#define STATE_RX_OVERRUN (1u << 3)

void ts_target_init(void)
{
    uint32_t div = (uint32_t)(TS_UART_CLOCK_HZ / TS_UART_BAUD);
    TS_REG32(UART_CTRL) = 0;
    TS_REG32(UART_BAUDDIV) = div < 16u ? 16u : div;
    TS_REG32(UART_STATE) = STATE_RX_OVERRUN;
    TS_REG32(UART_CTRL) = 0x3u; /* TX and RX enabled, no interrupts */
    /* Drop a stale byte. Under QEMU this read also tells the character backend that the UART now
     * takes input; without it the first byte from the host waited about a second. */
    (void)TS_REG32(UART_DATA);
}

/* The FPGA's clock is the only one: it is always up. */
uint32_t ts_cpu_hz(void)
{
    return TS_CPU_HZ;
}

const char *ts_clock_failure(void)
{
    return 0;
}

void ts_uart_putc(uint8_t c)
{
    while (TS_REG32(UART_STATE) & STATE_TX_FULL) {
    }
    TS_REG32(UART_DATA) = c;
}

int ts_uart_rx_ready(void)
{
    uint32_t state = TS_REG32(UART_STATE);
    if (state & STATE_RX_OVERRUN) {
        TS_REG32(UART_STATE) = STATE_RX_OVERRUN;
    }
    return (state & STATE_RX_FULL) != 0;
}

uint8_t ts_uart_getc(void)
{
    while (!ts_uart_rx_ready()) {
    }
    return (uint8_t)TS_REG32(UART_DATA);
}

void ts_uart_flush(void)
{
    while (TS_REG32(UART_STATE) & STATE_TX_FULL) {
    }
}
