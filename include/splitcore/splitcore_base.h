/* <splitcore/splitcore_base.h> in a vendored tree (-I<repository>/include), as an installed tree
   names it. Written by `scons includes`. */
#include "../../splitcore_base.h"
