/* Slot IDs: "<uuid>::<n>" round-trips; IDs of other forms, out-of-range or padded numbers, and
 * overlong UUIDs are not slots; GPU lists compare by UUID and health, in any order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nodeagent/deviceplugin/slots.h"

static void ids_round_trip(void **state)
{
    (void)state;
    char id[FG_DP_SLOT_ID_MAX], uuid[FG_DP_UUID_MAX];
    fg_dp_slot_id("GPU-5f2c1d9e-0000-4000-8000-000000000001", 47, id);
    assert_string_equal(id, "GPU-5f2c1d9e-0000-4000-8000-000000000001::47");
    assert_true(fg_dp_slot_gpu(id, 48, uuid));
    assert_string_equal(uuid, "GPU-5f2c1d9e-0000-4000-8000-000000000001");
    assert_false(fg_dp_slot_gpu(id, 47, uuid)); /* beyond the slots advertised */
    static const char *const bad[] = { "GPU-1", "GPU-1::", "::3", "GPU-1::x", "GPU-1::03", "GPU-1::-1", "GPU-1::99999", "", NULL };
    for (int i = 0; bad[i]; i++)
        assert_false(fg_dp_slot_gpu(bad[i], 48, uuid));
    assert_false(fg_dp_slot_gpu(NULL, 48, uuid));
    char longid[300];
    memset(longid, 'a', 200);
    strcpy(longid + 200, "::1");
    assert_false(fg_dp_slot_gpu(longid, 48, uuid));
}

static void lists_compare(void **state)
{
    (void)state;
    struct fg_dp_gpu a[] = { { "GPU-1", 0, true }, { "GPU-2", 1, true } };
    struct fg_dp_gpu b[] = { { "GPU-2", 1, true }, { "GPU-1", 0, true } };
    assert_true(fg_dp_gpus_equal(a, 2, b, 2));
    b[0].healthy = false;
    assert_false(fg_dp_gpus_equal(a, 2, b, 2));
    assert_false(fg_dp_gpus_equal(a, 2, b, 1));
    assert_non_null(fg_dp_gpus_find(a, 2, "GPU-2"));
    assert_null(fg_dp_gpus_find(a, 2, "GPU-3"));
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(ids_round_trip), cmocka_unit_test(lists_compare) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
