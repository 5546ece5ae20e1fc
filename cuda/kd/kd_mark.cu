/* kd_mark.cu — the empty-child marks of a GPU-built kd-tree
 * (kd_layout.h's kd_empty_marks): the last launch of both GPU builders, the
 * Chang pipeline (kd_gpu.cu) and the exact builder (kd_exact.cu), in a
 * module of its own that both use. */
#include "kd/kd_gpu_internal.cuh"

/* A thread per node (grid-stride). A node's marks change only its own bits
 * word, and what a thread reads of a child (its leaf tag and count) is the
 * same before and after that child's own marks, so the order does not matter. */
__global__ void kd_mark_empty_kernel(RtKdNode *nodes, const uint32_t *d_count, uint32_t cap)
{
    const uint32_t count = d_count ? min(*d_count, cap) : cap;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        const RtKdNode m = kd_with_marks(nodes, count, i);
        if (m.bits != nodes[i].bits) nodes[i].bits = m.bits;
    }
}

RtStatus kd_mark_empty_queue(RtLaunchLog *log, RtKdNode *nodes, const uint32_t *d_count, uint32_t cap, RtError *err)
{
    const uint32_t block = 256, blocks = cap / block + 1;
    return rt_launch(log, "kd_mark_empty", dim3(blocks < 2048 ? blocks : 2048), dim3(block), 0, kd_mark_empty_kernel,
                     err, nodes, d_count, cap);
}
