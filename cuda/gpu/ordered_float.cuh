/* ordered_float.cuh — floats as order-preserving ints, for atomicMin /
 * atomicMax on boxes (the GPU builders' scene and node boxes): exact, so a
 * reduction's order does not matter and a box equals the CPU's union of
 * its members' boxes. Negative floats have their magnitude bits flipped,
 * so int order is float order for every non-NaN value (-0 sorts just
 * below +0). Host and device. */
#ifndef RT_ORDERED_FLOAT_CUH
#define RT_ORDERED_FLOAT_CUH

#include <string.h>

__host__ __device__ __forceinline__ int rt_f2ord(float f)
{
#ifdef __CUDA_ARCH__
    const int i = __float_as_int(f);
#else
    int i;
    memcpy(&i, &f, sizeof i);
#endif
    return i >= 0 ? i : i ^ 0x7fffffff;
}

__host__ __device__ __forceinline__ float rt_ord2f(int i)
{
    i = i >= 0 ? i : i ^ 0x7fffffff;
#ifdef __CUDA_ARCH__
    return __int_as_float(i);
#else
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
#endif
}

#endif
