/* The prologue of every *_isa.c file: cmake/isa.cmake compiles each once
 * per ISA with PTREG_ISA_SUFFIX set to _generic, _avx2 or _avx512, and
 * ISA_FN(name) gives a function that copy's name (name_avx2, ...), the one
 * its module's kernel table (PTREG_ISA_TABLE, core/cpu.h) points at. */
#ifndef PTREG_CORE_CPU_ISA_H
#define PTREG_CORE_CPU_ISA_H

#ifndef PTREG_ISA_SUFFIX
#error "PTREG_ISA_SUFFIX is not defined: *_isa.c files are built by ptreg_add_isa_kernels (cmake/isa.cmake)"
#endif

#define PTREG_ISA_CAT_(a, b) a##b
#define PTREG_ISA_CAT(a, b) PTREG_ISA_CAT_(a, b)
#define ISA_FN(name) PTREG_ISA_CAT(name, PTREG_ISA_SUFFIX)

#endif
