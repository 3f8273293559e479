"""``placement.instances.kubernetes``: the import path the README used keeps working, as the
Kubernetes room's own functions."""

import placement.instances.kubernetes as old
import placement.integrations.kubernetes as room


def test_the_old_import_path_gives_the_room_s_functions():
    assert set(old.__all__) == set(room.__all__)
    for name in room.__all__:
        assert getattr(old, name) is getattr(room, name), name
