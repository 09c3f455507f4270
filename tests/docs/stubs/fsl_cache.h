/* stand-in for MCUXpresso's fsl_cache.h (docs check only; see README.md) */
#ifndef DOCSTUB_FSL_CACHE_H
#define DOCSTUB_FSL_CACHE_H
#include <stdint.h>
void DCACHE_CleanByRange(uint32_t address, uint32_t size_byte);
void DCACHE_InvalidateByRange(uint32_t address, uint32_t size_byte);
#endif
