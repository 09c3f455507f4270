/* math.h — what dtensor_ops.h's kernels call, for the bare-metal RISC-V firmware of tools/model:
   tests/target/riscv_smp's C library has no libm; these come from Debian's picolibc (its
   libc.a for the firmware's arch, linked after the firmware's own objects). */
#ifndef MODEL_FW_MATH_H
#define MODEL_FW_MATH_H
#define INFINITY (__builtin_inff())
#define NAN      (__builtin_nanf(""))
float expf(float x);
float erff(float x);
float tanhf(float x);
float logf(float x);
float sqrtf(float x);
#endif
