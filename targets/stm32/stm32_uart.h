/*
 * stm32_uart.h - GPIO alternate-function set-up and the polled USART shared by the STM32 families.
 *
 * Two USART register layouts exist:
 *   v1 (STM32F4):        SR +0x00, DR +0x04, BRR +0x08, CR1 +0x0C (UE bit 13, TE bit 3, RE bit 2)
 *   v2 (STM32F7/L4/H7):  CR1 +0x00 (UE bit 0, RE bit 2, TE bit 3), BRR +0x0C, ISR +0x1C, ICR +0x20,
 *                        RDR +0x24, TDR +0x28
 * Status bits are the same in both: RXNE bit 5, TC bit 6, TXE bit 7, ORE bit 3.
 * GPIO: MODER +0x00 (2 bits per pin, 0b10 = alternate function), OSPEEDR +0x08, PUPDR +0x0C,
 * AFRL +0x20 / AFRH +0x24 (4 bits per pin).
 *
 * The including family defines TS_GPIO_BASE(port) and the TS_UART_* pin defines come from the board.
 * The baud-rate divisor is computed at run time from the clock actually feeding the USART: the
 * board's TS_UART_CLOCK_HZ, or the reset clock when the board's clock did not come up.
 */
#ifndef TS_STM32_UART_H
#define TS_STM32_UART_H

#include <stdint.h>

#include "ts_target.h"

#define USART_RXNE (1u << 5)
#define USART_TC (1u << 6)
#define USART_TXE (1u << 7)
#define USART_ORE (1u << 3)

#if defined(TS_USART_V1)
#define USART_STATUS (TS_UART_BASE + 0x00u)
#define USART_RDR (TS_UART_BASE + 0x04u)
#define USART_TDR (TS_UART_BASE + 0x04u)
#define USART_BRR (TS_UART_BASE + 0x08u)
#define USART_CR1 (TS_UART_BASE + 0x0Cu)
#define USART_CR1_ENABLE ((1u << 13) | (1u << 3) | (1u << 2))
#else
#define USART_CR1 (TS_UART_BASE + 0x00u)
#define USART_BRR (TS_UART_BASE + 0x0Cu)
#define USART_STATUS (TS_UART_BASE + 0x1Cu)
#define USART_ICR (TS_UART_BASE + 0x20u)
#define USART_RDR (TS_UART_BASE + 0x24u)
#define USART_TDR (TS_UART_BASE + 0x28u)
#define USART_CR1_ENABLE ((1u << 0) | (1u << 3) | (1u << 2))
#endif

static inline void ts_gpio_alternate(uint32_t port, uint32_t pin, uint32_t af)
{
    uint32_t base = TS_GPIO_BASE(port);
    uint32_t moder = TS_REG32(base + 0x00u);
    moder &= ~(3u << (2u * pin));
    moder |= 2u << (2u * pin);
    TS_REG32(base + 0x00u) = moder;
    TS_REG32(base + 0x08u) |= 2u << (2u * pin); /* high speed */
    uint32_t afr = base + (pin < 8u ? 0x20u : 0x24u);
    uint32_t shift = 4u * (pin & 7u);
    TS_REG32(afr) = (TS_REG32(afr) & ~(0xFu << shift)) | (af << shift);
}

static inline void ts_stm32_usart_init(uint32_t uart_clock_hz)
{
    ts_gpio_alternate(TS_UART_TX_PORT, TS_UART_TX_PIN, TS_UART_AF);
    ts_gpio_alternate(TS_UART_RX_PORT, TS_UART_RX_PIN, TS_UART_AF);
    /* the RX line idles high: pull it up so an unconnected pin reads no noise */
    uint32_t rx = TS_GPIO_BASE(TS_UART_RX_PORT);
    TS_REG32(rx + 0x0Cu) = (TS_REG32(rx + 0x0Cu) & ~(3u << (2u * TS_UART_RX_PIN))) | (1u << (2u * TS_UART_RX_PIN));
    TS_REG32(USART_CR1) = 0;
    /* 16x oversampling: BRR = USART clock / baud, rounded */
    TS_REG32(USART_BRR) = (uart_clock_hz + TS_UART_BAUD / 2u) / TS_UART_BAUD;
    TS_REG32(USART_CR1) = USART_CR1_ENABLE;
}

void ts_uart_putc(uint8_t c)
{
    while (!(TS_REG32(USART_STATUS) & USART_TXE)) {
    }
    TS_REG32(USART_TDR) = c;
}

int ts_uart_rx_ready(void)
{
    uint32_t status = TS_REG32(USART_STATUS);
#if defined(TS_USART_V1)
    if ((status & USART_ORE) && !(status & USART_RXNE)) {
        (void)TS_REG32(USART_RDR); /* reading SR then DR clears ORE */
    }
#else
    if (status & USART_ORE) {
        TS_REG32(USART_ICR) = USART_ORE; /* ORECF: reception stops until it is cleared */
    }
#endif
    return (status & USART_RXNE) != 0;
}

uint8_t ts_uart_getc(void)
{
    while (!ts_uart_rx_ready()) {
    }
    return (uint8_t)TS_REG32(USART_RDR);
}

void ts_uart_flush(void)
{
    while (!(TS_REG32(USART_STATUS) & USART_TC)) {
    }
}

static inline void uart_puts(const char *s)
{
    while (*s) {
        ts_uart_putc((uint8_t)*s++);
    }
}

static inline void uart_put_hex(uint32_t v)
{
    char text[11] = "0x";
    for (int i = 0; i < 8; i++) {
        text[2 + i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 0xFu];
    }
    text[10] = 0;
    uart_puts(text);
}

static inline void uart_put_dec(uint32_t v)
{
    char text[11];
    int n = 10;
    text[n] = 0;
    do {
        text[--n] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v && n);
    uart_puts(&text[n]);
}

#ifdef TS_CLOCK_WAIT_H
/* One text line when the board's clock did not come up (clock_wait.h), sent at the reset clock. */
static inline void ts_clock_report(void)
{
    if (!clock_failed_flag) {
        return;
    }
    uart_puts("\r\ntinysched: " TS_BOARD_NAME ": clock: ");
    uart_puts(clock_failed_flag);
    uart_puts(" did not come up within ");
    uart_put_dec(TS_CLOCK_WAIT_POLLS);
    uart_puts(" polls (register ");
    uart_put_hex(clock_failed_reg);
    uart_puts(" = ");
    uart_put_hex(clock_failed_value);
    uart_puts("): running on the reset clock, " TS_RESET_CLOCK_NAME " ");
    uart_put_dec(TS_RESET_HZ);
    uart_puts(" Hz, not ");
    uart_put_dec(TS_CPU_HZ);
    uart_puts(" Hz\r\n");
    ts_uart_flush();
}
#endif

#endif /* TS_STM32_UART_H */
