/* <splitcore/pipeline_model.h> in a vendored tree (-I<repository>/include), as an installed tree
   names it. Written by `scons includes`. */
#include "../../pipeline_model.h"
