/* The probe of a device's contraction (device.c, at device open): a * b + c
 * as the kernels write it, unfused by the dialect's rule (FP_CONTRACT OFF,
 * NVRTC's --fmad=false), which NVIDIA's OpenCL may ignore. With a = b =
 * 1 + 2^-12 and c = -(1 + 2^-11), a * b is 1 + 2^-11 + 2^-24 exactly:
 * rounded to float it is 1 + 2^-11 and the sum 0; fused, the sum is 2^-24.
 * In double, 1 + 2^-27 and -(1 + 2^-26) give 0 or 2^-54. The values come as
 * arguments, so no compiler can fold the sum away. PTREG_PROBE_FUSED (the
 * tests' PTREG_DEVICE_PROBE_FUSED=1) writes the fused form, so that the
 * tests see a contracting device found. */

KERNEL ptreg_probe_fma(float a, float b, float c, GLOBAL float *out)
{
    if (GLOBAL_ID_X == 0) {
#if PTREG_PROBE_FUSED
        out[0] = FMAF(a, b, c);
#else
        out[0] = a * b + c;
#endif
    }
}

#if PTREG_FP64
KERNEL ptreg_probe_fma64(double a, double b, double c, GLOBAL double *out)
{
    if (GLOBAL_ID_X == 0) {
#if PTREG_PROBE_FUSED
        out[0] = fma(a, b, c);
#else
        out[0] = a * b + c;
#endif
    }
}
#endif
