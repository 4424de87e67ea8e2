"""Pool arithmetic: claims, submission refusals, device choice and the job's variables."""

from __future__ import annotations

import pytest

from qex.core.config import Pool
from qex.core.pools import (
    EffectiveClaim,
    PoolUsage,
    assign,
    check_claim,
    effective_claims,
    env_word,
    free_devices,
    job_env_for_assignment,
    pool_usage,
)
from qex.core.records import Assignment, PoolClaim

GB = 1024**3
GPU = Pool(
    "gpu", devices=(24 * GB, 24 * GB, 16 * GB, 24 * GB), size="vram", env="CUDA_VISIBLE_DEVICES"
)
NET = Pool("net", count=4)
POOLS = (GPU, NET)


# --- effective claims -------------------------------------------------------------------------

def test_a_lock_is_a_one_unit_claim_and_an_undeclared_name_has_no_pool() -> None:
    claims = effective_claims(["net", "target"], {}, POOLS)
    assert claims["net"] == EffectiveClaim("net", 1, None, NET)
    assert claims["target"] == EffectiveClaim("target", 1, None, None)
    assert claims["target"].is_implicit_lock and not claims["net"].is_implicit_lock


def test_a_lock_and_a_claim_on_one_name_merge_into_the_larger_count() -> None:
    claims = effective_claims(["net"], {"net": PoolClaim(3)}, POOLS)
    assert claims["net"].count == 3
    claims = effective_claims(["gpu"], {"gpu": PoolClaim(0, 8 * GB)}, POOLS)
    assert (claims["gpu"].count, claims["gpu"].size) == (1, 8 * GB)


def test_an_empty_claim_asks_for_nothing_and_a_zero_size_means_the_whole_device() -> None:
    assert effective_claims([], {"x": PoolClaim(0)}, POOLS) == {}
    assert effective_claims([], {"gpu": PoolClaim(1, 0)}, POOLS)["gpu"].size is None


def test_effective_claims_come_back_in_name_order() -> None:
    assert list(effective_claims(["b", "a"], {"net": PoolClaim(1)}, POOLS)) == ["a", "b", "net"]


# --- submission refusals ----------------------------------------------------------------------

def test_claims_that_fit_the_configuration_pass() -> None:
    assert check_claim({"gpu": PoolClaim(2, 20 * GB), "net": PoolClaim(4)}, ["db"], POOLS) is None
    assert check_claim({}, ["gpu", "net", "anything"], POOLS) is None


@pytest.mark.parametrize(
    ("claims", "locks", "expected"),
    [
        ({"gpu": PoolClaim(5)}, [], "holds 4 in all"),
        ({"net": PoolClaim(5)}, [], "claim 4 or fewer"),
        ({"gpu": PoolClaim(1, 40 * GB)}, [], "never adds the vram"),
        ({"net": PoolClaim(1, GB)}, [], "has no devices"),
        ({"gpu": PoolClaim(0, 8 * GB)}, [], "add `--gpu 1`"),
        ({"db": PoolClaim(2)}, [], "does not declare as a pool"),
        ({"db": PoolClaim(1, GB)}, [], "does not declare as a pool"),
        ({"net": PoolClaim(-1)}, [], "1 unit or more"),
    ],
)
def test_impossible_claims_are_refused_with_a_remedy(
    claims: dict[str, PoolClaim], locks: list[str], expected: str
) -> None:
    message = check_claim(claims, locks, POOLS)
    assert message is not None
    assert expected in message
    assert "never start" in message or "1 unit or more" in message


def test_a_gpu_claim_without_a_gpu_pool_shows_how_to_declare_one() -> None:
    message = check_claim({"gpu": PoolClaim(1)}, [], (NET,))
    assert message is not None
    assert "declares no `gpu` pool" in message and "[[pool]]" in message
    assert check_claim({}, ["gpu"], (NET,)) is not None


def test_a_size_on_another_indexed_pool_without_a_count_names_that_pool() -> None:
    fpga = Pool("fpga", devices=(GB,), size="slots")
    message = check_claim({"fpga": PoolClaim(0, GB // 2)}, [], (fpga,))
    assert message is not None and "--claim fpga=1:512MB" in message


def test_the_default_vram_applies_to_a_gpu_claim_that_gives_no_size() -> None:
    assert check_claim({"gpu": PoolClaim(1)}, [], POOLS, defaults_vram=30 * GB) is not None
    assert check_claim({"gpu": PoolClaim(1)}, [], POOLS, defaults_vram=20 * GB) is None
    assert check_claim({"gpu": PoolClaim(1, 8 * GB)}, [], POOLS, defaults_vram=30 * GB) is None


def test_names_in_refusals_are_shown_escaped() -> None:
    message = check_claim({"a\x1bb": PoolClaim(2)}, [], POOLS)
    assert message is not None and "\x1b" not in message and "a\\x1bb" in message


# --- device choice ----------------------------------------------------------------------------

def test_devices_with_the_most_free_capacity_come_first_then_the_lowest_index() -> None:
    used = PoolUsage(units=1, per_device={0: 10 * GB})
    assert free_devices(GPU, 4 * GB, used) == [1, 3, 2, 0]
    got = assign(PoolClaim(2, 4 * GB), GPU, used)
    assert got == Assignment(units=2, devices=[1, 3], size=4 * GB)


def test_a_device_another_user_holds_is_not_offered_at_all() -> None:
    got = assign(PoolClaim(1, GB), GPU, PoolUsage(), peer_devices=frozenset({0, 1}))
    assert got is not None and got.devices == [3]


def test_a_claim_without_a_size_needs_a_device_with_nothing_on_it() -> None:
    used = PoolUsage(units=2, per_device={0: GB, 1: GB, 3: GB})
    assert assign(PoolClaim(1), GPU, used) == Assignment(units=1, devices=[2], size=None)
    assert assign(PoolClaim(2), GPU, used) is None


def test_vram_is_never_added_across_devices() -> None:
    used = PoolUsage(units=3, per_device={0: 20 * GB, 1: 20 * GB, 3: 20 * GB})
    assert assign(PoolClaim(1, 5 * GB), GPU, used) == Assignment(1, [2], 5 * GB)
    assert assign(PoolClaim(1, 17 * GB), GPU, used) is None


def test_a_counted_pool_counts_our_units_and_the_peers_units() -> None:
    assert assign(PoolClaim(2), NET, PoolUsage(units=1), peer_units=1) == Assignment(units=2)
    assert assign(PoolClaim(2), NET, PoolUsage(units=2), peer_units=1) is None


def test_usage_sums_assignments_and_counts_a_whole_device_as_its_capacity() -> None:
    usage = pool_usage(
        [
            {"gpu": Assignment(1, [2], None)},
            {"gpu": Assignment(2, [0, 1], 4 * GB), "net": Assignment(1)},
            {"net": Assignment(2)},
        ],
        POOLS,
    )
    assert usage["gpu"].units == 3
    assert usage["gpu"].per_device == {2: 16 * GB, 0: 4 * GB, 1: 4 * GB}
    assert usage["net"].units == 3


# --- the job's variables ----------------------------------------------------------------------

def test_an_indexed_pool_tells_the_job_its_devices_and_size() -> None:
    env = job_env_for_assignment(GPU, Assignment(2, [3, 1], 20 * GB))
    assert env == {
        "QEX_GPU_DEVICES": "1,3",
        "CUDA_VISIBLE_DEVICES": "1,3",
        "QEX_GPU_VRAM": str(20 * GB),
    }


def test_a_whole_device_reports_the_smallest_capacity_it_got() -> None:
    env = job_env_for_assignment(GPU, Assignment(2, [1, 2], None))
    assert env["QEX_GPU_VRAM"] == str(16 * GB)


def test_a_counted_pool_and_a_pool_without_names_for_env_or_size() -> None:
    counted = Pool("net-io", count=4)
    assert job_env_for_assignment(counted, Assignment(2)) == {"QEX_CLAIM_NET_IO": "2"}
    bare = Pool("tpu", devices=(GB, GB))
    assert job_env_for_assignment(bare, Assignment(1, [0], None)) == {
        "QEX_TPU_DEVICES": "0",
        "QEX_TPU_SIZE": str(GB),
    }
    assert env_word("a.b-c") == "A_B_C"
