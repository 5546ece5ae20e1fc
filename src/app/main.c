/* main.c — rtviewer's entry point: parse the command line, then run the
 * per-frame pipeline (load -> animate -> build -> trace -> display) in the
 * window or headless. The only place that exits. */
#include <stdio.h>
#include <stdlib.h>

#include "app/bench.h"
#include "gpu/gpu.h"
#include "app/headless.h"
#include "display/viewer.h"

static int gpu_info(void)
{
    RtGpu *gpu = NULL;
    RtError err = {0};
    if (rt_gpu_create(0, &gpu, &err) != RT_OK) {
        printf("%s\n", err.msg);
        return 1;
    }
    const RtGpuInfo *i = rt_gpu_info(gpu);
    printf("%s, sm_%d%d, %d SMs, %.1f GiB, driver %d, runtime %d\n", i->name, i->sm_major,
           i->sm_minor, i->sm_count, i->mem_total / 1073741824.0, i->driver_version, i->runtime_version);
    rt_gpu_destroy(gpu);
    return 0;
}

int main(int argc, char **argv)
{
    RtOptions opt;
    RtError err = {0};
    rt_options_default(&opt);
    if (rt_options_parse(argc, argv, &opt, &err) != RT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    if (opt.help) {
        rt_options_usage(stdout);
        return 0;
    }
    rt_log_set_level(opt.log_level);
    if (opt.gpu_info) return gpu_info();
    if (opt.bench) {
        if (rt_bench_run(&opt, &err) != RT_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        return 0;
    }
    if (!opt.headless) {
        if (rt_viewer_run(&opt, &err) != RT_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        return 0;
    }
    if (rt_headless_run(&opt, &err) != RT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    return 0;
}
