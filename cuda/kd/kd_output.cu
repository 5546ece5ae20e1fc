/* kd_output.cu — the built tree leaves the builder as the shared layout of
 * kd_layout.h: nodes (sibling-adjacent children), leaves, leaf boxes and
 * tri_index, each filled by bounded atomic allocation, hence dense (no
 * compaction pass: the allocation counters are the array sizes). This file
 * moves trees and triangles between host and device for the tests, the
 * oracle comparisons and tools. */
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_check.h"
#include "kd/kd_cpu.h"
#include "kd/kd_gpu.h"

static RtStatus kd_copy_down(void **dst, const void *src, size_t bytes, RtError *err)
{
    *dst = malloc(bytes ? bytes : 1);
    if (!*dst) return rt_fail(err, RT_ERR_OOM, "KD: out of host memory downloading the tree");
    if (bytes) CUDA_CHECK(err, cudaMemcpy(*dst, src, bytes, cudaMemcpyDeviceToHost));
    return RT_OK;
}

extern "C" RtStatus rt_kd_gpu_download(const RtKdTree *d_tree, RtKdTree *h, RtError *err)
{
    memset(h, 0, sizeof *h);
    RtStatus st;
    if ((st = kd_copy_down((void **)&h->nodes, d_tree->nodes, d_tree->node_count * sizeof(RtKdNode), err)) != RT_OK ||
        (st = kd_copy_down((void **)&h->leaves, d_tree->leaves, d_tree->leaf_count * sizeof(RtKdLeaf), err)) != RT_OK ||
        (st = kd_copy_down((void **)&h->leaf_boxes, d_tree->leaf_boxes, d_tree->leaf_count * sizeof(RtAabb), err)) != RT_OK ||
        (st = kd_copy_down((void **)&h->tri_index, d_tree->tri_index, d_tree->index_count * sizeof(uint32_t), err)) != RT_OK) {
        rt_kd_tree_free(h);
        return st;
    }
    h->node_count = h->node_cap = d_tree->node_count;
    h->leaf_count = h->leaf_cap = d_tree->leaf_count;
    h->index_count = h->index_cap = d_tree->index_count;
    h->bounds = d_tree->bounds;
    h->d_bounds = NULL;
    return RT_OK;
}

extern "C" RtStatus rt_kd_gpu_upload_f4(const RtFloat4 *host, size_t n, RtFloat4 **d_out, RtError *err)
{
    *d_out = NULL;
    CUDA_CHECK(err, cudaMalloc((void **)d_out, (n ? n : 1) * sizeof(RtFloat4)));
    if (n) CUDA_CHECK(err, cudaMemcpy(*d_out, host, n * sizeof(RtFloat4), cudaMemcpyHostToDevice));
    return RT_OK;
}

extern "C" void rt_kd_gpu_free(void *d_ptr)
{
    if (d_ptr) cudaFree(d_ptr);
}
