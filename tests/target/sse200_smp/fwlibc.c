/* fwlibc.c — the firmware's stdio over semihosting (SYS_WRITE0: QEMU's stderr): the shared
   printf of tests/target/fwlibc/fw_stdio.h into a line buffer per core, written out whole
   under a spinlock (LDREX/STREX), so lines of the two cores never mix (newlib's stdio is not
   safe from two cores at once). The rest of the C library (string.h, math.h, setjmp.h)
   is newlib's: reentrant functions only. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "fw_board.h"

#define FW_LINE       200
#define FW_SYS_WRITE0 0x04u

static char fw__line[FW_CORES][FW_LINE + 1];
static unsigned fw__len[FW_CORES];
static volatile uint32_t fw__lock;

static void fw__flush(void)
{
    unsigned me = pg_shm_sse200_cpu();
    if (!fw__len[me]) return;
    fw__line[me][fw__len[me]] = 0;
    while (__atomic_exchange_n(&fw__lock, 1u, __ATOMIC_ACQUIRE)) {}
    fw_semihost(FW_SYS_WRITE0, fw__line[me]);
    __atomic_store_n(&fw__lock, 0u, __ATOMIC_RELEASE);
    fw__len[me] = 0;
}

static void fw__emit(char c)
{
    unsigned me = pg_shm_sse200_cpu();
    fw__line[me][fw__len[me]++] = c;
    if (c == '\n' || fw__len[me] == FW_LINE) fw__flush();
}

#include "../fwlibc/fw_stdio.h"
