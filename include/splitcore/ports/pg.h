/* <splitcore/ports/pg.h> in a vendored tree (-I<repository>/include), as an installed tree
   names it. Written by `scons includes`. */
#include "../../../ports/pg.h"
