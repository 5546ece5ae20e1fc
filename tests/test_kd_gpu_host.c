/* test_kd_gpu_host.c — the GPU kd builder's host-side rules that need no
 * GPU (kd_gpu_params.c): how its buffers' capacities follow the builds'
 * needs. The GPU side (a build in a buffer fitted this way, its tree valid)
 * is tests/test_gpu_kd.c's gpu_kd_buffers_fit_the_tree. */
#include "test_util.h"
#include "kd/kd_gpu.h"

/* A need with its slack: a quarter more and a constant floor, never past the
 * layout's largest index. */
static void kd_caps_slack(void **state)
{
    (void)state;
    assert_int_equal(rt_kd_gpu_cap_clamp(12345), 12345);
    assert_int_equal(rt_kd_gpu_cap_clamp((uint64_t)RT_KD_MAX_INDEX + 1), RT_KD_MAX_INDEX);
    assert_int_equal(rt_kd_gpu_cap_slack(0), 4096);
    assert_int_equal(rt_kd_gpu_cap_slack(1000000), 1250000 + 4096);
    assert_true(rt_kd_gpu_cap_slack(40000000) >= 50000000);
    assert_int_equal(rt_kd_gpu_cap_slack(RT_KD_MAX_INDEX), RT_KD_MAX_INDEX);
    assert_int_equal(rt_kd_gpu_cap_slack(~0ull >> 2), RT_KD_MAX_INDEX);
}

/* After an overflow the capacity covers the demand the counters saw, with
 * slack, and grows by at least half: a buffer far too small reaches the
 * overflowing level's size in one rebuild, and repeated overflows cannot
 * stall. */
static void kd_caps_grow(void **state)
{
    (void)state;
    const uint32_t caps[] = {0, 1, 4096, 100000, 3000000, RT_KD_MAX_INDEX / 2, RT_KD_MAX_INDEX};
    const uint64_t needs[] = {0, 5000, 150000, 36000000, 2000000000ull};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++)
        for (size_t j = 0; j < sizeof needs / sizeof needs[0]; j++) {
            const uint32_t c = caps[i], g = rt_kd_gpu_cap_grow(c, needs[j]);
            assert_true(g >= rt_kd_gpu_cap_slack(needs[j]));
            assert_true(g <= RT_KD_MAX_INDEX);
            if (c < RT_KD_MAX_INDEX / 2) assert_true((uint64_t)g >= 3 * (uint64_t)c / 2);
            if (c < RT_KD_MAX_INDEX) assert_true(g > c);
        }
    /* a tree 20x the estimate: one step to its size */
    assert_true(rt_kd_gpu_cap_grow(100000, 2000000) >= 2000000);
}

/* After a finished build: a capacity far above the need comes down to the
 * need with slack; one within 1.2x of that stays; one below it stays too
 * (only an overflow grows a buffer). */
static void kd_caps_fit(void **state)
{
    (void)state;
    const uint64_t need = 1000000;
    const uint32_t slack = rt_kd_gpu_cap_slack(need);
    assert_int_equal(rt_kd_gpu_cap_fit(4 * slack, need), slack);
    assert_int_equal(rt_kd_gpu_cap_fit(slack * 6 / 5 + 1000, need), slack);
    assert_int_equal(rt_kd_gpu_cap_fit(slack * 6 / 5, need), slack * 6 / 5);
    assert_int_equal(rt_kd_gpu_cap_fit(slack, need), slack);
    assert_int_equal(rt_kd_gpu_cap_fit(slack / 2, need), slack / 2);
    assert_int_equal(rt_kd_gpu_cap_fit(RT_KD_MAX_INDEX, 0), 4096);
}

/* A moving scene: the need wanders within +-10 % of where the buffer was
 * fitted; the capacity neither overflows nor moves, so nothing is
 * reallocated frame after frame. */
static void kd_caps_still_while_a_scene_moves(void **state)
{
    (void)state;
    const uint64_t base = 30000000;
    uint32_t cap = rt_kd_gpu_cap_fit(90000000, base); /* the estimate, fitted after the first build */
    assert_int_equal(cap, rt_kd_gpu_cap_slack(base));
    const uint32_t fitted = cap;
    uint32_t x = 12345;
    for (int frame = 0; frame < 1000; frame++) {
        x = x * 1664525u + 1013904223u;
        const uint64_t need = base - base / 10 + (uint64_t)(x >> 8) % (base / 5 + 1);
        assert_true(need <= cap); /* no overflow */
        cap = rt_kd_gpu_cap_fit(cap, need);
        assert_int_equal(cap, fitted);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kd_caps_slack),
        cmocka_unit_test(kd_caps_grow),
        cmocka_unit_test(kd_caps_fit),
        cmocka_unit_test(kd_caps_still_while_a_scene_moves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
