/* <splitcore/pipeline_exec.h> in a vendored tree (-I<repository>/include), as an installed tree
   names it. Written by `scons includes`. */
#include "../../pipeline_exec.h"
