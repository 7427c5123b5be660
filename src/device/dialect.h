/* The kernel dialect: every kernel is written once, in the common subset of
 * OpenCL C 1.2 and CUDA C++ (NVRTC), and this header, prepended to every
 * program, maps the differences (docs/DESIGN.md, "How a kernel runs on
 * every device"). It is kernel source, embedded in the library, never
 * compiled by the host's C compiler.
 *
 * Rules the macros exist for:
 * - address spaces: GLOBAL and LOCAL qualify pointers (__global/__local or
 *   nothing); SHARED declares local arrays (__local or __shared__), with
 *   compile-time sizes, at a kernel's outermost scope;
 * - one macro per id; every thread bounds-checks its data and reaches every
 *   BARRIER (guard the data, never the barrier);
 * - no warp-synchronous code, no atomics on floats: reductions write
 *   partials that a later launch sums in a fixed order, or (CUDA only) a
 *   global integer atomic on a volatile counter counts the groups that
 *   wrote their partials (after GLOBAL_FENCE) so that the last one, after
 *   GLOBAL_ACQUIRE, sums them in the same fixed order, reading them with
 *   LOAD_COHERENT_F64. Not on OpenCL: 1.2's mem_fence orders a work-item's
 *   own accesses only, not other groups' view of them (a GPU whose caches
 *   are not coherent across groups serves stale partials), so there the
 *   sum is a second launch (reg/lddmm/lddmm.cl's LDDMM_FUSED);
 * - fixed-width types below, no vector types or 3-vectors in buffers;
 *   binary16 only as storage (half_load, round_through_half);
 * - no contraction into FMA (FP_CONTRACT OFF here, --fmad=false on NVRTC;
 *   a kernel fuses where it writes FMAF),
 *   so distances are the CPU's bits. */

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define PTREG_DIALECT_CUDA 1

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;

#define KERNEL extern "C" __global__ void
#define FN static __device__ __forceinline__
#define GLOBAL
#define LOCAL
#define SHARED __shared__
#define RESTRICT __restrict__

#define LOCAL_ID_X ((u32)threadIdx.x)
#define GROUP_ID_X ((u32)blockIdx.x)
#define GROUP_SIZE_X ((u32)blockDim.x)
#define GROUPS_X ((u32)gridDim.x)
#define GLOBAL_ID_X ((u32)(blockIdx.x * blockDim.x + threadIdx.x))
#define BARRIER() __syncthreads()

#define AS_FLOAT(u) __uint_as_float(u)
#define AS_UINT(f) __float_as_uint(f)
#define SQRTF(x) sqrtf(x)
#define SQRT(x) sqrt(x)
#define EXPF(x) expf(x)
#define EXP(x) exp(x)
#define FAST_EXPF(x) __expf(x) /* ex2.approx.ftz of x log2(e) */
#define FMAF(a, b, c) fmaf((a), (b), (c))
#define CEIL(x) ceil(x)
#define LOCAL_ATOMIC_INC(p) atomicAdd((p), 1u)
#define GLOBAL_ATOMIC_INC(p) atomicAdd((u32 *)(p), 1u) /* p may be volatile */
#define GLOBAL_FENCE() __threadfence()                 /* device scope: release before the count */
#define GLOBAL_ACQUIRE() __threadfence()               /* device scope: acquire after it */
#define LOAD_COHERENT_F64(p) __ldcg(p)                 /* past L1: another group's write of this launch */

/* binary16 storage: the hardware's conversions (round to nearest even) */
FN float half_load(GLOBAL const u16 *p, u32 i)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p[i]));
    return f;
}
FN float round_through_half(float x)
{
    u16 h;
    float f;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

#else /* OpenCL C 1.2 */
#define PTREG_DIALECT_OPENCL 1
#pragma OPENCL FP_CONTRACT OFF
#if PTREG_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

typedef uchar u8;
typedef ushort u16;
typedef uint u32;
typedef int i32;
typedef ulong u64;
typedef long i64;

#define KERNEL __kernel void
#define FN static inline
#define GLOBAL __global
#define LOCAL __local
#define SHARED __local
#define RESTRICT restrict

#define GROUP_SIZE_X ((u32)get_local_size(0))
#if PTREG_CUDA_STANDIN
/* The CUDA stand-in's OpenCL build of a CUDA program (tests/cuda_standin):
 * its prelude renumbers a group's threads (to run them between barriers
 * in another order), numbers the groups (its incoherent mode runs them
 * one launch each) and emulates CUDA's fast exp. */
#define GROUP_ID_X standin_group_id_x()
#define GROUPS_X standin_groups_x()
#define LOCAL_ID_X standin_local_id_x()
#define GLOBAL_ID_X (GROUP_ID_X * GROUP_SIZE_X + LOCAL_ID_X)
#else
#define GROUP_ID_X ((u32)get_group_id(0))
#define GROUPS_X ((u32)get_num_groups(0))
#define LOCAL_ID_X ((u32)get_local_id(0))
#define GLOBAL_ID_X ((u32)get_global_id(0))
#endif
#define BARRIER() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)

#define AS_FLOAT(u) as_float(u)
#define AS_UINT(f) as_uint(f)
#define SQRTF(x) sqrt(x)
#define SQRT(x) sqrt(x)
#define EXPF(x) exp(x)
#define EXP(x) exp(x)
#if PTREG_CUDA_STANDIN
#define FAST_EXPF(x) standin_expf_fast(x)
#else
#define FAST_EXPF(x) native_exp(x)
#endif
#define FMAF(a, b, c) fma((a), (b), (c))
#define CEIL(x) ceil(x)
#define LOCAL_ATOMIC_INC(p) atomic_inc(p)
#define GLOBAL_ATOMIC_INC(p) atomic_inc(p)
/* Work-item scope only in OpenCL 1.2 (see the rules above). In the CUDA
 * stand-in's build of a CUDA program, its incoherent mode takes the count
 * that follows as CUDA's device-scope release (tests/cuda_standin). */
#define GLOBAL_FENCE() mem_fence(CLK_GLOBAL_MEM_FENCE)
#define GLOBAL_ACQUIRE() mem_fence(CLK_GLOBAL_MEM_FENCE)
#define LOAD_COHERENT_F64(p) (*(volatile GLOBAL const double *)(p))

/* binary16 storage (no cl_khr_fp16 needed: half only behind pointers) */
FN float half_load(GLOBAL const u16 *p, u32 i) { return vload_half(i, (GLOBAL const half *)p); }
FN float round_through_half(float x)
{
    u16 h;
    vstore_half_rte(x, 0, (half *)&h);
    return vload_half(0, (const half *)&h);
}
#endif

#define INF_F AS_FLOAT(0x7f800000u)
#define NO_NEIGHBOR 0xffffffffu
#define MIN_U32(a, b) ((a) < (b) ? (a) : (b))
#define MAX_U32(a, b) ((a) > (b) ? (a) : (b))
