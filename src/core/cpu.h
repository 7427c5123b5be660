/* Run-time choice of the instruction set for the kernels built per ISA
 * (cmake/isa.cmake), and the tables through which a module calls the copy
 * of its kernels that this CPU runs. Internal to the library and its
 * tests. */
#ifndef PTREG_CORE_CPU_H
#define PTREG_CORE_CPU_H

typedef enum isa_level { PTREG_ISA_GENERIC = 0, PTREG_ISA_AVX2 = 1, PTREG_ISA_AVX512 = 2 } isa_level;

/* The best ISA this CPU runs, capped by env PTREG_ISA (generic|avx2|avx512,
 * read on first use) or by cpu_set_isa. Cheap: call it per use. */
isa_level cpu_isa_level(void);
/* The best ISA the CPU supports, ignoring caps. */
isa_level cpu_best_isa(void);
/* Caps the ISA (tests run every path); -1 removes the cap. */
void cpu_set_isa(int isa);
const char *isa_level_name(isa_level isa);

/* A module's CPU kernels, one table per ISA its *_isa.c files were built
 * for, FILL(sfx) giving the table of the copies with suffix sfx. NAME_for
 * (isa) is one ISA's (the generic one where this build has no copy; for
 * work that recorded its ISA when it was planned); NAME() is that of
 * cpu_isa_level(), read at each use so that cpu_set_isa takes
 * effect. Each module defines its tables in one of its C files. */
#define PTREG_DECLARE_ISA_TABLE(type, name) \
    const type *name##_for(isa_level isa);  \
    const type *name(void);
#if defined(__x86_64__)
#define PTREG_ISA_TABLE(type, name, FILL)                                                                         \
    static const type name##_generic = FILL(_generic), name##_avx2 = FILL(_avx2), name##_avx512 = FILL(_avx512);  \
    const type *name##_for(isa_level isa)                                                                         \
    {                                                                                                             \
        return isa == PTREG_ISA_AVX512 ? &name##_avx512 : isa == PTREG_ISA_AVX2 ? &name##_avx2 : &name##_generic; \
    }                                                                                                             \
    const type *name(void) { return name##_for(cpu_isa_level()); }
#else
#define PTREG_ISA_TABLE(type, name, FILL)              \
    static const type name##_generic = FILL(_generic); \
    const type *name##_for(isa_level isa)              \
    {                                                  \
        (void)isa;                                     \
        return &name##_generic;                        \
    }                                                  \
    const type *name(void) { return &name##_generic; }
#endif

#endif
