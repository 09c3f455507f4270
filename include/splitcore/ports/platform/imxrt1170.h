/* <splitcore/ports/platform/imxrt1170.h> in a vendored tree (-I<repository>/include), as an installed tree
   names it. Written by `scons includes`. */
#include "../../../../ports/platform/imxrt1170.h"
