import pytest

import placement
from placement.instances import bundled_names, load_bundled
from placement.instances.generate import from_source, generate


def test_the_default_instance_is_bundled():
    assert "demo" in bundled_names()
    assert load_bundled().name == "demo"


@pytest.mark.parametrize("name", bundled_names())
def test_bundled_instances_are_reproduced_bit_for_bit_from_their_source(name):
    inst = load_bundled(name)
    assert inst.source.startswith("placement generate ")
    assert from_source(inst.source) == inst
    assert placement.instance_to_dict(from_source(inst.source)) == placement.instance_to_dict(inst)


def test_generator_is_seeded():
    assert generate(seed=3) == generate(seed=3)
    assert generate(seed=3) != generate(seed=4)


def test_generator_refuses_bad_parameters():
    with pytest.raises(ValueError, match="regime must be one of"):
        generate(regime="stormy")
    with pytest.raises(ValueError, match="racks must be an integer >= 1"):
        generate(racks=0)


def test_single_gpu_fraction_slices_servers_and_leaves_the_rest_of_the_draws_alone():
    kw = dict(
        racks=4,
        servers_per_rack=25,
        servers_from="alibaba-v2023",
        regime="heavy-tail",
        used_fraction=0.3,
        jobs=30,
        seed=4,
    )
    base = generate(**kw)
    sliced = generate(**kw, single_gpu_fraction=0.65)
    assert generate(**kw, single_gpu_fraction=0.0) == base
    ones = [s for s in sliced.servers if s.gpus == 1]
    assert 45 <= len(ones) <= 85  # about 65 of 100 (plus the shapes' own 1-GPU servers)
    for b, s in zip(base.servers, sliced.servers):
        # same shape, type and slowdown draw; a slice gets its share of CPU and memory
        assert (s.gpu_type, s.slowdown) == (b.gpu_type, b.slowdown)
        if s.gpus != b.gpus:
            assert s.gpus == 1 and s.cpus == b.cpus / b.gpus and s.memory_gb == b.memory_gb / b.gpus
            assert s.used_gpus == min(b.used_gpus, 1)
    assert "--single-gpu-fraction 0.65" in sliced.source
    assert from_source(sliced.source) == sliced
    with pytest.raises(ValueError, match=r"single_gpu_fraction must be in \[0, 1\]"):
        generate(single_gpu_fraction=1.5)
