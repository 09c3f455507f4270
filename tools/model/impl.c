/* impl.c — the runner's and the library's implementation for host programs (tools/model
   host.c, plan.c), built once and linked with each exported model's own translation unit:
   the model tables change, this does not. Host threads (pg_pthread) are the port. */
#define SPLITCORE_IMPLEMENTATION
#define MODEL_RUNNER_IMPLEMENTATION
#include "tools/model/runner.h"
#define PG_PTHREAD_IMPLEMENTATION
#include "ports/pg_pthread.h"
