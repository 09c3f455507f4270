/* Helpers that the docs' snippet examples (<!-- doctest: body -->) call without defining
   them, so the snippets compile as the body of a function (tests/docs/check_docs.py). */
#ifndef DOCS_PRELUDE_H
#define DOCS_PRELUDE_H
#include <stdio.h>
#include "microbatch.h"
/* A layer: y = f(x). The README's microbatching example calls it once per chunk. */
static inline void my_layer(const mb_tensor *x, mb_tensor *y)
{
    (void)x;
    (void)y;
}
#endif
