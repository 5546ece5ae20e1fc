/* test_trace_emu.c — the GPU tracer's traversal loop (cuda/trace/trace_ray.cuh),
 * run on the CPU by the host emulation (cuda/trace/trace_emu.cu), against the CPU
 * brute force: the hit tests of trace_check.h, every variant, packets with
 * 32 emulated lanes voting in lock step. No GPU needed, so CI checks the
 * traversal logic of every variant on every run; test_gpu_trace.c runs the
 * same tests on the GPU. */
#include "trace_check.h"

/* state = NULL: the fixtures cast in the emulation */
static void emu_ready(void)
{
    if (!RT_HAVE_CUDA) {
        print_message("skip: built without CUDA: the emulation is compiled by nvcc\n");
        skip();
    }
}

#define EMU_CHECK(name)                        \
    static void emu_trace_##name(void **state) \
    {                                          \
        emu_ready();                           \
        check_##name(state);                   \
    }
EMU_CHECK(one_triangle_and_empty_batches)
EMU_CHECK(deepest_tree_keeps_every_entry)
EMU_CHECK(parallel_rays_never_hit_at_infinity)
EMU_CHECK(soup_hits_match_brute_force)
EMU_CHECK(grid_hits_match_brute_force)
EMU_CHECK(axis_rays_on_split_planes)
EMU_CHECK(default_scene_hits_match_brute_force)
EMU_CHECK(cornell_hits_match_brute_force)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(emu_trace_one_triangle_and_empty_batches),
        cmocka_unit_test(emu_trace_deepest_tree_keeps_every_entry),
        cmocka_unit_test(emu_trace_parallel_rays_never_hit_at_infinity),
        cmocka_unit_test(emu_trace_soup_hits_match_brute_force),
        cmocka_unit_test(emu_trace_grid_hits_match_brute_force),
        cmocka_unit_test(emu_trace_axis_rays_on_split_planes),
        cmocka_unit_test(emu_trace_default_scene_hits_match_brute_force),
        cmocka_unit_test(emu_trace_cornell_hits_match_brute_force),
    };
    return cmocka_run_group_tests_name("trace_emu", tests, NULL, NULL);
}
