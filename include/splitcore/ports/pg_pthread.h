/* <splitcore/ports/pg_pthread.h> in a vendored tree (-I<repository>/include), as an installed tree
   names it. Written by `scons includes`. */
#include "../../../ports/pg_pthread.h"
