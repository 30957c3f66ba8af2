/* console.c - text out of the CMSDK APB UART0 (0x40004000) of the MPS2 boards QEMU emulates. */
#include <stdint.h>

#include "app.h"

#define UART0 0x40004000u
#define REG(off) (*(volatile uint32_t *)(UART0 + (off)))
#define UART_DATA REG(0x00u)
#define UART_STATE REG(0x04u)
#define UART_CTRL REG(0x08u)
#define UART_BAUDDIV REG(0x10u)

void console_init(void)
{
    UART_BAUDDIV = 16u;
    UART_CTRL = 1u; /* TX enabled */
}

static void put(char c)
{
    while (UART_STATE & 1u) { /* TX full */
    }
    UART_DATA = (uint32_t)(unsigned char)c;
}

void console_puts(const char *s)
{
    while (*s) {
        put(*s++);
    }
}

void console_hex(uint32_t v)
{
    int shift;
    console_puts("0x");
    for (shift = 28; shift >= 0; shift -= 4) {
        put("0123456789abcdef"[(v >> shift) & 0xFu]);
    }
}

void console_dec(int32_t v)
{
    char buf[12];
    int n = 0;
    uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    if (v < 0) {
        put('-');
    }
    do {
        buf[n++] = (char)('0' + u % 10u);
        u /= 10u;
    } while (u);
    while (n) {
        put(buf[--n]);
    }
}

void console_bytes(const uint8_t *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; ++i) {
        put("0123456789abcdef"[p[i] >> 4]);
        put("0123456789abcdef"[p[i] & 0xFu]);
    }
}
