/* zephyr/cache.h — Zephyr's data-cache range API on the cache model of tests/ports/model.h:
   the calling thread's pgz_cache (NULL: this core has no cache) (splitcore tests). */
#ifndef ZEPHYR_INCLUDE_CACHE_H_
#define ZEPHYR_INCLUDE_CACHE_H_

#include "tests/ports/model.h"

static __thread pgm_cache *pgz_cache;

static inline int pgz_cache_range(void *addr, size_t size, int invalidate)
{
    uintptr_t a = (uintptr_t)addr & ~(uintptr_t)31u, end = (uintptr_t)addr + size;
    if (!pgz_cache) return -ENOTSUP;
    for (; size && a < end; a += 32u) pgm_cache_line_op(pgz_cache, a, 1, invalidate);
    return 0;
}

static inline int sys_cache_data_flush_range(void *addr, size_t size)
{
    return pgz_cache_range(addr, size, 0);
}

static inline int sys_cache_data_flush_and_invd_range(void *addr, size_t size)
{
    return pgz_cache_range(addr, size, 1);
}

#endif /* ZEPHYR_INCLUDE_CACHE_H_ */
