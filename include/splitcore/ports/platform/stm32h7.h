/* <splitcore/ports/platform/stm32h7.h> in a vendored tree (-I<repository>/include), as an installed tree
   names it. Written by `scons includes`. */
#include "../../../../ports/platform/stm32h7.h"
