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
